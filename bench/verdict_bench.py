"""Benchmark: `optlog verdict --all` over 10,000 runs (100 hypotheses, 5 repeats per config).

Each hypothesis compares two configs at 10 concurrency levels, 5 repeats each (100 runs per
hypothesis); half predict `a > b`, half `a / b in [lo, hi]` (so Mann–Whitney with Holm and the
bootstrap both run). The workspace is populated in-process through the service layer (one write
transaction for the runs, hypothesis files written directly and committed once).

Measured, each as the median of REPEATS runs of the real CLI in subprocesses:
  start-up   `optlog hypothesis list --json` on the same workspace (process start, imports, workspace,
             database, the hypothesis index sync), with the read cache off (OPTLOG_READ_CACHE=0): a
             cached answer skips all of that (a verdict that writes nothing leaves the cache valid)
  steady     `optlog verdict --all --json` when nothing changed (every prediction checked against the
             evidence: runs loaded, fingerprints compared, nothing recomputed or written)
and once: the first `verdict --all` (all 100 evaluated, written and committed), and `verdict --all`
after one new run (one prediction re-evaluated: scipy imported, one commit).
Evaluation beyond start-up = steady - start-up (target ≤ 0.5 s). Also an in-process breakdown,
including a full uncached evaluation of all 100 predictions.

    .venv/bin/python bench/verdict_bench.py [--repeats 5] [--baseline DIR]

`--baseline DIR`: also time start-up and steady with the optlog package of DIR (another checkout,
e.g. `git archive main optlog | tar -x -C DIR`), alternating with this checkout's in the same loop,
so the two are measured under the same load and compared as ratios.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N_HYP, LEVELS, REPEATS_PER_CONFIG = 100, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512), 5
TTT = "total_token_throughput"


CPU: dict[str, list[float]] = {}


def cli(root: Path, *args: str, tag: str | None = None, code: str | None = None) -> float:
    """Wall seconds of one CLI call; its CPU seconds (user+sys, children included) go to CPU[tag].
    CPU time is the steadier number on a shared, oversubscribed machine. `code`: the folder whose
    optlog package runs (PYTHONPATH), else this checkout's."""
    env = {**os.environ, "PYTHONPATH": code or str(Path(__file__).resolve().parents[1])}
    if args[:2] == ("hypothesis", "list"):
        env["OPTLOG_READ_CACHE"] = "0"  # start-up as the full CLI pays it, never a cached answer
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "optlog", *args], cwd=root, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"optlog {' '.join(args)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    CPU.setdefault(tag or args[0], []).append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return dt


def populate(root: Path) -> None:
    from optlog.core.hypothesis import HypothesisDoc, Prediction
    from optlog.core.timeutil import now_iso
    from optlog.service.context import Ctx
    from optlog.service.evidence import insert_run
    from optlog.service.workspace import init
    from optlog.store import hypfiles

    init(str(root), None)
    ctx = Ctx.find(root, actor="bench")
    rnd = random.Random(7)
    t = time.perf_counter()
    with ctx.db.write() as s:
        for h in range(N_HYP):
            base = rnd.uniform(500, 3000)
            ratio = rnd.uniform(0.3, 1.6)
            for c in LEVELS:
                for cfg, mean in ((f"h{h}-a", base * ratio), (f"h{h}-b", base)):
                    for r in range(REPEATS_PER_CONFIG):
                        insert_run(s, labels={"config": cfg, "concurrency": c, "dataset": "random", "repeat": r},
                                   metrics={TTT: mean * (1 + c / 1000) * rnd.gauss(1, 0.02)})
    print(f"inserted {N_HYP * len(LEVELS) * 2 * REPEATS_PER_CONFIG} runs in {time.perf_counter() - t:.1f} s")
    for h in range(N_HYP):
        expect = "a > b" if h % 2 == 0 else "a / b in [0.5, 1.2]"
        doc = HypothesisDoc(id=f"h{h:03d}", title=f"hypothesis {h}", created=now_iso(), created_by="bench",
                            predictions=[Prediction(id=f"h{h:03d}.p1", expect=expect, metric=TTT,
                                                    a={"config": f"h{h}-a"}, b={"config": f"h{h}-b"},
                                                    per="concurrency")])
        hypfiles.save(ctx.ws, doc, None)
    subprocess.run(["git", "add", "hypotheses"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "bench hypotheses"], cwd=root, check=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
                        "GIT_COMMITTER_EMAIL": "b@b"})
    ctx.close()


