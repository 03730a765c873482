"""`--set` pairs (runs.spec): what an MCP call types and what the CLI's `K=V` text says are the same
values, and a launch record's `K=V` texts (`set_texts`) read back as the values that ran."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optlog.errors import BadInput
from optlog.runs.spec import record_sets, set_texts, typed_sets

line = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=20)
scalar = st.one_of(st.integers(-10**18, 10**18), st.floats(allow_nan=False, allow_infinity=False), line)
value = st.one_of(scalar, st.booleans(), st.lists(st.one_of(scalar, st.booleans()), max_size=4))
key = st.from_regex(r"\A[a-z_][a-z0-9_.\-]{0,10}\Z")


@given(st.lists(st.tuples(key, value), max_size=4))
def test_a_recorded_set_reads_back_as_the_values_that_ran(pairs) -> None:
    pairs = [(k, v) for k, v in pairs if k not in ("repeat", "name", "out", "run_id", "launch_id", "server_url")]
    try:
        want = typed_sets(pairs)
    except BadInput:
        return
    assert typed_sets(record_sets(set_texts(pairs))) == want


def test_typed_values_are_the_cli_texts() -> None:
    assert typed_sets([("matrix.concurrency", [1, 2]), ("x", 8), ("on", True), ("f", 0.5)]) == \
        typed_sets([("matrix.concurrency", "[1,2]"), ("x", "8"), ("on", "true"), ("f", "0.5")]) == \
        {"matrix.concurrency": [1, 2], "x": 8, "on": "true", "f": 0.5}
    for bad in ({"a": 1}, [[1]], [{"a": 1}], float("inf"), None, "a\x1bb"):
        with pytest.raises(BadInput) as e:
            typed_sets([("x", bad)])
        assert e.value.field == "sets"


def test_a_value_set_from_the_command_line_is_a_label(tmp_path) -> None:
    """Launches of one spec with `--set itl=5` and `--set itl=10` are told apart by a label `itl`
    (so `compare --by itl` reads them); spec-level fields and matrix axes are not doubled."""
    from optlog.runs.spec import load_spec, plan

    f = tmp_path / "s.yaml"
    f.write_text("name: p\nparams: {itl: 5, port: 1}\nmatrix: {c: [1, 2]}\nlabels: {config: p}\n"
                 "bench:\n  cmd: echo {{ itl }} {{ c }} {{ port }} {{ out }}\n  parser: json\n")
    ls = load_spec(f, "runs/s.yaml")
    assert all("itl" not in p.labels for p in plan(ls, {}))
    pts = plan(ls, typed_sets([("itl", "10"), ("repeats", "2"), ("matrix.c", "[4]")]))
    assert {(p.labels["itl"], p.labels["c"], p.labels["config"]) for p in pts} == {(10, 4, "p")}
    assert len(pts) == 2 and all("repeats" not in p.labels for p in pts)
