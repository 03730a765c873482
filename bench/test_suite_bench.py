#!/usr/bin/env python3
"""What a test pays before it checks anything, the old way against the new, in the same run.

1. The `ws` fixture: `optlog init` as a process (what every test paid before) against a copy of a
   workspace made once (tests/conftest.py's template: copytree, a new `id:`, the init commit
   amended).
2. One CLI call: `optlog ARGS` as a process against the same call in-process through the
   program's entry (tests/conftest.py `run_inprocess`), on one workspace.

Old and new alternate, so load from elsewhere hits both alike; medians of wall and CPU seconds
(this process and its children). CPU is what to compare on a busy machine: wall time there is
several times CPU.

    python bench/test_suite_bench.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _timed(f: Callable[[], Any]) -> tuple[float, float]:
    w, c = time.perf_counter(), _cpu()
    f()
    return time.perf_counter() - w, _cpu() - c


def _row(name: str, xs: list[tuple[float, float]]) -> str:
    return (f"| {name} | {statistics.median(x[0] for x in xs):.3f} s | {statistics.median(x[1] for x in xs):.3f} s "
            f"| {len(xs)} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    from tests.conftest import Workspace, _clean_env  # the suite's own helpers

    base = Path(tempfile.mkdtemp(prefix="optlog-suite-bench-"))
    try:
        (base / "gc").write_text("[user]\n\tname = T\n\temail = t@e.com\n[init]\n\tdefaultBranch = main\n")
        env = _clean_env()
        env["GIT_CONFIG_GLOBAL"] = str(base / "gc")
        tpl = Workspace(base / "tpl" / "ws", env)
        tpl.cli("init", str(tpl.root), cwd=base, subprocess=True)
        tid = re.search(r"^id: (\w+)", (tpl.root / "optlog.yaml").read_text(), re.M).group(1)  # type: ignore[union-attr]

        def init(i: int) -> None:
            Workspace(base / f"a{i}" / "ws", env).cli("init", str(base / f"a{i}" / "ws"), cwd=base, subprocess=True)

        def copy(i: int) -> None:
            root = base / f"b{i}" / "ws"
            shutil.copytree(tpl.root, root, symlinks=True)
            cfg = root / "optlog.yaml"
            cfg.write_text(cfg.read_text().replace(tid, uuid.uuid4().hex))
            subprocess.run(["git", "commit", "-q", "--amend", "--no-edit", "--reset-author", "--", "optlog.yaml"],
                           cwd=root, env=env, check=True)

        calls = [("hypothesis", "add", "H {i}", "--id", "h{i}-{m}"), ("hypothesis", "list", "--json"),
                 ("status", "--json"), ("todo", "add", "t{i}-{m}")]
        res: dict[str, list[tuple[float, float]]] = {}
        for i in range(a.repeats):
            res.setdefault("ws fixture: `optlog init` as a process (before)", []).append(_timed(lambda: init(i)))
            res.setdefault("ws fixture: copy of the template (after)", []).append(_timed(lambda: copy(i)))
            for c in calls:
                for m in ("process", "in-process"):
                    args = tuple(x.format(i=i, m=m.replace("-", "")) for x in c)
                    key = f"`{' '.join(c[:2]) if not c[1].startswith('-') else c[0]}`: {m}"
                    res.setdefault(key, []).append(_timed(lambda: tpl.cli(*args, subprocess=m == "process")))
        print("| step | wall (median) | CPU (median) | n |\n|---|---|---|---|")
        for k, v in res.items():
            print(_row(k, v))
        print(f"\nload average at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
