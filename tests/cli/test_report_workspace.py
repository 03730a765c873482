"""Issue 17 item 5: the report follows the workspace, not the case study — a plot per prediction
with `--per` (axes named, every measured run a point, so repeats show their spread), no sections for
labels the workspace does not use, links only to files that exist, clean markdown (markdown-it-py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from tests._plans import headings, tokens
from tests._verdicts import repeats, seed_runs

NOW = {"OPTLOG_NOW": "2026-03-01T10:00:00Z"}


def _gemm_workspace(ws):
    rows = []
    for m in (1, 16, 256, 2048):
        for kernel, f in (("cutlass", 1.5), ("cublas", 1.0)):
            rows += repeats({"bench": "gemm", "kernel": kernel, "m": m}, "tflops", [m * f * (1 + i / 50) for i in range(5)])
    rows += repeats({"bench": "gemm", "kernel": "cutlass", "phase": "decode"}, "gpu_util", [90, 91, 92])
    seed_runs(ws, rows)
    ws.cli("hyp", "add", "CUTLASS beats cuBLAS at every M", "--id", "cutlass")
    ws.cli("predict", "cutlass", "--expect", "a > b", "--metric", "tflops", "--a", "kernel=cutlass",
           "--b", "kernel=cublas", "--per", "m")
    ws.cli("predict", "cutlass", "--expect", "a < 2000", "--metric", "tflops", "--a", "kernel=cutlass", "--per", "m")
    ws.cli("verdict")


def _links(text):
    toks = tokens(text)
    links = [c.attrs["href"] for t in toks if t.type == "inline" for c in t.children if c.type == "link_open"]
    imgs = [c.attrs["src"] for t in toks if t.type == "inline" for c in t.children if c.type == "image"]
    return toks, links, imgs


def _assert_clean_and_resolving(ws, rel):
    text = (ws.root / rel).read_text()
    toks, links, imgs = _links(text)
    assert not [t for t in toks if t.type == "html_block"], "raw HTML blocks do not render the same on GitHub"
    for href in links + imgs:
        if "://" in href or href.startswith("#"):
            continue
        assert ((ws.root / rel).parent / href).is_file(), f"{rel} links {href}, which does not exist"
    return text, links, imgs


def test_a_plot_per_prediction_from_the_workspaces_own_labels(ws):
    _gemm_workspace(ws)
    r = ws.j("report", "--out", "reports/gemm.md", env=NOW)
    assert sorted(r["plots"]) == ["reports/gemm-cutlass.p1.svg", "reports/gemm-cutlass.p2.svg"]
    text, links, imgs = _assert_clean_and_resolving(ws, r["file"])
    assert sorted(imgs) == ["gemm-cutlass.p1.svg", "gemm-cutlass.p2.svg"]
    hs = [h for _, h in headings(text)]
    assert "Throughput by configuration" not in hs and "Per-user and per-GPU throughput" not in hs
    assert "No runs labelled with both config and concurrency" not in text
    svg = (ws.root / "reports/gemm-cutlass.p1.svg").read_text()
    ET.fromstring(svg)
    titles = {t.text for t in ET.fromstring(svg).iter() if t.tag.endswith("text") and "title" in (t.get("class") or "")}
    assert {"m, log scale", "tflops (TFLOPS)"} <= titles, titles  # both axes named, the metric with its unit
    # every measured run is a point: 4 levels × 5 repeats × 2 groups, plus the medians joined by a line
    dots = svg.count('class="dot reactive tooltip-trigger"')
    assert dots == 40, dots
    assert "runs: cutlass" in svg and "median: cublas" in svg  # groups named as the verdict names them
    # the claimed region: a > b is b's line; the one-group prediction draws the constant it is judged against
    assert "claimed: cutlass &gt; cublas" in svg
    p2 = (ws.root / "reports/gemm-cutlass.p2.svg").read_text()
    assert "claimed: a &lt; 2000" in p2
    # same data, same clock: same bytes
    first = {p: (ws.root / p).read_bytes() for p in [r["file"], *r["plots"]]}
    assert ws.j("report", "--out", "reports/gemm.md", env=NOW)["commit"] is None
    assert {p: (ws.root / p).read_bytes() for p in first} == first


def test_plan_links_appear_once_the_plan_files_exist(ws):
    _gemm_workspace(ws)
    ws.cli("plan", "add", "Use CUTLASS for decode GEMMs", "--gain", "10-30%", "--effort", "S", "--confidence", "0.6",
           "--needs", "cutlass")
    r = ws.j("report", "--out", "reports/a.md", env=NOW)
    text, links, _ = _assert_clean_and_resolving(ws, r["file"])
    assert not [h for h in links if "glb5improvement" in h] and "01 Use CUTLASS for decode GEMMs" in text
    ws.cli("plan", "render")
    r = ws.j("report", "--out", "reports/a.md", env=NOW)
    _, links, _ = _assert_clean_and_resolving(ws, r["file"])
    assert "../glb5improvement/glb5improvement-01.md" in links


def test_committed_case_study_report_and_plans_parse_and_resolve():
    """The repository's own report and plan index: no raw HTML blocks, every relative link and image
    names a file that is committed beside it."""
    root = Path(__file__).resolve().parents[2]
    for rel in ("reports/glm5-session.md", "glb5improvement/README.md"):
        text = (root / rel).read_text(encoding="utf-8")
        toks, links, imgs = _links(text)
        assert not [t for t in toks if t.type == "html_block"], rel
        local = [h for h in links + imgs if "://" not in h and not h.startswith("#")]
        assert local, rel
        for href in local:
            assert ((root / rel).parent / href).is_file(), f"{rel} links {href}, which does not exist"


def test_the_telemetry_table_shows_one_figure_per_headline_metric_and_the_labels_that_vary(ws):
    """A GPU run records ~90 telemetry statistics; the report's table listed every one (unreadable
    on GitHub, seen in the H200 tune study). It shows one mean per headline metric, and the labels
    all rows share once above it."""
    stats = ["", "_max", "_mean", "_p5", "_p50", "_p95"]
    for par, power in ((16, 300.0), (64, 450.0)):
        metrics = [f"gpu_power_w{s}={power}" for s in stats] + [f"gpu_temp_c{s}=40" for s in stats] + \
                  [f"tensor_active{s}=3" for s in stats] + ["output_throughput=100"]
        args = ["run", "record", "--label", "server=llama.cpp", "--label", "model=m", "--label", f"parallel={par}"]
        for m in metrics:
            args += ["--metric", m]
        ws.cli(*args)
    text = (ws.root / ws.j("report", "--out", "reports/t.md", env=NOW)["file"]).read_text()
    section = text.split("## Telemetry and energy", 1)[1].split("\n## ", 1)[0]
    header = next(line for line in section.splitlines() if line.startswith("| labels"))
    assert header == "| labels | gpu\\_power\\_w | tensor\\_active | runs |", header
    assert "All rows: model=m, server=llama.cpp." in section and "| parallel=16 | 300 | 3 | 1 |" in section, section
