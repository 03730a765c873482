"""Benchmark: decisions at scale (issue 34.6): 2,000 hypotheses × 100,000 runs, 200 predictions.

Targets: `verdict --all` ≤ 60 s and < 1 GB; a second `verdict --all` ≤ 10 s and no commit;
`report` ≤ 30 s; `run list` without a limit bounded (time and bytes printed).

Each hypothesis owns RUNS/HYP runs (two configs × 5 concurrency levels × repeats); the first
PRED hypotheses carry one prediction each (`a > b` or a ratio band, alternately). The workspace is
populated in-process (one write transaction for the runs, hypothesis files written directly and
committed once, as bench/verdict_bench.py does); every measurement is the real CLI in a subprocess,
with its peak RSS (ru_maxrss of the child).

    .venv/bin/python bench/scale_bench.py [--hyp 2000 --runs 100000 --pred 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TTT = "total_token_throughput"
LEVELS = (1, 8, 64, 256, 512)
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def cli(root: Path, *args: str, timeout: float = 1800) -> tuple[float, float, int, int]:
    """(wall s, peak RSS MB, exit code, stdout bytes) of one CLI call."""
    t = time.perf_counter()
    code = f"import resource,subprocess,sys; p=subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, " \
           f"stderr=subprocess.DEVNULL); sys.stderr.write(f'{{len(p.stdout)}} {{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}}\\n'); " \
           f"sys.exit(p.returncode)"
    try:
        p = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "optlog", *args], cwd=root,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t, float("nan"), -1, 0
    dt = time.perf_counter() - t
    nbytes, rss_kb = (int(x) for x in p.stderr.split()[-2:])
    return dt, rss_kb / 1024, p.returncode, nbytes


def populate(root: Path, n_hyp: int, n_runs: int, n_pred: int) -> None:
    from optlog.core.hypothesis import HypothesisDoc, Prediction
    from optlog.core.timeutil import now_iso
    from optlog.service.context import Ctx
    from optlog.service.evidence import insert_run
    from optlog.service.workspace import init
    from optlog.store import hypfiles

    init(str(root), None)
    ctx = Ctx.find(root, actor="bench")
    rnd = random.Random(7)
    per_h = max(1, n_runs // n_hyp)
    t = time.perf_counter()
    with ctx.db.write() as s:
        n = 0
        for h in range(n_hyp):
            base, ratio = rnd.uniform(500, 3000), rnd.uniform(0.3, 1.6)
            for i in range(per_h):
                cfg, c, r = ("a", "b")[i % 2], LEVELS[(i // 2) % len(LEVELS)], i // (2 * len(LEVELS))
                mean = base * (ratio if cfg == "a" else 1)
                insert_run(s, labels={"config": f"h{h}-{cfg}", "concurrency": c, "repeat": r},
                           metrics={TTT: mean * rnd.gauss(1, 0.02)})
                n += 1
    print(f"inserted {n} runs in {time.perf_counter() - t:.1f} s", flush=True)
    for h in range(n_hyp):
        preds = []
        if h < n_pred:
            preds = [Prediction(id=f"h{h:04d}.p1", expect="a > b" if h % 2 == 0 else "a / b in [0.5, 1.2]",
                                metric=TTT, a={"config": f"h{h}-a"}, b={"config": f"h{h}-b"}, per="concurrency")]
        hypfiles.save(ctx.ws, HypothesisDoc(id=f"h{h:04d}", title=f"hypothesis {h}", created=now_iso(),
                                            created_by="bench", predictions=preds), None)
    subprocess.run(["git", "add", "hypotheses"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "bench hypotheses"], cwd=root, check=True, env={**os.environ, **GIT_ENV})
    ctx.close()


def commits(root: Path) -> int:
    return int(subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True,
                              text=True).stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hyp", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--pred", type=int, default=200)
    ap.add_argument("--keep", help="populate here and keep it (reused when it exists)")
    a = ap.parse_args()
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="optlog-scale-"))
    if not (root / "optlog.yaml").exists():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        populate(root, a.hyp, a.runs, a.pred)
    print(f"workspace {root}: {a.hyp} hypotheses, {a.runs} runs, {a.pred} predictions", flush=True)
    rows = []
    for name, args, target in (("verdict --all (first)", ("verdict", "--all", "--json"), "≤ 60 s, < 1 GB"),
                               ("verdict --all (second)", ("verdict", "--all", "--json"), "≤ 10 s, no commit"),
                               ("report", ("report", "--json"), "≤ 30 s"),
                               ("run list (no limit)", ("run", "list"), "bounded"),
                               ("run list --json (no limit)", ("run", "list", "--json"), "bounded"),
                               ("hypothesis list", ("hypothesis", "list"), "seconds")):
        c0 = commits(root)
        dt, rss, code, nbytes = cli(root, *args)
        rows.append((name, dt, rss, code, nbytes, commits(root) - c0, target))
        print(f"{name:28s} {dt:8.1f} s  {rss:7.0f} MB  exit {code}  {nbytes / 1e6:6.2f} MB out  "
              f"+{commits(root) - c0} commits  (target {target})", flush=True)


if __name__ == "__main__":
    main()
