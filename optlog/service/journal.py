"""Write-and-commit that a crash cannot turn into a "hand edit".

Why: optlog writes a file, then commits it. A process killed in between (kill -9, power) left the
file written and not committed, and the next `optlog sync` committed it as a hand edit, under the
wrong event and actor. Now, before writing, optlog records its intent in `.optlog/pending/` (the
paths with their content hashes before and after, and the commit message). The intent is removed
once the commit is made. Writers hold the workspace lock for the whole write-and-commit, so an
intent found by a process that holds the lock belongs to a writer that died: the next command
completes it (commits the files with the original message, marked `Optlog-Recovered`) if the
files still hold what that writer wrote, and otherwise leaves them to `optlog sync` as what they
now are, hand edits. A write whose commit fails (signing, git) is rolled back instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import Timeout

from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.needs import Commits
from optlog.paths import Workspace
from optlog.store.hypfiles import current_hash
from optlog.store.lock import workspace_lock
from optlog.core import jsondoc

def _dir(ws: Workspace) -> Path:
    return ws.state_dir / "pending"


@contextmanager
def intent(ws: Workspace, changes: list[tuple[Path, str | None, str]], subject: str, body: str,
           trailers: dict[str, str], groups: list[dict[str, str]] | None = None) -> Iterator[None]:
    """Record the intent to write `changes` (path, hash before or None, hash after) and commit them
    (`groups`: the trailer group of each decision of a commit that records several); the caller
    holds the workspace lock, writes and commits inside the block."""
    d = _dir(ws)
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"{os.getpid()}-{os.urandom(4).hex()}.json"
    doc = {"pid": os.getpid(), "changes": [[ws.rel(p), b, a] for p, b, a in changes],
           "subject": subject, "body": body, "trailers": trailers, **({"groups": groups} if groups else {})}
    with open(f, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
        fh.flush()
        os.fsync(fh.fileno())
    try:
        yield
    finally:
        try:
            f.unlink()
        except FileNotFoundError:
            pass


def pending_paths(ws: Workspace) -> set[str]:
    """The files (relative to the workspace) an interrupted write-and-commit left to complete: a
    read sees them as they were written, and says nothing of a hand edit (the next command that
    may write commits them under their own event)."""
    out: set[str] = set()
    for f in sorted(_dir(ws).glob("*.json")):
        try:
            out.update(str(c[0]) for c in jsondoc.loads(f.read_text(encoding="utf-8"))["changes"])
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            continue
    return out


def recover(ctx: Commits) -> list[str]:
    """Complete the write-and-commits of optlog processes that died (cheap when there are none:
    one listdir). Returns the commits made."""
    d = _dir(ctx.ws)
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".json"))
    except FileNotFoundError:
        return []
    mine = f"{os.getpid()}-"
    names = [n for n in names if not n.startswith(mine)]
    if not names:
        return []

    try:
        with workspace_lock(ctx.ws, timeout=0):
            return _recover_locked(ctx, [d / n for n in names])
    except Timeout:
        return []  # a writer is alive and holds the lock: its intents are its own


def _recover_locked(ctx: Commits, files: list[Path]) -> list[str]:
    shas = []
    for f in files:
        try:
            doc: dict[str, Any] = jsondoc.loads(f.read_text(encoding="utf-8"))
            changes = [(ctx.ws.root / rel, before, after) for rel, before, after in doc["changes"]]
        except (OSError, ValueError, KeyError, TypeError):
            f.unlink(missing_ok=True)
            continue
        now = [current_hash(p) for p, _, _ in changes]
        if all(n == a for n, (_, _, a) in zip(now, changes)):
            body = (doc.get("body") or "").rstrip()
            body += ("\n\n" if body else "") + ("Committed by a later optlog command: the optlog process that wrote "
                                                "this was interrupted before it committed.")
            groups = [dict(g, **{TR.RECOVERED: "true"}) for g in doc.get("groups") or []]  # each decision's own
            tr = dict(doc.get("trailers") or {}, **({} if groups else {TR.RECOVERED: "true"}))
            sha = history.record(ctx, [p for p, _, _ in changes], doc.get("subject") or "optlog: update", body, tr,
                                 groups=groups)
            if sha:
                shas.append(sha)
                ctx.notice(f"committed {', '.join(ctx.ws.rel(p) for p, _, _ in changes)}: an interrupted optlog "
                           f"command wrote it and did not commit it ({doc.get('subject')})")
        f.unlink(missing_ok=True)
    return shas
