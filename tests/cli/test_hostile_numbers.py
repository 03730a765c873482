"""Issue 42, item 4: one hostile number never blocks another hypothesis's verdict.

A run with a metric near 1e308 under a scaling prediction once made `verdict`, `verdict --all`
and `next` end in `internal error: OverflowError at core/scaling.py:91`, for every hypothesis of
the workspace. Through the real CLI: the hostile hypothesis is judged (its levels unclear, saying
why) and every other one as usual, by `verdict`, `verdict --all`, `next`, `status` and `report`."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import yaml

from tests._face import face
from tests._verdicts import seed_runs

BIG = 1.7976931348623157e308


def _hostile_workspace(ws) -> None:
    rows = [({"g": "s", "x": x}, {"m": y}) for x, y in ((1, 1e308), (2, 1e308), (3, BIG), (4, -1e308))]
    rows += [({"g": "k", "x": x}, {"m": y}) for x, y in ((1, 5e-324), (2, BIG), (4, 1e308))]
    rows += [({"c": c, "repeat": i}, {"m": v}) for c, vals in ((1, [10, 11, 12]), (2, [5, 5.5, 6])) for i, v in enumerate(vals)]
    rows += [({"c": 3, "repeat": i}, {"m": v}) for i, v in enumerate([BIG, 1e308, -BIG, 5e-324, 0.0])]
    seed_runs(ws, rows)
    ws.cli("hyp", "add", "Grows with x", "--id", "big")
    ws.cli("predict", "big", "--expect", "slope(x) > 1", "--metric", "m", "--a", "g=s")
    ws.cli("predict", "big", "--expect", "k(x) in [0.9, 1.1]", "--metric", "m", "--a", "g=k")
    ws.cli("predict", "big", "--expect", "a > b", "--metric", "m", "--a", "c=3", "--b", "c=1")
    ws.cli("hyp", "add", "Flat in x", "--id", "flat", "--rival", "big")
    ws.cli("predict", "flat", "--expect", "k(x) < 0.3", "--metric", "m", "--a", "g=k")
    ws.cli("hyp", "add", "One beats two", "--id", "ok")
    ws.cli("predict", "ok", "--expect", "a > b", "--metric", "m", "--a", "c=1", "--b", "c=2")


def _no_internal_error(r) -> None:
    assert "internal error" not in r.err and "Traceback" not in r.err, r.err


def test_a_hostile_number_blocks_no_other_verdict(ws):
    _hostile_workspace(ws)
    r = ws.cli("verdict", "--all", "--json")
    _no_internal_error(r)
    res = {x["hypothesis"]: x for x in r.json["results"]}
    assert res["ok"]["auto_status"] == "confirmed", res["ok"]  # 11 vs 5.5: judged as if alone
    big = res["big"]
    assert big["auto_status"] in ("inconclusive", "falsified", "open"), big
    for p in big["predictions"]:
        for lv in p["levels"]:
            assert lv["outcome"] in ("holds", "fails", "unclear") and lv["reason"], lv
    reasons = " ".join(lv["reason"] for p in big["predictions"] for lv in p["levels"])
    assert "beyond what a double can compute with" in reasons, reasons
    json.dumps(r.json, allow_nan=False)  # no inf or NaN in the document
    for args in (("verdict", "big"), ("verdict", "ok"), ("next",), ("next", "big"), ("status",), ("report",)):
        for fmt in ((), ("--json",)):
            out = ws.cli(*args, *fmt)
            _no_internal_error(out)
            if fmt:
                json.loads(out.out)
    # the committed record holds no .inf or .nan either (YAML would read them back as floats)
    text = (ws.root / "hypotheses" / "big.yaml").read_text()
    assert ".inf" not in text and ".nan" not in text, text


def _refused(ws, *args, field=None, file=None, line=None, says=None):
    before = ws.commits()
    r = ws.cli(*args, "--json", check=2)
    err = r.json["error"]
    _no_internal_error(r)
    if field is not None:
        assert err.get("field") == field, err
    if file is not None:
        assert err.get("file") == file and err.get("line") == line, err
    if says is not None:
        assert says in err["message"], err
    assert ws.commits() == before
    return err


def test_every_number_is_checked_where_it_enters(ws):
    """Ids past 64 bits, thresholds that claim nothing, ranges empty or everything, numerals past the
    largest double in a label, an imported result or a template: exit 2 naming the field (the file
    and line for files), nothing written; never an internal error, never silently dropped."""
    ws.cli("hyp", "add", "H", "--id", "h")
    ws.cli("run", "record", "--label", "g=s", "--metric", "m=1")
    # ids: the largest the database stores is looked up; one past it is refused as no id
    for ref in ("9223372036854775808", "99999999999999999999999"):
        _refused(ws, "run", "show", ref, says="ids are whole numbers from 0 to 9223372036854775807")
    _refused(ws, "run", "invalidate", "9223372036854775808", "--why", "x")
    # within 64 bits but past PostgreSQL's 32-bit id column: found nowhere, on either database
    for args in (("run", "show", "9223372036854775807"), 
                 ("run", "show", "2147483648"), ("run", "invalidate", "2147483648", "--why", "x")):
        assert ws.cli(*args, "--json", check=2).json["error"]["code"] == "not_found", args
    _refused(ws, "run", "list", "--limit", "99999999999999999999", field="--limit")
    # thresholds and regions
    for expect, says in (("k(x) > 1e400", "past the largest number"), ("k(x) in [-inf, inf]", "claims nothing"),
                         ("a > -inf", "threshold must be a finite number"), ("a < inf", "finite"),
                         ("a in [5, 3]", "empty range"), ("a in [inf, inf]", "empty range"),
                         ("a < 1e300 * 1e300", "finite")):
        _refused(ws, "predict", "h", "--expect", expect, "--metric", "m", "--a", "g=s", "--b", "g=t",
                 field="--expect", says=says)
    ws.cli("predict", "h", "--expect", "a / b in [1.6, inf]", "--metric", "m", "--a", "g=s", "--b", "g=t")  # an open end
    # a hand-edited hypothesis file names its file and line
    f = ws.root / "hypotheses" / "h.yaml"
    good = f.read_text()
    f.write_text(good.replace("a / b in [1.6, inf]", "a / b in [-inf, inf]"))
    line = next(i for i, t in enumerate(f.read_text().splitlines(), 1) if "[-inf, inf]" in t)
    err = _refused(ws, "verdict", "h", says="claims nothing")
    assert err.get("file") == "hypotheses/h.yaml" and err.get("line") == line, err
    f.write_text(good)
    # metric and label values
    _refused(ws, "run", "record", "--label", "g=s", "--metric", "m=1e400", field="--metric")
    _refused(ws, "run", "record", "--label", "q=1e400", "--metric", "m=1", field="--label", says="label q")
    ws.cli("run", "record", "--label", "request_rate=inf", "--metric", "m=1")  # the word inf: no rate limit
    # an imported numeral past the largest double: refused with its file and line, not dropped
    (ws.root / "r.jsonl").write_text('{"output_throughput": 10, "max_concurrency": 1}\n'
                                     '{"output_throughput": 1e400, "max_concurrency": 4}\n')
    _refused(ws, "run", "import", "r.jsonl", "--format", "sglang", file="r.jsonl", line=2, says="1e400")
    # template arithmetic past 64 bits
    (ws.root / "runs" / "t.yaml").write_text("name: t\nbench:\n  cmd: 'echo {{ (999999 ** 64) }}'\n")
    _refused(ws, "run", "launch", "runs/t.yaml", file="runs/t.yaml", line=3, says="out of range")


FIX = Path(__file__).resolve().parents[1] / "fixtures"
GEN = FIX / "peers" / "generated"


def _csv_with(src: Path, row: int, col: int, value: str) -> str:
    """`src`'s CSV with the cell at (row, col) (0-based) replaced; its text."""
    rows = list(csv.reader(io.StringIO(src.read_text())))
    rows[row][col] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _yaml_with(src: Path, key: str, value: str) -> tuple[str, int]:
    """`src`'s JSON as YAML with the first `key:` line's value replaced by the plain scalar `value`;
    the text and that line."""
    lines = yaml.safe_dump(json.loads(src.read_text()), sort_keys=False, width=10000).splitlines()
    n = next(i for i, t in enumerate(lines) if t.strip().startswith(f"{key}:") and t.split(":", 1)[1].strip())
    lines[n] = lines[n].split(":", 1)[0] + ": " + value
    return "\n".join(lines) + "\n", n + 1


