"""Issue 17: every number a verdict shows says what it is, degenerate data is decided exactly with a
clean stderr, and the contract's spellings (`optlog predict HYP …`, the documented tips, once in the README) work.
Through the real CLI, on recorded runs and on runs launched with the GEMM probe."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

from tests._verdicts import repeats, seed_runs

ROOT = Path(__file__).resolve().parents[2]
T = "t"


def _five(ws, a_vals, b_vals, metric=T, **extra):
    return seed_runs(ws, repeats({"cfg": "new", **extra}, metric, a_vals) + repeats({"cfg": "old", **extra}, metric, b_vals))


def _pred(ws, hyp, expect, *args):
    ws.cli("predict", hyp, "--expect", expect, "--metric", T, "--a", "cfg=new", "--b", "cfg=old", *args)


def _clean(err: str) -> None:
    assert "Warning" not in err and "warnings.warn" not in err and "Traceback" not in err, err


def test_scaled_expressions_show_the_tested_ratio_and_its_interval(ws):
    """`a < b*0.05` and `a/b > 8`: the estimate, the interval and the threshold are all of a/b."""
    _five(ws, [1.0, 1.1, 0.9, 1.05, 0.95], [20, 22, 18, 21, 19])
    ws.cli("hyp", "add", "X", "--id", "h")
    _pred(ws, "h", "a < b*0.05")
    _pred(ws, "h", "a/b > 8")
    r = ws.cli("verdict", "h", "--json")
    _clean(r.err)
    p1, p2 = r.json["results"][0]["predictions"]
    for p, thr in ((p1, 0.05), (p2, 8)):
        lv = p["levels"][0]
        assert lv["quantity"] == "a/b" and lv["statistic"] == "ratio of means" and lv["threshold"] == thr
        assert abs(lv["estimate"] - 1.0 / 20) < 1e-3 and lv["estimate"] == lv["ratio"]
        lo, hi = lv["ci"]
        assert lo < lv["estimate"] < hi and hi < 0.06, lv  # the interval of a/b, not of a/(0.05·b)
        region = {0.05: "< 0.05", 8: "> 8"}[thr]
        assert lv["reason"].startswith("a/b = 0.05, 95% CI [") and lv["region"] == region
        assert f"] straddles {region}" in lv["reason"] or f"] outside {region}" in lv["reason"], lv["reason"]
    assert p2["status"] == "falsified" and p2["explanation"].startswith(
        "falsified, post-hoc: written after runs 1–10; new/old = 0.05, 95% CI [")
    assert p2["explanation"].endswith("] outside > 8; expected a/b > 8"), p2["explanation"]  # no bare (v1) (issue 32)
    # the human table names the tested quantity beside its estimate and interval
    out = ws.cli("verdict", "h").out
    assert re.search(r"tested\s+estimate\s+CI\s+design", out) and "a/b" in out


def test_welch_and_margin_tiers_say_one_ratio(ws):
    """3 repeats (Welch on logs): the interval is of the ratio of geometric means, and says so; 1 repeat
    (margin rules): the reason gives a/b and the threshold, the same ratio as the level's."""
    _five(ws, [10, 11, 12], [100, 101, 99], x="w")
    _five(ws, [1318], [2800], x="m")
    ws.cli("hyp", "add", "X", "--id", "h")
    _pred(ws, "h", "a >= b * 0.9", "--per", "x")
    lv_m, lv_w = ws.j("verdict", "h")["results"][0]["predictions"][0]["levels"]
    assert lv_m["level"] == {"x": "m"} and lv_m["method"] == "margin"
    assert lv_m["reason"] == "a/b = 0.47 vs >= 0.9 (margin rule ±5%, n=1+1)" and abs(lv_m["ratio"] - 1318 / 2800) < 1e-3
    assert "1,318 vs 2,520" not in lv_m["reason"]  # the scaled side is not shown as if it were b
    assert lv_w["method"] == "welch-log" and lv_w["statistic"] == "ratio of geometric means"
    assert lv_w["ci"][0] < lv_w["estimate"] < lv_w["ci"][1] < 0.9 and "(geometric means)" in lv_w["reason"]


