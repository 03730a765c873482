"""Issue 17 item 3: `optlog compare` shows each cell's median, n and spread, never pools runs that
differ in a label the table does not show, and refuses unknown names with the nearest known one."""

from __future__ import annotations

import sys

import yaml

from tests._verdicts import repeats, seed_runs


def test_cells_show_median_n_and_iqr_and_hidden_labels_split_the_rows(ws):
    rows = []
    for m in (1, 16, 2048):
        for kernel, f in (("cutlass", 1.5), ("cublas", 1.0)):
            rows += repeats({"bench": "gemm", "kernel": kernel, "m": m}, "tflops", [m * f + i for i in range(4)])
    seed_runs(ws, rows + [({"bench": "gemm", "kernel": "cutlass", "m": 4096}, {"tflops": 9000.0})])
    r = ws.cli("compare", "--metric", "tflops", "--by", "kernel", "--json")
    d = r.json
    assert d["split_by"] == ["m"] and "rows split by m" in r.err
    assert [row["level"] for row in d["rows"]] == [{"m": 1}, {"m": 16}, {"m": 2048}, {"m": 4096}]
    m16 = d["rows"][1]
    assert m16["values"] == {"cublas": 17.5, "cutlass": 25.5} and m16["n"] == {"cublas": 4, "cutlass": 4}
    assert m16["spread"]["cutlass"] == [24.75, 26.25] and abs(m16["ratios"]["cutlass"] - 25.5 / 17.5) < 1e-3
    lone = d["rows"][3]
    assert lone["n"] == {"cutlass": 1} and lone["spread"] == {"cutlass": None}  # n < 3: no interval
    out = ws.cli("compare", "--metric", "tflops", "--by", "kernel").out
    assert "median tflops (TFLOPS; higher is better) by kernel" in out and "25.5 (n=4, IQR 24.8–26.2)" in out and "m=2048" in out
    # with the label shown as --per, nothing is hidden: no split
    d = ws.j("compare", "--metric", "tflops", "--by", "kernel", "--per", "m")
    assert d["split_by"] == [] and len(d["rows"]) == 4
    # a label that only goes with the group (tp with config) is not a hidden difference
    seed_runs(ws, repeats({"config": "tp8", "tp": 8}, "ttt", [700, 710, 690])
              + repeats({"config": "tp4pp2", "tp": 4}, "ttt", [213, 220, 210]))
    d = ws.j("compare", "--metric", "ttt", "--by", "config")
    assert d["split_by"] == [] and d["rows"][0]["values"] == {"tp4pp2": 213, "tp8": 700}


def test_unknown_metric_or_label_is_an_error_with_a_suggestion(ws):
    seed_runs(ws, repeats({"kernel": "cutlass", "m": 16}, "tflops", [1, 2, 3]))
    for args, field, hint in ((["--metric", "tflop", "--by", "kernel"], "--metric", "did you mean 'tflops'?"),
                              (["--metric", "tflops", "--by", "kernl"], "--by", "did you mean 'kernel'?"),
                              (["--metric", "tflops", "--by", "kernel", "--per", "mm"], "--per", "did you mean 'm'?")):
        r = ws.cli("compare", *args, "--json", check=2)
        assert r.json["error"]["field"] == field and hint in r.json["error"]["message"], r.json
        assert "Traceback" not in r.err
    r = ws.cli("compare", "--metric", "tflops", "--by", "kernel", "--where", "m > 100", "--json", check=2)
    assert "no counting run has both" in r.json["error"]["message"]


def test_compare_splits_launched_probe_runs_by_their_shape(ws):
    """Runs launched with the GEMM probe over two shapes: compared by op, split by m (a parser label)."""
    cmd = (f"{sys.executable} -m optlog.probes.gemm --m {{{{ m }}}} --k 64 --n 64 --dtype fp32 --device cpu "
           "--repeats 2 --output {{ out }}/result.json")
    (ws.root / "runs" / "shapes.yaml").write_text(yaml.safe_dump(
        {"name": "shapes", "bench": {"cmd": cmd, "parser": "probe"}, "matrix": {"m": [8, 32]}, "repeats": 3},
        sort_keys=False))
    ws.j("run", "launch", "runs/shapes.yaml")
    r = ws.cli("compare", "--metric", "flops", "--by", "op", "--json")
    d = r.json
    assert d["split_by"] == ["m"] and [row["level"] for row in d["rows"]] == [{"m": 8}, {"m": 32}]
    assert [row["values"]["gemm"] for row in d["rows"]] == [2 * 8 * 64 * 64, 2 * 32 * 64 * 64]
    assert all(row["n"] == {"gemm": 3} and row["spread"]["gemm"] is not None for row in d["rows"])


def test_compare_never_warns_about_the_label_it_compares(ws, monkeypatch):
    """Issue 31 item 5: `--by input_len` warned "input_len differs (128, 512)", the very label compared
    (workload and software labels must agree across groups, except the one that makes the groups)."""
    from tests._face import face, ok

    seed_runs(ws, repeats({"input_len": 128, "model": "a"}, "ttft_ms", [10, 11, 12])
              + repeats({"input_len": 512, "model": "a"}, "ttft_ms", [30, 31, 32])
              + repeats({"input_len": 128, "model": "b"}, "ttft_ms", [20, 21, 22]))
    with face(ws, monkeypatch) as call:
        d = ok(call("compare", {"metric": "ttft_ms", "by": "input_len", "where": "model == 'a'"}))
        assert d["warnings"] == [] and d["rows"][0]["values"] == {"128": 11, "512": 31}
        d = ok(call("compare", {"metric": "ttft_ms", "by": "model", "per": "input_len"}))
        assert d["warnings"] == [], d
    seed_runs(ws, repeats({"model": "a", "engine_version": "1"}, "tps", [1, 2, 3])
              + repeats({"model": "b", "engine_version": "2"}, "tps", [4, 5, 6]))
    with face(ws, monkeypatch) as call:  # any other such label still must agree
        d = ok(call("compare", {"metric": "tps", "by": "model"}))
        assert [w for w in d["warnings"] if "differs" in w] == ["engine_version differs (1, 2)"], d
