#!/usr/bin/env python3
"""Start-up benchmark: the hot reads (`status`, `todo list`, `hypothesis list`, `run list --limit
20`, all `--json`) cold on a big workspace, against the cost of `python -c "import sqlmodel"`
(optlog's ORM import) measured in the same run.

Each read is timed as an agent meets it (nothing changed since the last identical read: the read
cache answers, see optlog.store.readcache), with the cache off (`OPTLOG_READ_CACHE=0`: the full
path), and (`--changes`, issue 47) as the first read after each kind of change: one hypothesis
edited by hand, one added by optlog, one run recorded, one todo list written through the agent's
hook, a `git pull` bringing 10 changed hypothesis files, a launch finished (the GEMM probe on the
CPU at two shapes). Before each change every read is
answered once (untimed, after the read cache's racy window), so the timed read after it pays for
that one change only; the change is made (untimed), then the read is timed; the baseline is timed
in the same round, and again after each change's reads, so load hits both alike and the baseline's
median rests on more samples than any read's (with three repeats at 10x, its six samples of the
earlier layout gave medians of 250 and 360 ms in two runs half an hour apart).

The workspace holds 1,000 hypotheses (YAML files, committed, indexed), 10,000 runs with 4 labels
and 10 metrics each (100,000 metrics), and 20 todos. Every measurement is a fresh process (cold
interpreter, warm OS file cache); baseline and optlog runs alternate, so load from elsewhere on
the machine hits both alike; the figures are ratios of medians (target: each cached read <= 0.35).

    python bench/startup_bench.py [--repeats 21] [--changes] [--append BENCHMARKS.md]
    python bench/startup_bench.py --changes --src DIR   # time another checkout's optlog (before/after)
    python bench/startup_bench.py --changes --compare DIR   # also time the writes with DIR's optlog
    python bench/startup_bench.py --changes --scale 10   # 10,000 hypotheses, 100,000 runs (target 0.5)

The writes that make the changes (`hypothesis add`, `run record`, `todo write --queue -` through the
hook, `run launch`) are timed too; `--compare DIR` times the same writes, each a change of its own, with another
checkout's optlog (its package first on PYTHONPATH, this interpreter and its libraries: each arm
is checked to import its own package before timing, since an editable install's finder is
consulted after PYTHONPATH) in the same rounds, so "writes no slower" is a comparison under the
same load.

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
RACY_S = 1.1  # past optlog.store.readcache.RACY_S: a file changed just before is not trusted sooner
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


CHANGES = ("hypothesis edited by hand", "hypothesis added by optlog", "run recorded", "todo written (hook)",
           "git pull of 10 hypothesis files", "launch finished")
WRITES = ("hypothesis added by optlog", "run recorded", "todo written (hook)", "launch finished")  # optlog's own
# a real launch: the GEMM probe on the CPU at two shapes, one run each (what an agent does most)
LAUNCH_CMD = (f"{sys.executable} -m optlog.probes.gemm --m {{{{ m }}}} --k 32 --n 32 --dtype fp32 --device cpu "
              "--repeats 1 --output {{ out }}/result.json")


def _toggle(f: Path, c: str) -> None:
    """Edit one file: its 80-character run of `c` (the statement's or rationale's) gains or loses a
    last letter."""
    t = f.read_text()
    f.write_text(t.replace(c * 80, c * 79 + "x") if c * 80 in t else t.replace(c * 79 + "x", c * 80))


class Changer:
    """Makes one change of each kind to the workspace, differently each time (untimed)."""

    def __init__(self, root: Path, env: dict[str, str], optlog: list[str]) -> None:
        self.root, self.env, self.optlog, self.n = root, env, optlog, 0
        self.up = root.parent / "upstream"  # a clone the pulls come from
        git = ["git", "-c", "advice.detachedHead=false"]
        subprocess.run([*git, "clone", "-q", str(root), str(self.up)], env=env, check=True)
        subprocess.run(["git", "remote", "add", "origin", str(self.up)], cwd=root, env=env, check=True)
        subprocess.run(["git", "fetch", "-q", "origin"], cwd=root, env=env, check=True)
        br = subprocess.run(["git", "branch", "--show-current"], cwd=root, env=env, check=True,
                            capture_output=True, text=True).stdout.strip()
        subprocess.run(["git", "branch", "-q", f"--set-upstream-to=origin/{br}"], cwd=root, env=env, check=True)
        (root / "runs" / "bench-launch.yaml").write_text(json.dumps(  # (JSON is YAML)
            {"name": "bench-launch", "bench": {"cmd": LAUNCH_CMD, "parser": "probe"}, "matrix": {"m": [8, 16]}}))

    def _run(self, args: list[str], cwd: Path | None = None, stdin: bytes | None = None,
             env: dict[str, str] | None = None) -> float:
        t = time.perf_counter()
        p = subprocess.run(args, cwd=cwd or self.root, env=env or self.env, input=stdin, capture_output=True)
        dt = time.perf_counter() - t
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {p.stderr.decode()[-2000:]}")
        return dt

    def make(self, kind: str, other: tuple[list[str], dict[str, str]] | None = None) -> float | None:
        """Make the change; the seconds its optlog write took (None: a hand edit or a pull).
        `other`: another checkout's program and environment (`--compare`) make the write instead."""
        self.n += 1
        n = self.n
        optlog, env = other or (self.optlog, self.env)
        if kind == "hypothesis edited by hand":
            _toggle(self.root / "hypotheses" / "h0005.yaml", "s")
        elif kind == "hypothesis added by optlog":
            return self._run([*optlog, "hypothesis", "add", f"Bench added {n}", "--id", f"bench-{n:04d}", "--json"],
                             env=env)
        elif kind == "run recorded":
            return self._run([*optlog, "run", "record", "--label", "config=tp8", "--label",
                              f"concurrency={2 ** (n % 10)}", "--metric", f"output_throughput={n}", "--json"], env=env)
        elif kind == "todo written (hook)":
            todos = [{"content": f"todo {i} {n}", "status": "pending", "priority": "high", "activeForm": f"doing {i}"}
                     for i in range(20)]
            return self._run([*optlog, "todo", "write", "--queue", "-"], stdin=json.dumps(todos).encode(), env=env)
        elif kind == "launch finished":
            return self._run([*optlog, "run", "launch", "runs/bench-launch.yaml", "--json"], env=env)
        elif kind == "git pull of 10 hypothesis files":
            for i in range(100, 110):
                _toggle(self.up / "hypotheses" / f"h{i:04d}.yaml", "r")
            self._run(["git", "commit", "-qam", f"upstream edit {n}"], cwd=self.up)
            self._run(["git", "pull", "-q", "--no-edit", "--no-rebase"])
        else:
            raise ValueError(kind)
        return None


