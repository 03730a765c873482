"""Issue 32, a report that answers the question: the example reports under docs/examples/ are what
this code writes (examples/report_examples.py, in-process: no optlog subprocess), they open with
findings, draw each prediction's measured relation, and say every number once; a report replaces
its scope's previous file. The pure pieces (runs tables, reader texts, group names) are checked on
plain data."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from optlog.core import findings as F
from optlog.core import plans as P
from optlog.core import report as C
from optlog.core.statuses import reader_text
from optlog.core.units import unit
from optlog.errors import BadInput
from _plans import headings, tables, tokens

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import report_examples as EX  # noqa: E402

pytestmark = pytest.mark.sqlite_only  # an example is rebuilt in its own SQLite workspace, as a clone is


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every example rebuilt from its committed data, once for the module: {name: folder}."""
    out = {}
    for name in EX.EXAMPLES:
        if (EX.DOCS / name).is_dir():
            d = tmp_path_factory.mktemp(name)
            EX.build(name, d)
            out[name] = d
    return out


def test_the_committed_example_reports_are_what_the_code_writes(built):
    """After a change to what a report says: python examples/report_examples.py (and look at them)."""
    assert "demo" in built
    for name, d in built.items():
        made = sorted(p.name for p in d.iterdir())
        have = sorted(p.name for p in (EX.DOCS / name / "reports").iterdir())
        assert made == have, (name, made, have)
        for f in made:
            assert (d / f).read_bytes() == (EX.DOCS / name / "reports" / f).read_bytes(), (name, f)


def _findings(text):
    """The Findings section's parts: {bold head: [items]}."""
    sec = text.split("\n## Findings\n", 1)[1].split("\n## ", 1)[0]
    heads = re.findall(r"^\*\*(.+?)\*\*$", sec, re.M)
    bodies = re.split(r"^\*\*.+?\*\*$", sec, flags=re.M)[1:]
    return {h: [ln[2:] if ln.startswith("- ") else re.sub(r"^\d+\. ", "", ln) for ln in b.strip().splitlines() if ln.strip()]
            for h, b in zip(heads, bodies)}


def test_item1_findings_first_from_the_data(built):
    text = (built["demo"] / "report.md").read_text()
    h2 = [h for t, h in headings(text) if t == "h2"]
    assert h2[0] == "Findings"
    f = _findings(text)
    assert list(f) == ["The questions", "What was measured", "What was decided", "What changed course", "What to do next"]
    assert len(f["The questions"]) == 3 and all("predicting" in q for q in f["The questions"])
    assert any("(a: tp4pp2, b: tp8)" in q for q in f["The questions"])
    (measured,) = f["What was measured"]  # one launch, one line: what varied, repeats, machine
    assert "varying concurrency (4, 16, 64) × config (tp4pp2, tp8)" in measured and "1 run each" in measured
    assert " on " in measured
    decided = f["What was decided"]
    comm = next(d for d in decided if d.startswith("comm-bound is falsified"))
    # the key number, its statistic and what it says about the interval, in one sentence
    assert re.search(r"tp4pp2/tp8 output\\_throughput = 0\.\d\d(–0\.\d\d)? \(ratio of means; n=1 a side, no interval", comm)
    assert any("does not tell them apart" in d for d in decided)  # rivals both confirmed
    assert f["What changed course"][0].startswith("comm-bound (falsified) → compute-bound (confirmed)")
    assert f["What to do next"][0].startswith("Tune the FP4 GEMM tactics for SM120")
    assert "but it was falsified" in f["What to do next"][1]


def test_item2_each_prediction_has_its_relation_table_and_plot_with_the_claim(built):
    text = (built["demo"] / "report.md").read_text()
    imgs = [c.attrs["src"] for t in tokens(text) if t.type == "inline" for c in t.children if c.type == "image"]
    assert {"report-comm-bound.p1.svg", "report-compute-bound.p1.svg", "report-pipeline-bubbles.p1.svg"} <= set(imgs)
    rel = next(t for t in tables(text) if t[0][0] == "concurrency (requests in flight)")
    assert rel[0][1:] == ["tp4pp2: median (tok/s)", "tp8: median (tok/s)"] and [r[0] for r in rel[1:]] == ["4", "16", "64"]
    assert text.count("| concurrency (requests in flight) |") == 1  # the same runs: one table, named after
    svg = (built["demo"] / "report-compute-bound.p1.svg").read_text()
    assert "claimed: tp4pp2 / tp8 in [0.3, 0.6]" in svg and "output_throughput (tok/s)" in svg and "log scale" in svg


