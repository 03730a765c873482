#!/usr/bin/env python3
"""Start-up benchmark: the hot reads (`status`, `todo list`, `hypothesis list`, `run list --limit
20`, all `--json`) cold on a big workspace, against the cost of `python -c "import sqlmodel"`
(optlog's ORM import) measured in the same run.

Each read is timed twice: as an agent meets it (nothing changed since the last identical read: the
read cache answers, see optlog.store.readcache) and with the cache off (`OPTLOG_READ_CACHE=0`:
the full path, which is also what the first read after a change costs).

The workspace holds 1,000 hypotheses (YAML files, committed, indexed), 10,000 runs with 4 labels
and 10 metrics each (100,000 metrics), and 20 todos. Every measurement is a fresh process (cold
interpreter, warm OS file cache); baseline and optlog runs alternate, so load from elsewhere on
the machine hits both alike; the figures are ratios of medians (target: each cached read <= 0.35).

    python bench/startup_bench.py [--repeats 21] [--append BENCHMARKS.md]

`OPTLOG_DB_URL` set: the runs and todos go to that database (e.g. PostgreSQL) instead of SQLite.
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

N_HYP, N_RUNS, METRICS_PER_RUN = 1000, 10_000, 10
TARGET = 0.35
READS = {"status": ["status"], "todo list": ["todo", "list"], "hypothesis list": ["hypothesis", "list"],
         "run list --limit 20": ["run", "list", "--limit", "20"]}


def populate(root: Path, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "optlog", "init", str(root)], env=env, check=True, capture_output=True)
    from sqlalchemy import insert

    from optlog.core.hypothesis import HypothesisDoc, Prediction
    from optlog.service import hypotheses, todos
    from optlog.service.context import Ctx
    from optlog.store import hypfiles
    from optlog.store.models import EvidenceLink, Metric, Run, RunLabel
    from optlog.yamlio import write_atomic

    ctx = Ctx.find(root, actor="bench")
    for i in range(N_HYP):
        doc = HypothesisDoc(id=f"h{i:04d}", title=f"Hypothesis {i}", statement="s" * 80, rationale="r" * 80,
                            parent=f"h{i - 1:04d}" if i % 10 else None, created="2026-01-01T00:00:00.000Z",
                            predictions=[Prediction(id=f"h{i:04d}-p1", expect="a > b", metric="output_throughput",
                                                    a={"config": "tp8"}, b={"config": "tp4pp2"}, per="concurrency")])
        write_atomic(ctx.ws.hypothesis_file(doc.id), hypfiles.render(doc))
    subprocess.run(["git", "add", "hypotheses"], cwd=root, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "bench hypotheses"], cwd=root, env=env, check=True)
    hypotheses.sync(ctx)  # index them, as the first command after a pull would
    now = "2026-01-01T00:00:00.000Z"
    names = ["output_throughput", "total_token_throughput", "request_throughput", "mean_ttft_ms", "p99_ttft_ms",
             "mean_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "gpu_power_w", "duration_s"][:METRICS_PER_RUN]
    with ctx.db.write() as s:
        c = s.connection()
        c.execute(insert(Run), [{"id": i + 1, "status": "succeeded", "source": "recorded", "repeat": 0,
                                 "created_at": now, "invalidated": False, "environment": {}, "raw": {},
                                 "hypothesis_id": f"h{i % N_HYP:04d}"} for i in range(N_RUNS)])
        c.execute(insert(RunLabel), [
            {"run_id": i + 1, "key": k, "value": v, "num": n}
            for i in range(N_RUNS)
            for k, v, n in (("config", "tp8" if i % 2 else "tp4pp2", None),
                            ("concurrency", str(2 ** (i % 10)), float(2 ** (i % 10))),
                            ("repeat", str(i % 5), float(i % 5)), ("model", "glm-5-nvfp4", None))])
        c.execute(insert(Metric), [{"run_id": i + 1, "name": m, "value": float(i + j)}
                                   for i in range(N_RUNS) for j, m in enumerate(names)])
        c.execute(insert(EvidenceLink), [{"hypothesis_id": f"h{i % N_HYP:04d}", "run_id": i + 1, "kind": "linked",
                                          "created_at": now} for i in range(N_RUNS)])
    if not ctx.db.is_sqlite:  # explicit ids above: move the sequence past them
        with ctx.db.write() as s:
            from sqlalchemy import text

            s.connection().execute(text("SELECT setval(pg_get_serial_sequence('run', 'id'), :n)"), {"n": N_RUNS})
    todos.write(ctx, {"todos": [{"content": f"todo {i}", "status": "pending", "priority": "high",
                                 "activeForm": f"doing {i}"} for i in range(20)]})
    ctx.close()


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr.decode()[-2000:]}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--append", metavar="FILE", help="append the result table to this markdown file")
    ap.add_argument("--keep", action="store_true", help="keep the workspace (printed)")
    a = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="optlog-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_GLOBAL"] = str(tmp / "gitconfig")
    (tmp / "gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@example.com\n")
    env["OPTLOG_ACTOR"] = "bench"
    root = tmp / "ws"
    t0 = time.perf_counter()
    populate(root, env)
    t_pop = time.perf_counter() - t0

    exe = Path(sys.executable).with_name("optlog")
    optlog = [str(exe)] if exe.exists() else [sys.executable, "-m", "optlog"]
    full_env = {**env, "OPTLOG_READ_CACHE": "0"}
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        "baseline: python -c 'import sqlmodel'": ([sys.executable, "-c", "import sqlmodel"], env)}
    for name, args in READS.items():
        cases[f"optlog {name} --json"] = ([*optlog, *args, "--json"], env)
    for name, args in READS.items():
        cases[f"optlog {name} --json (full path, cache off)"] = ([*optlog, *args, "--json"], full_env)
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(2):  # warm-up: bytecode caches, OS file cache; a first read may index (a write)
        for k, (cmd, e) in cases.items():
            timed(cmd, e, root)
    for _ in range(a.repeats):
        for k, (cmd, e) in cases.items():
            times[k].append(timed(cmd, e, root))
    base = statistics.median(times[next(iter(cases))])
    backend = "PostgreSQL" if os.environ.get("OPTLOG_DB_URL") else "SQLite"
    rows = []
    for k in cases:
        med = statistics.median(times[k])
        rows.append(f"| {k} | {med * 1000:.0f} | {min(times[k]) * 1000:.0f} | {med / base:.2f} |")
    ratios = {n: statistics.median(times[f"optlog {n} --json"]) / base for n in READS}
    ratio = max(ratios.values())
    verdict = "meets" if ratio <= TARGET else "MISSES"
    head = (f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {backend}, Python {sys.version.split()[0]}, "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; workspace: {N_HYP} hypotheses, "
            f"{N_RUNS} runs, {N_RUNS * METRICS_PER_RUN} metrics (populated in {t_pop:.1f} s); "
            f"median of {a.repeats} alternating repeats.\n\n"
            "Cached reads / `import sqlmodel`: " + ", ".join(f"{n} **{r:.2f}**" for n, r in ratios.items()) +
            f" (target each <= {TARGET}: {verdict}).\n\n"
            "| command | median ms | min ms | ratio to baseline |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(head)
    if a.append:
        with open(a.append, "a", encoding="utf-8") as f:
            f.write("\nCommand: `python bench/startup_bench.py --repeats " + str(a.repeats) + "`" +
                    (" with `OPTLOG_DB_URL` set" if backend == "PostgreSQL" else "") + "\n\n" + head)
    if a.keep:
        print(f"workspace kept: {root}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"ratio": ratio, "baseline_s": base}))


if __name__ == "__main__":
    main()
