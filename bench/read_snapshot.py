"""What reading a first-read document as of one moment costs (store.plainread.one_moment): the same
document read with the read transaction and without it (a no-op in its place), alternating, in one
process, medians; the ratio is with / without.

    python bench/read_snapshot.py WORKSPACE [--read "run list --limit 20"] [--n 300] [--rounds 4]

The workspace's database is the one its settings name (OPTLOG_DB_URL for PostgreSQL). Prints one
markdown table row per arm on stdout; narration on stderr. Exit 2 on bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("workspace", type=Path)
    ap.add_argument("--read", default="run list --limit 20", help="a read store.plainread answers")
    ap.add_argument("--n", type=int, default=300, help="documents per arm per round")
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    from optlog.errors import OptlogError
    from optlog.paths import find_workspace
    from optlog.store import plainread

    try:
        ws = find_workspace(a.workspace)
    except OptlogError as e:
        ap.error(f"{a.workspace}: {e}")
    pg = plainread.pg_connect(ws.db_url, ws.identity) if ws.sqlite_file is None else None
    if ws.sqlite_file is None and pg is None:
        ap.error(f"{a.workspace}: no database that store.plainread can read")
    cmd = a.read.split()
    real = plainread.one_moment

    def arm(one_moment) -> float:
        plainread.one_moment = one_moment
        ts = []
        for _ in range(a.n):
            t = time.perf_counter()
            doc = plainread.document(ws, cmd, pg)
            ts.append(time.perf_counter() - t)
            if doc is None:
                ap.error(f"store.plainread does not answer {a.read!r} here")
        return statistics.median(ts)

    got: dict[str, list[float]] = {"with": [], "without": []}
    try:
        for r in range(a.rounds):
            got["with"].append(arm(real))
            got["without"].append(arm(lambda con: contextlib.nullcontext()))
            print(f"read_snapshot: round {r + 1} of {a.rounds}", file=sys.stderr)
    finally:
        plainread.one_moment = real
        if pg is not None:
            pg.close()
    w, wo = statistics.median(got["with"]), statistics.median(got["without"])
    backend = "PostgreSQL" if pg is not None else "SQLite"
    print("| backend | read | with one_moment (ms) | without (ms) | ratio |")
    print("|---|---|---|---|---|")
    print(f"| {backend} | `{a.read}` | {w * 1e3:.3f} | {wo * 1e3:.3f} | {w / wo:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