def test_item3_runs_tables_tested_metric_first_no_constants_raw_or_flag_splits():
    runs = [{"id": i, "status": "succeeded", "invalidated": False, "launch_id": None, "note": None,
             "labels": {"input_len": n, "model": "m", "repeat": r, **({"loaded": "true"} if i == 2 else {})},
             "metrics": {"p99_itl_ms": 9.0 + i, "failed": 0.0, "raw.num_prompts": 8.0, "median_ttft_ms": 10.0 * n + r}}
            for i, (n, r) in enumerate([(64, 0), (64, 1), (256, 0), (256, 1)], 1)]
    groups = C.other_runs(runs)
    assert len(groups) == 1  # the loaded run is not set apart
    t = C.runs_table(next(iter(groups.values())), ["median_ttft_ms"])
    assert t["metrics"][0] == "median_ttft_ms" and "raw.num_prompts" not in t["metrics"]
    assert t["labels"] == ["input_len", "repeat"] and t["constants"] == {"model": "m"}
    assert t["constant_metrics"] == {"failed": 0.0}
    assert [r["marks"] for r in t["rows"]] == [[], ["loaded"], [], []]


def test_item4_one_number_and_reader_texts():
    assert reader_text("inconclusive: inconclusive: the interval straddles", "inconclusive") == "the interval straddles"
    assert reader_text("falsified: at c 4 a/b = 0.4; expected a > b (v1)", "falsified") == "at c 4 a/b = 0.4; expected a > b"
    assert reader_text("x; expected a > b (v2, edited after evidence)").endswith("(prediction version 2, edited after evidence)")
    # numbers keep their label: "2 1.35× 1" read as arithmetic
    assert P.selector_name({"parallel": 2}) == "parallel=2" and P.selector_name({"config": "tp8"}) == "tp8"
    # a plan's reason quotes the verdict's own estimate (a ratio of geometric means), not a ratio of means
    lv = {"level": {}, "a": 3.0, "b": 2.0, "ratio": 1.5, "quantity": "a/b", "estimate": 1.43, "outcome": "holds",
          "statistic": "ratio of geometric means", "ci": [1.2, 1.7], "n": {"a": 3, "b": 3}}
    rec = {"id": "p1", "status": "confirmed", "expect": "a / b >= 1.35", "metric": "output_throughput",
           "a": {"parallel": 2}, "b": {"parallel": 1}, "levels": [lv]}
    assert P.verdict_ratio_phrase(None, {"predictions": [rec]}) == "parallel=2 1.43× parallel=1"
    clause = F.prediction_clause(rec)  # what the report, the dashboard and the demo narration say
    assert clause == ("parallel=2/parallel=1 output_throughput = 1.43 (ratio of geometric means; 95% CI [1.20, 1.70]); "
                      "expected a / b >= 1.35 (confirmed)")
    assert unit("median_ttft_ms") == "ms" and unit("output_throughput") == "tok/s" and unit("gpu_power_w_mean") == "W"


def test_item4_no_repeated_status_or_bare_version_in_the_example_reports(built):
    for d in built.values():
        text = (d / "report.md").read_text()
        assert not re.search(r"\b(confirmed|falsified|inconclusive): \1", text)
        assert "(v1)" not in text


@pytest.fixture
def demo_ws(tmp_path, monkeypatch):
    """A workspace holding the demo example's record, with commits (in-process)."""
    ws = tmp_path / "demo"
    for k in EX.KEPT:
        if (EX.DOCS / "demo" / k).exists():
            (ws / k).parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(EX.DOCS / "demo" / k, ws / k) if (EX.DOCS / "demo" / k).is_dir() else shutil.copy2(EX.DOCS / "demo" / k, ws / k)
    (tmp_path / "gitconfig").write_text("[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.delenv("OPTLOG_DB_URL", raising=False)
    monkeypatch.setenv("OPTLOG_NOW", "2026-12-02T12:00:00Z")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(ws), "commit", "-qm", "record"], check=True)
    from optlog.service.context import Ctx

    ctx = Ctx.find(ws)
    ctx.on_notice = lambda t: None
    yield ctx
    ctx.close()


