#!/usr/bin/env python3
"""Writes before and after a change: `hypothesis add`, `hypothesis edit` and `hypothesis set` timed
with two checkouts' optlog on one kept bench workspace, alternating each round (which goes first
alternates too), so load from elsewhere on the machine hits both alike; medians of wall time,
each write a fresh process.

    python bench/startup_bench.py --keep [--scale 10]      # prints the workspace it kept
    git worktree add /tmp/before <commit>                  # the checkout to compare with
    python bench/write_ab.py WORKSPACE --before /tmp/before [--after .] [--rounds 7]

Each checkout's package is put first on `PYTHONPATH` and the processes run from an empty folder,
so each imports its own `optlog` (checked before timing: an editable install's finder must not
win). Both write to the same workspace: the rounds alternate, so each write meets what the other
checkout wrote, as two versions sharing a workspace would."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from startup_bench import imports_elsewhere  # (this folder is on the path of a script run from it)

VERBS = {
    "add": lambda n: ["hypothesis", "add", f"Write probe {n}", "--id", f"write-probe-{n}"],
    "edit": lambda n: ["hypothesis", "edit", "h0007", "--statement", f"edited in round {n}"],
    "set": lambda n: ["hypothesis", "set", "h0008", "--status", "inconclusive" if n % 2 else "open", "--why", f"round {n}"],
}


def _env(ws: Path, src: Path) -> dict[str, str]:
    e = dict(os.environ, PYTHONPATH=str(src), OPTLOG_ACTOR="bench")
    e.pop("PYTHONDONTWRITEBYTECODE", None)  # (a process that may not write bytecode compiles again)
    gitconfig = ws.parent / "gitconfig"  # what startup_bench keeps beside its workspace
    if gitconfig.is_file():
        e["GIT_CONFIG_GLOBAL"] = str(gitconfig)
    return e


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", type=Path)
    ap.add_argument("--before", type=Path, required=True, help="a checkout of the commit to compare with")
    ap.add_argument("--after", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--verbs", default=",".join(VERBS))
    a = ap.parse_args()
    ws = a.workspace.resolve()
    arms = {"before": a.before.resolve(), "after": a.after.resolve()}
    with tempfile.TemporaryDirectory() as empty:
        for name, src in arms.items():
            why = imports_elsewhere(_env(ws, src), Path(empty), src)
            if why:
                print(f"write_ab: the {name} arm: {why}", file=sys.stderr)
                return 2
        print(f"# write_ab: {ws}, {a.rounds} rounds; load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
        for verb in a.verbs.split(","):
            times: dict[str, list[float]] = {"before": [], "after": []}
            for r in range(a.rounds):
                order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
                for name in order:
                    n = time.time_ns() % 10**9
                    t = time.perf_counter()
                    p = subprocess.run([sys.executable, "-m", "optlog", "-C", str(ws), *VERBS[verb](n), "--json"],
                                       cwd=empty, env=_env(ws, arms[name]), capture_output=True, text=True)
                    times[name].append((time.perf_counter() - t) * 1000)
                    if p.returncode != 0:
                        print(f"write_ab: {verb} ({name}) failed: {p.stderr.strip()[-400:]}", file=sys.stderr)
                        return 1
                    time.sleep(0.5)
            b, f = statistics.median(times["before"]), statistics.median(times["after"])
            print(f"| `hypothesis {verb}` | {b:.0f} ms | {f:.0f} ms | {f / b:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
