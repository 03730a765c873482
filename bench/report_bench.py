#!/usr/bin/env python3
"""How long `optlog report` takes over 10,000 runs (target: ≤ 2 s), against a baseline measured in
the same run: reading the same 10,000 runs with the foundation's `evidence.list_runs`.

    .venv/bin/python bench/report_bench.py [--runs 10000] [--repeats 5]

Prints a markdown table (medians of the repeats) for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def populate(ws_path: Path, n: int) -> None:
    from optlog.paths import Workspace
    from optlog.service import evidence, hypotheses, plans
    from optlog.service.context import Ctx
    from optlog.service.workspace import init

    init(ws_path, None, "bench")
    ctx = Ctx(Workspace(ws_path.resolve()), "bench")
    hypotheses.add(ctx, "Communication-bound", hid="comm-bound")
    hypotheses.add(ctx, "Compute-bound", hid="compute-bound", parent="comm-bound")
    configs = ["tp8", "tp4pp2", "ep8", "tp8-graphs"]
    levels = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    with ctx.db.write() as s:
        for i in range(n):
            c = configs[i % len(configs)]
            lv = levels[(i // len(configs)) % len(levels)]
            rep = i // (len(configs) * len(levels))
            tput = 100.0 * lv ** 0.7 * (1 + (i % 7) / 100)
            evidence.insert_run(
                s, labels={"config": c, "concurrency": lv, "repeat": rep, "tp": 8, "model": "glm-5-nvfp4"},
                metrics={"total_token_throughput": tput * 3, "output_throughput": tput, "median_tpot_ms": 20 + lv / 10,
                         "gpu_power_w_mean": 250 + lv / 4, "energy_j": 1000 + i % 100, "tokens_per_joule": 2.5},
                hypothesis_id="comm-bound" if i % 10 == 0 else None)
    for k in range(5):
        plans.add(ctx, f"Plan {k}", gain=f"{k + 1}-{k + 10}%", effort="SML"[k % 3], confidence=0.5,
                  needs=["compute-bound"] if k % 2 else ["comm-bound"])
    ctx.close()


def timed(fn, repeats: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of this process and its children)."""
    import resource

    def cpu() -> float:
        a = resource.getrusage(resource.RUSAGE_SELF)
        b = resource.getrusage(resource.RUSAGE_CHILDREN)
        return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

    ws, cs = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), cpu()
        fn()
        ws.append(time.perf_counter() - t0)
        cs.append(cpu() - c0)
    return statistics.median(ws), statistics.median(cs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    os.environ.setdefault("OPTLOG_ACTOR", "bench")
    with tempfile.TemporaryDirectory() as td:
        ws = Path(td) / "ws"
        env = dict(os.environ, GIT_CONFIG_GLOBAL=str(Path(td) / "gitconfig"))
        (Path(td) / "gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@example.com\n")
        os.environ.update(env)
        populate(ws, a.runs)

        from optlog.paths import Workspace
        from optlog.service import evidence, report
        from optlog.service.context import Ctx

        ctx = Ctx(Workspace(ws.resolve()), "bench")
        base = timed(lambda: evidence.list_runs(ctx), a.repeats)
        warm = timed(lambda: report.write(ctx, "reports/bench.md", commit=False), a.repeats)
        cli = timed(lambda: subprocess.run([sys.executable, "-m", "optlog", "-C", str(ws), "report", "--out",
                                            "reports/cli.md"], check=True, capture_output=True, env=env), a.repeats)
        startup = timed(lambda: subprocess.run([sys.executable, "-m", "optlog", "-C", str(ws), "plan", "list"],
                                               check=True, capture_output=True, env=env), a.repeats)
        size = (ws / "reports" / "cli.md").stat().st_size
        ctx.close()
    print(f"runs: {a.runs}, repeats: {a.repeats} (medians), report size {size:,} bytes, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
    print("| what | wall s | CPU s | CPU ratio to baseline |")
    print("| --- | --: | --: | --: |")
    rows = [("baseline: `evidence.list_runs` (read all runs)", base),
            ("`report.write` in-process (warm; markdown + 2 SVG plots)", warm),
            ("`optlog report` CLI, cold process, incl. git commit", cli),
            ("`optlog plan list` CLI, cold process (start-up reference)", startup)]
    for name, (w, c) in rows:
        print(f"| {name} | {w:.3f} | {c:.3f} | {c / base[1]:.2f} |")


if __name__ == "__main__":
    main()
