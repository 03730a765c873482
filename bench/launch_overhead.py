#!/usr/bin/env python3
"""optlog's own overhead per launched point, against a plain subprocess loop running the same commands.

A sweep of 100 points whose bench command is trivial (`/bin/sh` writing a one-number result.json):
  baseline: the 100 rendered commands run one after another with subprocess.run (same out folders)
  optlog:   `run launch` of the spec in-process (service.launch: plan, DB rows, process groups,
            waiting, parsing, artifacts), and the same through the real CLI (interpreter start-up
            included, amortised over the 100 points)
Overhead per point = (optlog time − baseline time) / 100, in wall time and in this process's own CPU
time (the children's CPU is the same on both sides; CPU time stays meaningful on a busy machine).
Repeats alternate; medians reported.

    python bench/launch_overhead.py [--points 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CMD = """/bin/sh -c 'printf "{\\"completed\\": %s}" "$1" > "$0/result.json"' {{ out }} {{ i }}"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    n = a.points
    tmp = Path(tempfile.mkdtemp(prefix="optlog-bench-"))
    env = dict(os.environ, OPTLOG_ACTOR="bench", GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"))
    env.pop("OPTLOG_DB_URL", None)
    (tmp / "gitconfig").write_text("[user]\n\tname = B\n\temail = b@example.com\n")
    ws = tmp / "ws"
    subprocess.run([sys.executable, "-m", "optlog", "init", str(ws)], check=True, env=env, capture_output=True)
    import yaml

    (ws / "runs" / "o.yaml").write_text(yaml.safe_dump({"name": "overhead", "matrix": {"i": list(range(n))},
                                                         "bench": {"cmd": CMD}}, width=1000))
    os.environ.update({k: v for k, v in env.items() if k.startswith(("OPTLOG", "GIT"))})

    from optlog.paths import Workspace
    from optlog.service import launch as svc
    from optlog.service.context import Ctx

    def baseline() -> tuple[float, float]:
        outs = tmp / "base"
        shutil.rmtree(outs, ignore_errors=True)
        c0 = time.process_time()
        t0 = time.perf_counter()
        for i in range(n):
            d = outs / str(i)
            d.mkdir(parents=True)
            subprocess.run(["/bin/sh", "-c", 'printf "{\\"completed\\": %s}" "$1" > "$0/result.json"', str(d), str(i)],
                           check=True)
        return time.perf_counter() - t0, time.process_time() - c0

    def in_process() -> tuple[float, float]:
        ctx = Ctx(Workspace(ws))
        ctx.db  # noqa: B018  (connect and migrate outside the timing)
        c0 = time.process_time()
        t0 = time.perf_counter()
        res = svc.launch(ctx, "runs/o.yaml")
        dt = time.perf_counter() - t0, time.process_time() - c0
        assert res["status"] == "succeeded" and len(res["runs"]) == n, res["runs"][0]
        ctx.close()
        return dt

    def cli() -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "optlog", "run", "launch", "runs/o.yaml", "--json"], cwd=ws, env=env,
                       check=True, capture_output=True)
        return time.perf_counter() - t0

    in_process()  # warm: first DB creation, imports
    res: dict[str, list[float]] = {"baseline": [], "optlog": [], "cli": []}
    cpu: dict[str, list[float]] = {"baseline": [], "optlog": []}
    for _ in range(a.repeats):
        w, c = baseline()
        res["baseline"].append(w)
        cpu["baseline"].append(c)
        w, c = in_process()
        res["optlog"].append(w)
        cpu["optlog"].append(c)
        res["cli"].append(cli())
    med = {k: statistics.median(v) for k, v in res.items()}
    mcpu = {k: statistics.median(v) / n * 1000 for k, v in cpu.items()}
    per = {k: med[k] / n * 1000 for k in med}
    print(f"points: {n}, repeats: {a.repeats}, cpus: {os.cpu_count()}, load: {os.getloadavg()[0]:.1f}")
    print(f"baseline subprocess loop: {med['baseline']:.3f}s  ({per['baseline']:.1f} ms/point)")
    print(f"optlog in-process launch: {med['optlog']:.3f}s  ({per['optlog']:.1f} ms/point)  "
          f"overhead {per['optlog'] - per['baseline']:.1f} ms/point  ratio {med['optlog'] / med['baseline']:.2f}x")
    print(f"optlog CLI launch:        {med['cli']:.3f}s  ({per['cli']:.1f} ms/point)  "
          f"overhead {per['cli'] - per['baseline']:.1f} ms/point  ratio {med['cli'] / med['baseline']:.2f}x")
    print(f"own CPU per point: baseline {mcpu['baseline']:.1f} ms, optlog {mcpu['optlog']:.1f} ms, "
          f"overhead {mcpu['optlog'] - mcpu['baseline']:.1f} ms/point")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