def test_summary_names_the_tested_metric_and_group_labels(ws):
    seed_runs(ws, repeats({"m": 1}, "bound_compute", [1, 1, 1, 1, 1]))
    seed_runs(ws, [({"m": 1, "repeat": i}, {T: 0.1}) for i in range(5, 10)])
    ws.cli("hyp", "add", "X", "--id", "h")
    ws.cli("predict", "h", "--expect", "a.bound_compute > 0.5", "--metric", T, "--a", "m=1")
    ws.cli("predict", "h", "--expect", "a > 0", "--metric", T, "--a", "m=16")
    r = ws.cli("verdict", "h", "--json")
    _clean(r.err)
    p1, p2 = r.json["results"][0]["predictions"]
    assert p1["explanation"].startswith("confirmed, post-hoc: written after runs 1–10; "
                                  "bound_compute (m=1) = 1.00 (all values equal);")
    assert p1["levels"][0]["a"] == 1 and p1["levels"][0]["quantity"] == "a.bound_compute"
    assert p2["explanation"].startswith("untested: no run matches a (m=16);")


def test_identical_values_are_decided_exactly_without_a_test(ws):
    """0/1 indicators and constant counters: no t-test, no p-value, no library warning on stderr."""
    _five(ws, [1, 1, 1, 1, 1], [0.5, 0.5, 0.5, 0.5, 0.5], metric="bound_compute")
    seed_runs(ws, repeats({"cfg": "p"}, "count", [3, 3, 3]) + repeats({"cfg": "q"}, "count", [3, 3, 3]))
    ws.cli("hyp", "add", "X", "--id", "h")
    for e in ("a.bound_compute > 0.5", "a.bound_compute > b.bound_compute", "a.bound_compute < 1",
              "a.bound_compute / b.bound_compute in [1.9, 2.1]"):
        ws.cli("predict", "h", "--expect", e, "--metric", "bound_compute", "--a", "cfg=new", "--b", "cfg=old")
    ws.cli("hyp", "add", "Y", "--id", "c")
    ws.cli("predict", "c", "--expect", "a.count >= b.count", "--metric", "count", "--a", "cfg=p", "--b", "cfg=q")
    ws.cli("predict", "c", "--expect", "a.count > b.count", "--metric", "count", "--a", "cfg=p", "--b", "cfg=q")
    r = ws.cli("verdict", "--all", "--json")
    assert r.err.strip() == "", r.err
    res = {p["id"]: p for x in r.json["results"] for p in x["predictions"]}
    got = {pid: (p["status"], p["levels"][0]["method"], p["levels"][0]["p"]) for pid, p in res.items()}
    assert got == {"h.p1": ("confirmed", "exact", None), "h.p2": ("confirmed", "exact", None),
                   "h.p3": ("falsified", "exact", None), "h.p4": ("confirmed", "exact", None),
                   "c.p1": ("confirmed", "exact", None), "c.p2": ("falsified", "exact", None)}
    assert all(p["levels"][0]["reason"].startswith("all values equal: ") for p in res.values())
    # the human output too: nothing but optlog's own narration on stderr
    r = ws.cli("verdict", "--all")
    assert r.err.strip() == "" and "all values equal" in r.out


def test_predict_is_prediction_add_and_old_spellings_work(ws):
    ws.cli("hyp", "add", "X", "--id", "h")
    before = ws.commits()
    p = ws.j("predict", "h", "--expect", "a > b", "--metric", T, "--a", "cfg=new", "--b", "cfg=old")
    assert p["id"] == "h.p1" and ws.commits() == before + 1
    assert ws.j("predict", "add", "h", "--expect", "a < b", "--metric", T, "--a", "cfg=new", "--b", "cfg=old")["id"] == "h.p2"
    assert [x["id"] for x in ws.j("predict", "list", "h")["predictions"]] == ["h.p1", "h.p2"]
    assert ws.j("predict", "show", "h.p1")["expect"] == "a > b"
    from optlog.mcp.tools import tools

    assert not [k for k in tools() if k.startswith("predict_")]  # the alias is no second set of MCP tools
    r = ws.cli("predict", "nope", "--expect", "a > b", "--json", check=2)
    assert r.json["error"]["field"] == "HYP" or "nope" in r.json["error"]["message"]