def add_one_run(root: Path) -> None:
    from optlog.service.context import Ctx
    from optlog.service.evidence import insert_run

    ctx = Ctx.find(root, actor="bench")
    with ctx.db.write() as s:
        insert_run(s, labels={"config": "h3-a", "concurrency": 64, "dataset": "random", "repeat": 9},
                   metrics={TTT: 1000.0})
    ctx.close()


def in_process(root: Path) -> dict[str, float]:
    from optlog.core import verdict as V
    from optlog.service import hypotheses
    from optlog.service.context import Ctx
    from optlog.service.verdicts import _metric_names, load_evidence

    ctx = Ctx.find(root, actor="bench")
    out = {}
    t = time.process_time()
    docs = hypotheses.sync(ctx)
    out["sync"] = time.process_time() - t
    preds = [p for d in docs.values() for p in d.predictions]
    t = time.process_time()
    ev = load_evidence(ctx, _metric_names(preds))
    out["load_runs"] = time.process_time() - t
    t = time.process_time()
    import scipy.stats  # noqa: F401
    out["import_scipy_stats"] = time.process_time() - t
    t = time.process_time()
    V.evaluate(preds, ev, {})
    out["evaluate_all_uncached"] = time.process_time() - t
    cached = {rec["id"]: rec for d in docs.values() if d.verdicts for rec in d.verdicts[-1].predictions}
    t = time.process_time()
    V.evaluate(preds, ev, {}, cached)
    out["evaluate_all_cached"] = time.process_time() - t
    ctx.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--keep", help="populate here and keep it (reused when it exists)")
    ap.add_argument("--baseline", help="a folder holding another optlog package to time alongside (ratios)")
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="optlog-verdict-bench-"))
    root = tmp / "ws"
    if args.keep and (root / "optlog.yaml").exists():
        print(f"reusing {root}")
    else:
        populate(root)
    cli(root, "hypothesis", "list", "--json")  # index the files once
    first = cli(root, "verdict", "--all", "--json", tag="first")
    start, steady = [], []
    if args.baseline:  # its own verdicts are the same: nothing to commit for either
        cli(root, "verdict", "--all", "--json", tag="base_first", code=args.baseline)
    for _ in range(args.repeats):
        start.append(cli(root, "hypothesis", "list", "--json", tag="start"))
        steady.append(cli(root, "verdict", "--all", "--json", tag="steady"))
        if args.baseline:
            cli(root, "hypothesis", "list", "--json", tag="base_start", code=args.baseline)
            cli(root, "verdict", "--all", "--json", tag="base_steady", code=args.baseline)
    add_one_run(root)
    one_new = cli(root, "verdict", "--all", "--json", tag="one_new")
    s, v = statistics.median(start), statistics.median(steady)
    print(f"start-up (hypothesis list), median of {args.repeats}: {s:.3f} s  {sorted(round(x, 3) for x in start)}")
    print(f"verdict --all, nothing changed, median:  {v:.3f} s  {sorted(round(x, 3) for x in steady)}")
    print(f"evaluation beyond start-up:              {v - s:.3f} s  (ratio verdict/start-up {v / s:.2f})")
    print(f"first verdict --all (100 verdicts written and committed): {first:.2f} s")
    print(f"verdict --all after one new run (1 prediction re-evaluated, 1 commit): {one_new:.3f} s "
          f"(beyond start-up {one_new - s:.3f} s)")
    cs, cv = statistics.median(CPU["start"]), statistics.median(CPU["steady"])
    print(f"CPU s (user+sys): start-up {cs:.3f}, verdict steady {cv:.3f} (beyond start-up {cv - cs:.3f}), "
          f"first {CPU['first'][0]:.2f}, after one new run {CPU['one_new'][0]:.3f} (beyond start-up "
          f"{CPU['one_new'][0] - cs:.3f})")
    if args.baseline:
        bs, bv = statistics.median(CPU["base_start"]), statistics.median(CPU["base_steady"])
        print(f"baseline {args.baseline}, CPU s medians: start-up {bs:.3f}, verdict steady {bv:.3f} (beyond "
              f"start-up {bv - bs:.3f}); this checkout / baseline: beyond start-up {(cv - cs) / (bv - bs):.2f}, "
              f"verdict steady {cv / bv:.2f}, start-up {cs / bs:.2f}")
    ip = in_process(root)
    print("in-process CPU: " + ", ".join(f"{k} {x * 1000:.0f} ms" for k, x in ip.items()))


if __name__ == "__main__":
    main()
