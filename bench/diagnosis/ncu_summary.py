"""Summarise Nsight Compute's raw CSV of the decode mat-vec kernels (bench/diagnosis/ncu43.sh).

Each figure is over the profiled kernels, weighted by their duration (sums where the metric is a count):
what an engineer reads to tell a memory-bound kernel (DRAM near its peak, warps stalled on loads) from one
bound by its instructions (issue slots or a pipe near 100 %, math-pipe-throttle stalls) or by latency
(loads in flight too few: long-scoreboard stalls with DRAM well under its peak and low occupancy).

    python3 bench/diagnosis/ncu_summary.py docs/gpu-proof/diagnosis/2026-12-06-h100/ncu-*.csv
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROWS = [
    ("kernel time, sum (µs)", "gpu__time_duration.sum", 1e-3),
    ("DRAM read (MB)", "dram__bytes_read.sum", 1e-6),
    ("DRAM throughput (% of peak)", "dram__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("SM throughput (% of peak)", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("issue slots busy (%)", "sm__issue_active.avg.pct_of_peak_sustained_active", 1),
    ("achieved occupancy (% of max warps)", "sm__warps_active.avg.pct_of_peak_sustained_active", 1),
    ("ALU pipe, integer (% of peak)", "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", 1),
    ("FMA pipe (% of peak)", "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active", 1),
    ("LSU pipe (% of peak)", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active", 1),
    ("registers per thread", "launch__registers_per_thread", 1),
]
STALL = "smsp__average_warps_issue_stalled_"


def summarise(path: Path) -> tuple[dict[str, float], dict[str, float], int, set[str]]:
    rows = list(csv.reader(path.open()))
    hi = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    head, data = rows[hi], rows[hi + 2:]
    num = lambda r, c: float(r[head.index(c)].replace(",", ""))  # noqa: E731
    dur = [num(r, "gpu__time_duration.sum") for r in data]
    total = sum(dur)
    agg = lambda c: (sum(num(r, c) for r in data) if c.endswith(".sum")  # noqa: E731
                     else sum(num(r, c) * d for r, d in zip(data, dur)) / total)
    rows_out = {name: agg(col) * k for name, col, k in ROWS}
    stalls = {c[len(STALL):].split("_per_issue")[0]: agg(c) for c in head if c.startswith(STALL)}
    names = {r[head.index("Kernel Name")].split("(")[0] for r in data}
    return rows_out, stalls, len(data), names


def main(argv: list[str]) -> int:
    got = {Path(p).stem.removeprefix("ncu-"): summarise(Path(p)) for p in argv}
    keys = list(got)
    print("| figure | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys))
    for name, _, _ in ROWS:
        print(f"| {name} | " + " | ".join(f"{got[k][0][name]:,.1f}" for k in keys) + " |")
    rate = {k: got[k][0]["DRAM read (MB)"] / got[k][0]["kernel time, sum (µs)"] * 1e3 for k in keys}  # MB/µs → GB/s
    print("| DRAM read rate (GB/s) | " + " | ".join(f"{rate[k]:,.0f}" for k in keys) + " |")
    print("\nwarp stalls per issued instruction (duration-weighted), largest first:")
    for k in keys:
        st = sorted(got[k][1].items(), key=lambda kv: -kv[1])
        tot = sum(v for n, v in st if n != "selected")
        print(f"  {k} ({got[k][2]} kernels: {', '.join(sorted(got[k][3]))}): " + ", ".join(
            f"{n} {v:.2f} ({v / tot:.0%})" for n, v in st[:5] if n != "selected"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