def _readme_tip(pattern: str) -> str:
    m = re.search(pattern, (ROOT / "docs" / "telemetry.md").read_text(encoding="utf-8"))
    assert m, pattern
    return m.group(1)


def test_documented_tips_work_on_launched_probe_runs(ws):
    """docs/telemetry.md's probe recipe launched as written (three repeats of one GEMM shape: its `flops` is
    a constant counter) and its bound_compute prediction accepted and judged."""
    cmd = _readme_tip(r"as a bench command: `cmd: (python -m optlog\.probes\.gemm … --output \{\{ out \}\}/result\.json)`")
    parser = _readme_tip(r"--output \{\{ out \}\}/result\.json`, `parser: (\w+)`")
    cmd = cmd.replace("python", sys.executable, 1).replace("…", "--m 8 --k 64 --n 64 --dtype fp32 --device cpu --repeats 2")
    (ws.root / "runs" / "probe.yaml").write_text(yaml.safe_dump(
        {"name": "probe", "bench": {"cmd": cmd, "parser": parser}, "repeats": 3}, sort_keys=False))
    res = ws.j("run", "launch", "runs/probe.yaml")
    runs = [ws.j("run", "show", str(x["id"])) for x in res["runs"]] if "runs" in res else None
    assert runs and all(r["status"] == "succeeded" for r in runs), res
    assert len({r["metrics"]["flops"] for r in runs}) == 1 and runs[0]["metrics"]["flops"] == 2 * 8 * 64 * 64
    ws.cli("hyp", "add", "Probe", "--id", "probe")
    ws.cli("predict", "probe", "--expect", "a.flops > 1000", "--metric", "tflops", "--a", "op=gemm")
    tip = _readme_tip(r"predict `(a\.bound_compute [^`]+)`")
    ws.cli("predict", "probe", "--expect", tip, "--metric", "tflops", "--a", "op=gemm")  # accepted (exit 0)
    r = ws.cli("verdict", "probe", "--json")
    _clean(r.err)
    p1 = r.json["results"][0]["predictions"][0]
    assert p1["status"] == "confirmed" and p1["levels"][0]["method"] == "exact"
    assert p1["explanation"].startswith("confirmed, post-hoc: written after runs ")
    assert "; flops (gemm) = 65,536 (all values equal);" in p1["explanation"]


def test_a_geometric_estimate_is_shown_beside_the_group_centres_it_is_of(ws):
    """Welch on logs tests a ratio of geometric means: with skewed repeats (one slow outlier, as on a
    loaded machine) the arithmetic means beside it gave a/b = 1.9 next to an estimate of 1.0. The
    level carries the geometric means (`geo`), and the table and the report show those."""
    _five(ws, [0.0199, 0.00106, 0.0205], [0.0070, 0.0061, 0.0091])
    ws.cli("hyp", "add", "X", "--id", "h")
    _pred(ws, "h", "a / b < 1.2")
    (lv,) = ws.j("verdict", "h")["results"][0]["predictions"][0]["levels"]
    assert lv["statistic"] == "ratio of geometric means"
    assert abs(lv["geo"]["a"] / lv["geo"]["b"] - lv["estimate"]) < 0.01 * lv["estimate"], lv
    assert abs(lv["a"] / lv["b"] - lv["estimate"]) > 0.5  # the means tell another story
    human = ws.cli("prediction", "show", "h.p1").out + ws.cli("verdict", "h").out
    assert f"{lv['geo']['a']:.3g} (geo.)" in human, human


def test_a_where_condition_with_a_single_equals_says_to_use_two(ws):
    """`--where "m = 1024"` (as an agent typed it) said only "syntax error"."""
    ws.cli("hyp", "add", "X", "--id", "h")
    r = ws.cli("predict", "h", "--expect", "a > b", "--metric", T, "--a", "cfg=new", "--b", "cfg=old",
               "--where", "m = 1024", "--json", check=2)
    assert "compares with == (`m == 1024`)" in r.json["error"]["message"] and "Traceback" not in r.err
    assert ws.cli("predict", "h", "--expect", "a > b", "--metric", T, "--a", "cfg=new", "--b", "cfg=old",
                  "--where", "m == 1024").code == 0