def test_item5_a_report_replaces_its_scopes_previous_file_and_plots(demo_ws):
    from optlog.service import hypotheses, report

    ctx = demo_ws
    ws = ctx.ws.root
    r1 = report.write(ctx)
    assert r1["file"] == "reports/report.md" and len(r1["plots"]) == 4 and r1["commit"]
    # pipeline-bubbles loses its prediction: the next report replaces report.md and drops its plot
    def drop(doc):  # type: ignore[no-untyped-def]
        doc.predictions.clear()
        doc.verdicts.clear()
        return {}

    hypotheses.mutate(ctx, "pipeline-bubbles", drop, event="test", subject="drop the prediction", body="")
    r2 = report.write(ctx)
    assert r2["file"] == "reports/report.md" and r2["deleted"] == ["reports/report-pipeline-bubbles.p1.svg"]
    assert not (ws / "reports" / "report-pipeline-bubbles.p1.svg").exists()
    shown = subprocess.run(["git", "-C", str(ws), "show", "--name-status", "--format=", "HEAD"], capture_output=True,
                           text=True).stdout
    assert "D\treports/report-pipeline-bubbles.p1.svg" in shown
    assert sorted(p.name for p in (ws / "reports").iterdir()) == sorted(Path(p).name for p in [r2["file"], *r2["plots"]])
    # --keep: a time-stamped file beside it, the current one untouched
    before = (ws / "reports" / "report.md").read_bytes()
    r3 = report.write(ctx, keep=True)
    assert r3["file"] == "reports/report-20261202-1200.md" and (ws / "reports" / "report.md").read_bytes() == before
    # scopes: a hypothesis (with its pivots and rivals), a time
    r4 = report.write(ctx, hypothesis="compute-bound", commit=False)
    text = (ws / r4["file"]).read_text()
    assert r4["file"] == "reports/report-compute-bound.md" and "Scope: hypothesis compute-bound" in text
    qs = _findings(text)["The questions"]
    assert [q.split(":")[0] for q in qs] == ["compute-bound", "pipeline-bubbles"]
    r5 = report.write(ctx, since="2030-01-01", commit=False)
    assert r5["file"] == "reports/report-since-20300101.md"
    assert "No runs recorded." in (ws / r5["file"]).read_text()
    with pytest.raises(BadInput) as e:
        report.write(ctx, since="yesterday-ish")
    assert e.value.field == "since"  # the verb's parameter; the CLI spells it --since (issue 35)
    with pytest.raises(BadInput):
        report.write(ctx, hypothesis="nope")


def test_item2_a_scaling_claim_draws_its_fit_and_the_claimed_exponents():
    """The verdict engine's fit at a level (core.scaling.Fit.as_dict) becomes the relation's fitted
    line, and the claimed exponents a fan through the fit's centre."""
    xs = [32.0, 32.0, 128.0, 128.0, 512.0, 512.0]
    pts = [[x, 10 * x ** 0.9 * (1.02 if i % 2 else 0.98)] for i, x in enumerate(xs)]
    fit = {"kind": "k", "k": 0.9, "intercept": 2.302585, "ci": [0.85, 0.95], "points": pts}
    rec = {"id": "h.p1", "status": "confirmed", "expect": "k(input_len) in [0.8, 1.2]", "metric": "median_ttft_ms",
           "levels": [{"level": {}, "quantity": "k(input_len)", "threshold": [0.8, 1.2], "estimate": 0.9, "fit": fit}]}
    rel = C.relation({"verdicts": [{"predictions": [rec]}]}, {"id": "h.p1", "expect": rec["expect"], "metric": "median_ttft_ms"})
    assert rel["per"] == "input_len" and rel["numeric"] and rel["log"] and rel["x"] == [32.0, 128.0, 512.0]
    assert rel["fit_label"] == "fitted: k = 0.90 [0.85, 0.95]"  # as the verdict writes numbers
    (x0, y0), (x1, y1) = rel["fit"][0], rel["fit"][-1]
    assert x0 == 32.0 and x1 == 512.0 and abs(y0 - 10 * 32 ** 0.9) < 1e-3 * y0
    low, high = (r["points"] for r in rel["region"])
    assert low[-1][1] < rel["fit"][-1][1] < high[-1][1]  # the fit lies inside the claimed fan at the far end
    assert [r["n"] for r in rel["rows"]] == [2, 2, 2]