def test_a_numeral_past_the_largest_double_is_refused_by_every_result_reader(ws):
    """Only JSON refused `1e400` (it read as inf, and `finite()` dropped the metric without a word):
    every reader — AIPerf's CSV and its aggregate CSV, GuideLLM's CSV and YAML, llama-bench's and
    llama-batched-bench's tables, a number written as JSON text — refuses it with the file, the line
    and the field, exit 2, nothing written."""
    md = (FIX / "real" / "llama-bench" / "local-cpu-gemma3-270m.md").read_text()
    batched = (FIX / "real" / "llama-batched-bench" / "dgx-spark-gpt-oss-20b.cut.md").read_text()
    g_yaml, g_line = _yaml_with(GEN / "guidellm-A-c1.json", "duration", "1e400")
    cases = {  # file -> (text, format, line, a word of the field)
        "a.csv": (_csv_with(GEN / "aiperf-A-c1.csv", 1, 1, "1e400"), "aiperf", 2, "avg"),
        "agg.csv": (_csv_with(FIX / "real" / "aiperf" / "sweep-0.13.0" / "concurrency_1" /
                              "profile_export_aiperf_aggregate.cut.csv", 2, 1, "-1E+400"), "aiperf", 3, "mean"),
        "g.csv": (_csv_with(GEN / "guidellm-A-c1.csv", 3, 16, "1e400"), "guidellm", 4, "Duration"),
        "g.yaml": (g_yaml, "guidellm", g_line, "duration"),
        "t.md": (md.replace("195.59 ± 0.72", "1e400 ± 0.72"), "llama-bench", 3, "t/s"),
        "b.md": (batched.replace("1369.01", "1e400", 1), "llama-batched-bench", 5, "S_PP t/s"),
        "s.json": ('{"output_throughput": "1e400", "duration": 10, "max_concurrency": 1}\n', "sglang", 1,
                   "output_throughput"),
    }
    agg = (FIX / "real" / "aiperf" / "sweep-0.13.0" / "concurrency_1" / "profile_export_aiperf_aggregate.cut.csv").read_text()
    at = agg.count("\n", 0, agg.index("Variation Values,")) + 1
    for i, lit in enumerate(("1e999", "-1E+400", "(1, 1e999)", "1e999j")):  # a Python literal AIPerf printed: read as inf
        cases[f"lit{i}.csv"] = (agg.replace("{'phases.profiling.concurrency': 1}", f"\"{{'phases.profiling.concurrency': {lit}}}\""),
                                "aiperf", at, "Variation Values")
    for name, (text, fmt, line, fld) in cases.items():
        (ws.root / name).write_text(text)
        for given in ((), ("--format", fmt)):
            err = _refused(ws, "run", "import", name, *given, file=name, line=line, says="past the largest number")
            assert fld in (err.get("field") or ""), (name, err)
    assert ws.j("run", "list")["runs"] == []
    # the word inf and numbers near the largest double are values, not typos
    (ws.root / "ok.json").write_text('{"output_throughput": 1.7976931348623157e308, "request_rate": "inf", '
                                     '"duration": 1, '
                                     '"max_concurrency": 1}\n')
    ws.cli("run", "import", "ok.json", "--format", "sglang")