def _reword(d, old, new):
    """Every text of a verdict record with `old` written as `new` (its numbers in another style)."""
    if isinstance(d, dict):
        return {k: (v.replace(old, new) if isinstance(v, str) and k in ("summary", "explanation", "reason")
                    else _reword(v, old, new)) for k, v in d.items()}
    if isinstance(d, list):
        return [_reword(x, old, new) for x in d]
    return d


def test_a_verdict_is_recorded_again_only_when_its_judgement_changes_not_its_wording(ws):
    """Issues 43/44: the verdict texts' number style may change; a record written in an older style
    is the same judgement and is not recorded again (no commit, one history row), while a record
    whose estimate differs is. The evidence fingerprint is made stale so the engine re-judges."""
    _five(ws, [1000.0, 1100.0, 900.0, 1050.0, 950.0], [2000.0, 2200.0, 1800.0, 2100.0, 1900.0])
    ws.cli("hyp", "add", "X", "--id", "h")
    _pred(ws, "h", "a > b")
    ws.cli("verdict", "h")
    path = ws.root / "hypotheses" / "h.yaml"
    doc = yaml.safe_load(path.read_text())
    assert len(doc["verdicts"]) == 1
    rec = doc["verdicts"][-1]
    reason = rec["predictions"][0]["levels"][0]["reason"]
    assert "a/b = 0.5" in reason, reason

    def rewrite(change):
        d = yaml.safe_load(path.read_text())
        d["verdicts"][-1] = change(d["verdicts"][-1])
        for p in d["verdicts"][-1]["predictions"]:
            p["evidence"] = "stale"  # not the engine's cache key: it judges again
        path.write_text(yaml.safe_dump(d, sort_keys=False, allow_unicode=True))
        ws.git("commit", "-qam", "an older record")

    rewrite(lambda r: _reword(r, "a/b = 0.5", "a/b = 5.00e-01"))
    n = ws.commits()
    r = ws.cli("verdict", "h", "--json")
    assert r.json["committed"] == 0 and ws.commits() == n
    assert len(yaml.safe_load(path.read_text())["verdicts"]) == 1

    def moved(r):
        r["predictions"][0]["levels"][0]["estimate"] = 0.6
        return r
    rewrite(moved)
    n = ws.commits()
    r = ws.cli("verdict", "h", "--json")
    assert r.json["committed"] == 1 and ws.commits() == n + 1
    vs = yaml.safe_load(path.read_text())["verdicts"]
    assert len(vs) == 2 and vs[-1]["predictions"][0]["levels"][0]["estimate"] == rec["predictions"][0]["levels"][0]["estimate"]


def test_verdict_texts_read_as_the_tables_with_the_metric_unit(ws):
    """Issue 43 item 4: `95% CI [1.58e+04, 1.75e+04] outside >= 21228.1` read nothing like the report's
    `[15,770, 17,460] tok/s`; the estimate, the interval and the threshold now carry the tables'
    style and the metric's unit, in the level's reason and in the explanation."""
    m = "output_throughput"
    seed_runs(ws, repeats({"cfg": "new"}, m, [16400.0, 16900.0, 15900.0, 17200.0, 16100.0]))
    ws.cli("hyp", "add", "X", "--id", "h")
    ws.cli("predict", "h", "--expect", "a >= 21228.1", "--metric", m, "--a", "cfg=new")
    r = ws.cli("verdict", "h", "--json")
    _clean(r.err)
    p = r.json["results"][0]["predictions"][0]
    lv = p["levels"][0]
    assert p["status"] == "falsified" and lv["region"] == ">= 21228.1", lv  # the record keeps it as written
    for text in (lv["reason"], p["explanation"].partition("; expected")[0]):
        assert "e+" not in text and "21228" not in text, text
        assert re.search(r"= 16,\d{3} tok/s.*95% CI \[1\d,\d{3}, 1\d,\d{3}\] tok/s outside >= 21,228 tok/s", text), text
    out = ws.cli("verdict", "h").out  # the levels table: its interval cell in the estimate cell's style
    assert "e+" not in out and re.search(r"16,\d{3}\s+\[1\d,\d{3}, 1\d,\d{3}\]", out), out