def test_item2_an_exponent_is_drawn_on_log_log_axes_a_slope_on_linear_ones(tmp_path):
    """DESIGN §5: a fitted exponent k(LABEL) is a straight line on log–log axes, so the plot has a
    log y axis too (its ticks at measured magnitudes, spaced by ratio); a slope stays linear."""
    from optlog.render import plots

    xs = [64.0, 64.0, 128.0, 128.0, 256.0, 256.0, 512.0, 512.0]
    pts = [[x, 12 * x * (1.02 if i % 2 else 0.98)] for i, x in enumerate(xs)]
    fit = {"kind": "k", "k": 1.0, "intercept": math.log(12), "ci": [0.95, 1.05], "points": pts}
    rec = {"id": "h.p1", "status": "confirmed", "expect": "k(input_len) in [0.9, 1.1]", "metric": "median_ttft_ms",
           "levels": [{"level": {}, "quantity": "k(input_len)", "threshold": [0.9, 1.1], "estimate": 1.0, "fit": fit}]}
    rel = C.relation({"verdicts": [{"predictions": [rec]}]}, {"id": "h.p1", "expect": rec["expect"], "metric": "median_ttft_ms"})
    assert rel["log"] and rel["log_y"]  # x spans 8x here; an exponent is log-log whatever the span
    out = tmp_path / "k.svg"
    plots.per_level(str(out), rel)
    svg = out.read_text()
    assert ">median_ttft_ms (ms), log</text>" in svg and ">input_len (tokens), log scale</text>" in svg
    axis = svg.split('<g class="axis y', 1)[1].split('<g class="axis x', 1)[0]
    ys = [float(t.replace(",", "")) for t in re.findall(r'class="">([\d,.]+)</text>', axis)]
    assert len(ys) >= 4 and ys[-1] / ys[0] >= 4, ys  # the ticks name magnitudes over the measured range
    assert max(b / a for a, b in zip(ys, ys[1:])) <= 2.6, ys  # by ratio (1, 2, 5, 10...), not by a fixed step
    # the fitted line (the last series) is straight on these axes: its y steps evenly with log x
    fit_path = re.findall(r'<path d="M([^"]+)" class="line reactive nofill" />', svg)[-1]
    xy = [(float(a), float(b)) for a, b in zip(*[iter(" ".join(fit_path.replace("L", " ").split()).split())] * 2)]
    steps = [(y1 - y0) / (x1 - x0) for (x0, y0), (x1, y1) in zip(xy, xy[1:])]
    assert len(xy) > 10 and max(steps) - min(steps) < 1e-3 * max(abs(v) for v in steps), steps
    slope = {**rec, "expect": "slope(input_len) in [10, 14]",
             "levels": [{**rec["levels"][0], "quantity": "slope(input_len)", "threshold": [10, 14],
                         "fit": {**fit, "kind": "slope", "k": 12.0, "intercept": 0.0}}]}
    rel = C.relation({"verdicts": [{"predictions": [slope]}]}, {"id": "h.p1", "expect": slope["expect"],
                                                                 "metric": "median_ttft_ms"})
    assert not rel["log"] and not rel["log_y"]


def test_item3_the_real_sweeps_runs_table_leads_with_the_tested_metric(built):
    """The llama-server sweep of docs/examples/llama-ttft: one table for its 9 runs (every run was
    measured under load: a mark, not a split), the tested metric first, no raw.* or constant column."""
    text = (built["llama-ttft"] / "report.md").read_text()
    sec = text.split("\n## Other measurements\n", 1)[1].split("\n## ", 1)[0]
    (t,) = tables(sec)
    head = t[0]
    assert head[:5] == ["run", "marks", "status", "input_len", "repeat"]
    assert head[5] == "median_ttft_ms (ms) (tested)"
    assert not any(h.startswith("raw.") or h.startswith(("model", "server", "backend")) for h in head)
    assert len(t) == 10 and {r[1] for r in t[1:]} == {"loaded"}
    assert "Every run: backend=optlog, concurrency=1" in sec
    f = _findings(text)
    assert "varying input\\_len (32, 128, 512), 3 runs each" in f["What was measured"][0]
    # the estimate with the statistic the engine used (the launch interleaved its cycles: paired) and its interval
    assert re.search(r"input\\_len=512/input\\_len=32 median\\_ttft\\_ms = [\d.]+ \(geometric mean of per-cycle ratios; "
                     r"95% CI \\\[[\d.]+, [\d.]+\\\]\)", f["What was decided"][0])
    assert re.search(r"k\(input\\_len\) = [\d.]+ \(exponent", f["What was decided"][0])  # the scaling claim, too
