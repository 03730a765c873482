#!/usr/bin/env python3
"""optlog tune, measured: how many trials a sampler needs to come within 5 % of the grid's best, and
optlog's own overhead per trial.

    python bench/tune_bench.py search [--trials 40] [--seeds 3]   # trials to within 5 % of the grid's best
    python bench/tune_bench.py overhead [--trials 30] [--repeats 3]  # optlog's seconds per trial
    … [--db-url postgresql://…/postgres]    # on PostgreSQL (what workers on several hosts share)

`search`: a space of 10 × 6 × 2 = 120 configurations (two integer knobs and a choice) whose bench
(a tiny Python command) reports a known function: throughput peaks inside the space, latency grows
with both knobs, and `p99_ttft_ms <= 90` cuts the space. The grid's best is the best feasible point
of that function (what a brute-force grid of 120 trials finds); each sampler (TPE, random) runs
`--trials` trials through the real CLI (`optlog tune … --remeasure 0`) per seed, and the figure is
the first trial whose best-so-far feasible throughput is within 5 % of the grid's best (median over
the seeds; "not reached" counts as more than --trials).

`overhead`: a study of `--trials` trials whose bench is trivial (`/bin/sh` writing one number),
against a plain loop running the same commands with subprocess.run. Overhead per trial = (tune's
wall time − the loop's) / trials, the CLI's start-up included; repeats alternate, medians reported.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

X, Y, MODES = range(1, 11), range(1, 7), ("a", "b")
LIMIT = 90.0
FORMULA = ("x, y, m = {{ x }}, {{ y }}, '{{ mode }}'\n"
           "import json, os\n"
           "tp = 100 - 8 * (x - 7) ** 2 - 10 * (y - 4) ** 2 + (6 if m == 'b' else 0)\n"
           "lat = 3 * x * y + (20 if m == 'b' else 0)\n"
           "json.dump({'output_throughput': tp, 'p99_ttft_ms': lat}, open(os.path.join('{{ out }}', 'result.json'), 'w'))")


def f(x: int, y: int, m: str) -> tuple[float, float]:
    return 100 - 8 * (x - 7) ** 2 - 10 * (y - 4) ** 2 + (6 if m == "b" else 0), 3 * x * y + (20 if m == "b" else 0)


def grid_best() -> float:
    return max(tp for x in X for y in Y for m in MODES for tp, lat in [f(x, y, m)] if lat <= LIMIT)


def _workspace(tmp: Path, db_url: str | None = None) -> tuple[Path, dict[str, str]]:
    """A fresh workspace: SQLite, or with `db_url` a database of its own on that PostgreSQL server
    (dropped by `_drop`), as remote workers (`--on`) need."""
    env = dict(os.environ, OPTLOG_ACTOR="bench", GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"),
               XDG_RUNTIME_DIR=str(tmp))
    env.pop("OPTLOG_DB_URL", None)
    if db_url:
        import psycopg

        name = f"optlog_tune_bench_{os.getpid()}"
        with psycopg.connect(db_url, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}"')
            c.execute(f'CREATE DATABASE "{name}"')
        env["OPTLOG_DB_URL"] = db_url.rsplit("/", 1)[0] + "/" + name
    (tmp / "gitconfig").write_text("[user]\n\tname = B\n\temail = b@example.com\n")
    subprocess.run([sys.executable, "-m", "optlog", "init", str(tmp / "ws")], env=env, check=True, capture_output=True)
    return tmp / "ws", env


def _drop(env: dict[str, str], db_url: str | None) -> None:
    if db_url and env.get("OPTLOG_DB_URL"):
        import psycopg

        with psycopg.connect(db_url, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{env["OPTLOG_DB_URL"].rsplit("/", 1)[1]}" WITH (FORCE)')


def _spec(ws: Path, name: str, search: dict[str, Any], cmd: list[str]) -> str:
    import yaml

    d = {"name": name, "search": search, "bench": {"cmd": cmd}, "telemetry": False}
    (ws / "runs" / f"{name}.yaml").write_text(yaml.safe_dump(d, sort_keys=False, width=10000))
    return f"runs/{name}.yaml"


def search(a: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="optlog-tune-bench-"))
    env: dict[str, str] = {}
    try:
        ws, env = _workspace(tmp, a.db_url)
        space = {"x": {"low": 1, "high": 10}, "y": {"low": 1, "high": 6}, "mode": {"choices": list(MODES)}}
        rel = _spec(ws, "space", space, [sys.executable, "-c", FORMULA])
        best = grid_best()
        n_grid = len(X) * len(Y) * len(MODES)
        print(f"grid: {n_grid} configurations, best feasible output_throughput {best:g} (p99_ttft_ms <= {LIMIT:g})")
        for sampler in ("tpe", "random"):
            reached = []
            for seed in range(a.seeds):
                t0 = time.monotonic()
                p = subprocess.run([sys.executable, "-m", "optlog", "tune", rel, "--maximize", "output_throughput",
                                    "--constraint", f"p99_ttft_ms <= {LIMIT:g}", "--trials", str(a.trials),
                                    "--sampler", sampler, "--seed", str(seed), "--study", f"{sampler}-{seed}",
                                    "--remeasure", "0", "--json"], cwd=ws, env=env, capture_output=True, text=True)
                if p.returncode != 0:
                    raise SystemExit(p.stderr[-2000:])
                d = json.loads(p.stdout)
                so_far, hit = float("-inf"), None
                for t in sorted(d["trials"], key=lambda t: t["number"]):
                    if t["state"] == "complete" and t["feasible"]:
                        so_far = max(so_far, t["values"][0])
                    if hit is None and so_far >= 0.95 * best:
                        hit = t["number"] + 1
                distinct = len({json.dumps(t["params"], sort_keys=True) for t in d["trials"]})
                reached.append(hit if hit is not None else a.trials + 1)
                print(f"  {sampler} seed {seed}: within 5 % after {hit or f'> {a.trials}'} trial(s); "
                      f"{distinct} distinct configuration(s) launched; {time.monotonic() - t0:.1f}s")
            med = statistics.median(reached)
            print(f"{sampler}: median {med:g} trial(s) to within 5 % of the grid's best, "
                  f"{med / n_grid * 100:.1f} % of the grid's {n_grid}")
    finally:
        _drop(env, a.db_url)
        shutil.rmtree(tmp, ignore_errors=True)


def overhead(a: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="optlog-tune-bench-"))
    env: dict[str, str] = {}
    try:
        ws, env = _workspace(tmp, a.db_url)
        n = a.trials
        cmd = ["/bin/sh", "-c", 'printf "{\\"output_throughput\\": %s}" "$1" > "$0/result.json"', "{{ out }}", "{{ i }}"]
        rel = _spec(ws, "trivial", {"i": {"low": 1, "high": 10 ** 6}}, cmd)
        tune_s, loop_s = [], []
        for r in range(a.repeats):
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, "-m", "optlog", "tune", rel, "--maximize", "output_throughput",
                                "--trials", str(n), "--sampler", "random", "--seed", str(r), "--study", f"o{r}",
                                "--remeasure", "0", "--json"], cwd=ws, env=env, capture_output=True, text=True)
            tune_s.append(time.monotonic() - t0)
            if p.returncode != 0:
                raise SystemExit(p.stderr[-2000:])
            outs = tmp / f"loop{r}"
            t0 = time.monotonic()
            for i in range(n):
                out = outs / str(i)
                out.mkdir(parents=True)
                subprocess.run([c.replace("{{ out }}", str(out)).replace("{{ i }}", str(i)) for c in cmd], check=True)
            loop_s.append(time.monotonic() - t0)
        t, lp = statistics.median(tune_s), statistics.median(loop_s)
        print(f"{n} trials: optlog tune {t:.2f}s, plain loop {lp:.2f}s (medians of {a.repeats}); "
              f"overhead {(t - lp) / n * 1000:.0f} ms per trial (CLI start-up included)")
    finally:
        _drop(env, a.db_url)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("search")
    s.add_argument("--trials", type=int, default=40)
    s.add_argument("--seeds", type=int, default=3)
    o = sub.add_parser("overhead")
    o.add_argument("--trials", type=int, default=30)
    o.add_argument("--repeats", type=int, default=3)
    for p in (s, o):
        p.add_argument("--db-url", metavar="URL", help="A PostgreSQL server (its URL): the workspace gets a database "
                                                        "of its own there (dropped after); default SQLite")
    a = ap.parse_args()
    search(a) if a.what == "search" else overhead(a)


if __name__ == "__main__":
    main()
