#!/usr/bin/env python3
"""The example reports under docs/examples/, rebuilt from their committed data.

    python examples/report_examples.py                      # rewrite every docs/examples/NAME/reports/
    python examples/report_examples.py --check              # exit 1 if a committed report is out of date
    python examples/report_examples.py --capture NAME WS    # take NAME's data from the workspace WS

Each example is a workspace's committed record, as a clone has it: `optlog.yaml`, `hypotheses/`, the
evidence of the runs its verdicts used (`runs/evidence/`) and its plans (`glb5improvement/`). Its
report is written from that record alone by `optlog report` (what a fresh clone does: the runs and
plans are imported from the committed files), at a fixed clock, so the same code writes the same
bytes; tests/cli/test_report_examples.py checks that the committed reports are what this code
writes. The examples:

- `demo`: `optlog demo --simulated` (TP8 against TP4+PP2 on optlog's simulated server).
- `llama-ttft`: a real sweep of llama.cpp's llama-server (Gemma 3 270M on this project's 2-core
  machine): how TTFT grows with the prompt's length.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DOCS = REPO / "docs" / "examples"
EXAMPLES = ("demo", "llama-ttft")
NOW = "2026-12-02T12:00:00Z"  # the clock a report is written at (it says nothing else about time)
KEPT = ("optlog.yaml", "hypotheses", "runs/evidence", "glb5improvement")


def capture(name: str, ws: Path) -> None:
    """Copy the committed record of workspace `ws` (its git HEAD) into docs/examples/NAME/."""
    dest = DOCS / name
    with tempfile.TemporaryDirectory() as tmp:
        tree = subprocess.run(["git", "-C", str(ws), "archive", "HEAD"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=tree, check=True)
        for k in KEPT:
            if (dest / k).exists():
                shutil.rmtree(dest / k) if (dest / k).is_dir() else (dest / k).unlink()
            src = Path(tmp) / k
            if src.exists():
                (dest / k).parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(src, dest / k) if src.is_dir() else shutil.copy2(src, dest / k)


def build(name: str, out: Path) -> list[Path]:
    """Write example NAME's report from its committed record into `out` (a folder); the files written."""
    from optlog.service import report
    from optlog.service.context import Ctx

    src = DOCS / name
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / name
        ws.mkdir()
        for k in KEPT:
            if (src / k).exists():
                (ws / k).parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(src / k, ws / k) if (src / k).is_dir() else shutil.copy2(src / k, ws / k)
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        old = {k: os.environ.get(k) for k in ("OPTLOG_NOW", "OPTLOG_DB_URL")}
        os.environ["OPTLOG_NOW"] = NOW
        os.environ.pop("OPTLOG_DB_URL", None)  # its own SQLite database, like a fresh clone's
        try:
            ctx = Ctx.find(ws)
            ctx.on_notice = lambda t: None
            try:
                res = report.write(ctx, commit=False)
            finally:
                ctx.close()
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for rel in [res["file"], *res["plots"]]:
            shutil.copy2(ws / rel, out / Path(rel).name)
            written.append(out / Path(rel).name)
        return written


def stale(name: str) -> list[str]:
    """The files of example NAME's committed report that differ from what this code writes."""
    with tempfile.TemporaryDirectory() as tmp:
        made = build(name, Path(tmp))
        names = sorted(p.name for p in made)
        have = DOCS / name / "reports"
        committed = sorted(p.name for p in have.iterdir()) if have.is_dir() else []
        _, mismatch, errors = filecmp.cmpfiles(Path(tmp), have, names, shallow=False)
        return sorted(set(mismatch) | set(errors) | (set(names) ^ set(committed)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a committed report is out of date")
    ap.add_argument("--capture", nargs=2, metavar=("NAME", "WORKSPACE"))
    a = ap.parse_args()
    if a.capture:
        capture(a.capture[0], Path(a.capture[1]))
        return 0
    bad = 0
    for name in EXAMPLES:
        if not (DOCS / name).is_dir():
            continue
        if a.check:
            diff = stale(name)
            if diff:
                print(f"{name}: out of date: {', '.join(diff)} (run python examples/report_examples.py)")
                bad = 1
            continue
        out = DOCS / name / "reports"
        if out.is_dir():
            shutil.rmtree(out)
        for p in build(name, out):
            print(p.relative_to(REPO))
    return bad


if __name__ == "__main__":
    raise SystemExit(main())
