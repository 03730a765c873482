"""Issue 30's GPU proof: one table from the `optlog --json run show` files the pipeline wrote.

    python bench/diagnosis/results.py OUT_DIR      # OUT_DIR/run-*.json → markdown on stdout
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def fmt(v: object, nd: int = 1) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)):
        return f"{v:,.{nd}f}" if abs(v) < 1e6 else f"{v:.3g}"
    return "" if v is None else str(v)


def main(out: Path) -> None:
    rows = []
    for p in sorted(out.glob("run-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        try:
            r = json.loads(p.read_text())
        except ValueError:
            continue
        m, lab = r.get("metrics") or {}, r.get("labels") or {}
        d = (r.get("telemetry") or {}).get("diagnosis") or {}
        n, c = d.get("numbers") or {}, d.get("counters") or {}
        mf = ((r.get("environment") or {}).get("model_facts") or {})
        stored = next((k[6:] for k in ("bound_compute", "bound_memory", "bound_latency") if m.get(k) == 1.0), None)
        rows.append({
            "run": r.get("id"), "what": lab.get("model") or f"gemm m={lab.get('m')}", "conc": lab.get("concurrency", ""),
            "tok/s": m.get("output_throughput"), "TFLOP/s": m.get("tflops"),
            "active_params": m.get("model_active_params"), "param_bytes": m.get("model_param_bytes"),
            "facts from": (mf.get("sources") or {}).get("active_params", ""),
            "mem %": 100 * n["mem_frac"] if "mem_frac" in n else None,
            "compute %": 100 * n["compute_frac"] if "compute_frac" in n else None,
            "DRAM % steady": m.get("dram_bw_util_steady"), "DRAM % point": m.get("dram_bw_util"),
            "DRAM % cal": c.get("dram_bw_util_cal"), "tensor %": c.get("tensor_active"), "SM %": c.get("sm_active"),
            "stored": stored, "now": d.get("bound"), "basis": d.get("basis"),
            "evidence": d.get("evidence"), "window": d.get("window"), "scale": d.get("scale"),
            "would change its mind": d.get("would_change_its_mind"), "why": d.get("reason")})
    cols = ["run", "what", "conc", "tok/s", "TFLOP/s", "active_params", "param_bytes", "mem %", "compute %",
            "DRAM % steady", "DRAM % point", "DRAM % cal", "tensor %", "SM %", "stored", "now", "basis"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(fmt(r[k], 2 if k == "param_bytes" else 1) for k in cols) + " |")
    print()
    for r in rows:
        print(f"### run {r['run']}: {r['what']} c={r['conc']} → {r['now']}-bound ({r['basis']})")
        for k in ("why", "evidence", "window", "scale", "would change its mind", "facts from"):
            if r[k]:
                print(f"- **{k}**: {r[k]}")
        print()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
