"""The verdict engine's shape (issue 46 item 4): its estimators are a table of small pure functions
(core.estimators) each returning a frozen estimate, not a ladder inside core.verdict; and a
prediction's expression is parsed where a prediction is written or loaded, then handed on typed."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from optlog.core import estimators as ES

ROOT = Path(__file__).resolve().parents[2]
VERDICT = ROOT / "optlog" / "core" / "verdict.py"
LARGEST = 90  # lines: the largest function of core/verdict.py (was `_estimate`, 144; `_finish` 113)
STATS = {"t_one", "t_welch", "t_quantile", "percentile_ci", "fit"}  # core.stats / core.scaling estimators


def _functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def ladder_functions(path: Path) -> list[str]:
    """Functions that are the old estimator ladder, or that estimate with core.stats themselves."""
    out = [f.name for f in _functions(path) if f.name in ("_decide", "_estimate")]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module in ("optlog.core.stats", "optlog.core.scaling"):
            out += [f"imports {a.name} from {n.module}" for a in n.names if a.name in STATS]
    return out


def largest(path: Path) -> tuple[int, str]:
    return max((f.end_lineno - f.lineno + 1, f.name) for f in _functions(path) if f.end_lineno)


def test_the_verdict_estimates_only_through_the_estimators_table() -> None:
    assert ladder_functions(VERDICT) == []


def test_the_ladder_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "verdict.py"
    bad.write_text("from optlog.core.stats import t_welch, mean\n\ndef _decide(ae, m, results):\n    pass\n")
    assert ladder_functions(bad) == ["_decide", "imports t_welch from optlog.core.stats"]


def test_the_largest_function_of_the_verdict_is_small() -> None:
    n, name = largest(VERDICT)
    assert n <= LARGEST, f"core/verdict.py's {name} is {n} lines (at most {LARGEST})"


def test_the_size_check_can_fail(tmp_path: Path) -> None:
    big = tmp_path / "verdict.py"
    big.write_text("def ladder():\n" + "    x = 1\n" * LARGEST)
    assert largest(big) == (LARGEST + 1, "ladder")


def test_every_table_entry_is_an_estimator_returning_a_frozen_estimate() -> None:
    assert dataclasses.is_dataclass(ES.Estimate) and ES.Estimate.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert dataclasses.is_dataclass(ES.Sample) and ES.Sample.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert set(ES.TABLE.values()) == set(ES.ESTIMATORS), "an estimator no shape chooses, or a shape with none"
    samples = {
        "exact": ES.Sample("ratio", "unpaired", (2.0,) * 3, (1.0,) * 3),
        "paired": ES.Sample("ratio", "paired", pairs=((2.0, 1.0), (2.2, 1.0), (1.9, 1.0)), blocking="launch cycle"),
        "welch": ES.Sample("diff", "unpaired", (1.0, 2.0, 3.0), (1.0, 1.5, 2.5)),
        "t": ES.Sample("value", "one group", (1.0, 2.0, 3.0)),
        "margin": ES.Sample("value", "one group", (1.0,)),
        "fit": ES.Sample("fit", "fit", points=((1.0, 2.0, 4.0), (1.0, 2.1, 3.9)), fit_kind="k", fit_label="x"),
        "bootstrap": ES.Sample("value", "one group", (1.0, 2.0, 3.0, 4.0, 5.0)),
    }
    for name, s in samples.items():
        assert ES.choose(s) == name
        e = ES.estimate(name, s, 0.95, [1.0, 2.0, 3.0] if name == "bootstrap" else None)
        assert isinstance(e, ES.Estimate) and e.value is not None and e.method.startswith(name[:4]), (name, e)
        try:
            e.value = 0.0  # type: ignore[misc]
        except dataclasses.FrozenInstanceError:
            pass
        else:
            raise AssertionError(f"{name}'s estimate can be changed after it was made")


def test_a_paired_estimate_names_the_runs_it_left_out_and_why() -> None:
    s = ES.Sample("diff", "paired", pairs=((2.0, 1.0), (2.2, 1.0), (1.9, 1.1)), blocking="launch cycle", unpaired_left=2)
    e = ES.estimate(ES.choose(s), s, 0.95)
    assert e.left_out == ((2, "without a partner"),)
    assert "2 runs without a partner left out" in e.detail and e.n == (3,)


# ---------------------------------------------------------------- a prediction parsed once

PARSE_SITES = {
    "optlog/core/hypothesis.py:parse_expectation",  # a prediction loaded (or made): Prediction.expr
    "optlog/service/predictions.py:check_spec",  # a prediction written: checked against the ceilings
    "optlog/store/plaindue.py:__init__",  # a prediction loaded from the index's JSON (a first status, issue 47)
}


def parse_sites(root: Path) -> set[str]:
    """`module:function` of every call of the expression parser outside core/expr.py."""
    out: set[str] = set()
    for path in sorted((root / "optlog").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "optlog/core/expr.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                if isinstance(n, ast.Call) and (getattr(n.func, "attr", None) == "parse_expect"
                                                or getattr(n.func, "id", None) == "parse_expect"):
                    out.add(f"{rel}:{fn.name}")
    return out


def test_a_prediction_is_parsed_only_where_it_is_written_or_loaded() -> None:
    assert parse_sites(ROOT) <= PARSE_SITES, "parse the expression once: use Prediction.expr"


def test_the_parse_site_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "optlog" / "core").mkdir(parents=True)
    (tmp_path / "optlog" / "core" / "verdict.py").write_text(
        "from optlog.core import expr as E\n\ndef _plan(pred):\n    return E.parse_expect(pred.expect, None)\n")
    assert parse_sites(tmp_path) == {"optlog/core/verdict.py:_plan"}


def test_an_edited_expectation_is_parsed_anew() -> None:
    from optlog.core.hypothesis import Prediction

    p = Prediction(id="h.p1", expect="a > b", a={"x": 1}, b={"x": 2})
    assert p.groups == {"a", "b"}
    p.expect = "a < 0.5 * peak"  # service.predictions.edit sets the fields of the version written now
    assert p.groups == {"a"}