def imports_elsewhere(env: dict[str, str], cwd: Path, src: Path) -> str | None:
    """Why a process started with `env` in `cwd` would not import the optlog package of `src`, or None
    (an editable install's finder is consulted after PYTHONPATH, but a checkout as `cwd` comes first);
    bench/write_ab.py checks its arms with it too."""
    got = subprocess.run([sys.executable, "-c", "import optlog; print(optlog.__file__)"], cwd=cwd, env=env,
                         capture_output=True, text=True).stdout.strip()
    return None if got.startswith(str(src) + os.sep) else f"the processes would import {got or 'no optlog'}, not {src}'s"


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
    ap.add_argument("--changes", action="store_true", help="also time the first read after each kind of change")
    ap.add_argument("--src", metavar="DIR", help="time the optlog package of this checkout (PYTHONPATH)")
    ap.add_argument("--reads", default=",".join(READS), help="which reads (comma-separated names)")
    ap.add_argument("--compare", metavar="DIR", help="also time the writes with the optlog package of this checkout")
    ap.add_argument("--scale", type=int, default=1, help="the workspace N times larger (issue 47: <= 0.5 at 10x)")
    a = ap.parse_args()
    global N_HYP, N_RUNS, TARGET
    N_HYP, N_RUNS = N_HYP * a.scale, N_RUNS * a.scale
    if a.scale >= 10:
        TARGET = 0.5
    unknown = [n for n in a.reads.split(",") if n not in READS]
    if unknown:
        ap.error(f"--reads: no read named {', '.join(map(repr, unknown))} (the names: {', '.join(map(repr, READS))})")
    reads = {n: READS[n] for n in a.reads.split(",")}

    load0 = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="optlog-bench-"))
    # not PYTHONDONTWRITEBYTECODE: with it every process compiles again each module changed since
    # its bytecode was last written (a 10x run this way read `status` after an add ~25 ms slower)
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("startup_bench: PYTHONDONTWRITEBYTECODE is set here; the timed processes run without it",
              file=sys.stderr)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["GIT_CONFIG_GLOBAL"] = str(tmp / "gitconfig")
    (tmp / "gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@example.com\n")
    env["OPTLOG_ACTOR"] = "bench"
    root = tmp / "ws"
    other = None  # checked before the workspace is made (at 10x that takes ~40 s)
    arms = []
    if a.compare:  # the other checkout's package first on the path, as --src puts this run's
        src = Path(a.compare).resolve()
        other = ([sys.executable, "-m", "optlog"], {**env, "PYTHONPATH": str(src)})
        arms.append((other[1], src))
    if a.src:
        arms.append(({**env, "PYTHONPATH": str(Path(a.src).resolve())}, Path(a.src).resolve()))
    for why in filter(None, (imports_elsewhere(e, tmp, src) for e, src in arms)):
        shutil.rmtree(tmp, ignore_errors=True)
        raise SystemExit(f"startup_bench: {why}")
    t0 = time.perf_counter()
    populate(root, env)
    t_pop = time.perf_counter() - t0

    exe = Path(sys.executable).with_name("optlog")
    optlog = [str(exe)] if exe.exists() and not a.src else [sys.executable, "-m", "optlog"]
    if a.src:
        env["PYTHONPATH"] = str(Path(a.src).resolve())
    full_env = {**env, "OPTLOG_READ_CACHE": "0"}
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        "baseline: python -c 'import sqlmodel'": ([sys.executable, "-c", "import sqlmodel"], env)}
    if os.environ.get("OPTLOG_DB_URL"):  # PostgreSQL's own baseline (issue 47): the driver and a connection
        url = os.environ["OPTLOG_DB_URL"].replace("postgresql+psycopg://", "postgresql://")
        cases["baseline (PostgreSQL): import psycopg + connect"] = (
            [sys.executable, "-c", f"import psycopg; psycopg.connect({url!r}).close()"], env)
    for name, args in reads.items():
        cases[f"optlog {name} --json"] = ([*optlog, *args, "--json"], env)
    for name, args in reads.items():
        cases[f"optlog {name} --json (full path, cache off)"] = ([*optlog, *args, "--json"], full_env)
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(2):  # warm-up: bytecode caches, OS file cache; a first read may index (a write)
        for k, (cmd, e) in cases.items():
            timed(cmd, e, root)
    changer = Changer(root, env, optlog) if a.changes else None
    after = {(c, n): f"optlog {n} --json, first read after: {c}" for c in (CHANGES if a.changes else ()) for n in reads}
    times.update({k: [] for k in after.values()})
    writes = {c: f"write: {c}" for c in (CHANGES if a.changes else ()) if c in WRITES}
    if other:
        writes.update({f"{c} (compared)": f"write: {c} ({a.compare})" for c in list(writes)})
    times.update({k: [] for k in writes.values()})
    def settle() -> None:
        """Every read answered once more, untimed, after the racy window: the read cache holds the
        current documents, so a cached case times a hit and a first read times only its change."""
        time.sleep(RACY_S)
        for args in reads.values():  # twice: a read that narrated (a hand edit picked up) stores nothing
            timed([*optlog, *args, "--json"], env, root)
            timed([*optlog, *args, "--json"], env, root)

    last_read = list(reads)[-1]
    for _ in range(a.repeats):
        settle()
        for k, (cmd, e) in cases.items():
            times[k].append(timed(cmd, e, root))
        for (c, n), k in after.items():
            assert changer is not None
            if other and c in WRITES:  # the same write by the other checkout, a change of its own, timed
                times[writes[f"{c} (compared)"]].append(changer.make(c, other) or 0.0)
            settle()  # nothing else new: the read after it pays for this change only
            took = changer.make(c)
            if took is not None:
                times[writes[c]].append(took)
            times[k].append(timed([*optlog, *reads[n], "--json"], env, root))
            if n == last_read:  # the baseline again after each change's reads: load hits both alike,
                # and the median the ratios divide by rests on more samples than any read's
                times[next(iter(cases))].append(timed(*cases[next(iter(cases))][:2], root))
    base = statistics.median(times[next(iter(cases))])
    backend = "PostgreSQL" if os.environ.get("OPTLOG_DB_URL") else "SQLite"
    rows = []
    for k in [*cases, *after.values(), *writes.values()]:
        med = statistics.median(times[k])
        rows.append(f"| {k} | {med * 1000:.0f} | {min(times[k]) * 1000:.0f} | {med / base:.2f} |")
    ratios = {n: statistics.median(times[f"optlog {n} --json"]) / base for n in reads}
    firsts = {k: statistics.median(times[k]) / base for k in after.values()}
    ratio = max(ratios.values())
    verdict = "meets" if ratio <= TARGET else "MISSES"
    head = (f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {backend}, Python {sys.version.split()[0]}, "
            f"{os.cpu_count()} CPUs, load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; workspace: {N_HYP} hypotheses, "
            f"{N_RUNS} runs, {N_RUNS * METRICS_PER_RUN} metrics (populated in {t_pop:.1f} s); "
            f"median of {a.repeats} alternating repeats.\n\n"
            "Cached reads / `import sqlmodel`: " + ", ".join(f"{n} **{r:.2f}**" for n, r in ratios.items()) +
            f" (target each <= {TARGET}: {verdict}).\n\n" +
            (f"First reads after a change / `import sqlmodel`: {sum(r <= TARGET for r in firsts.values())} of "
             f"{len(firsts)} within {TARGET} (worst {max(firsts.values()):.2f}).\n\n" if firsts else "") +
            ("" if not a.src else f"optlog from {a.src}.\n\n") +
            "| command | median ms | min ms | ratio to baseline |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(head)
    if a.append:
        with open(a.append, "a", encoding="utf-8") as f:
            f.write("\nCommand: `python bench/startup_bench.py --repeats " + str(a.repeats) +
                    (f" --scale {a.scale}" if a.scale != 1 else "") + "`" +
                    (" --changes" if a.changes else "") + (" with `OPTLOG_DB_URL` set" if backend == "PostgreSQL" else "") + "\n\n" + head)
    if a.keep:
        print(f"workspace kept: {root}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"ratio": ratio, "baseline_s": base, "first_reads": firsts}))


if __name__ == "__main__":
    main()