def test_matrix_and_set_values_are_checked_as_label_values_are(ws, monkeypatch):
    """A matrix value becomes a label of its runs, yet only `--label` was range-checked: a spec's
    `matrix: {c: [1, 1e400]}` (or `1.0e+400`, which YAML reads as inf) and `--set c=1e400` (an
    agent's `sets` too) launched runs labelled inf. Refused where they enter: the spec's file, line
    and field, or the option; exit 2, nothing run or written. The word inf stays a value
    (`request_rate: [1, inf]`: no rate limit)."""
    def launch(name, matrix, *extra, **kw):
        (ws.root / "runs" / f"{name}.yaml").write_text(
            f"name: {name}\nmatrix:\n  c: {matrix}\nbench:\n  cmd: 'echo {{{{ c }}}}'\n")
        return ws.cli("run", "launch", f"runs/{name}.yaml", *extra, "--json", subprocess=False, **kw)

    for i, (matrix, bad) in enumerate((("[1, 1e400]", 1), ("[1.0e+400]", 0), ("[2, 3, -1E400]", 2))):
        before = ws.commits()
        err = launch(f"m{i}", matrix, check=2).json["error"]
        assert (err["file"], err["line"], err["field"]) == (f"runs/m{i}.yaml", 3, f"matrix.c.{bad}"), err
        assert "past the largest number" in err["message"], err
        assert ws.commits() == before
    for given in ("c=1e400", "c=[1, 1e400]", "matrix.c=[-1e400]"):
        err = launch("s", "[1]", "--set", given, check=2).json["error"]
        assert err["field"] in ("sets", "--set") and "past the largest number" in err["message"], (given, err)
    # an agent's `sets` (the MCP face, in-process) reach the same check, as text or as a list
    with face(ws, monkeypatch) as call:
        for sets in ({"c": "1e400"}, {"matrix.c": [1, "-1e400"]}):
            doc, is_err, code = call("run_launch", {"spec": "runs/s.yaml", "sets": sets, "detach": False})
            assert is_err and code == 2 and "past the largest number" in json.dumps(doc), (sets, doc)
    assert ws.j("run", "list")["runs"] == []
    # the word inf is a value: a launch with it is planned and runs
    r = launch("inf", "[inf]", "--set", "matrix.c=[inf, 2]", check=1)  # (the bench leaves no result)
    assert sorted(str(x["labels"]["c"]) for x in r.json["runs"]) == ["2", "inf"], r.json
