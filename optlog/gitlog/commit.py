"""Commit optlog's own files without touching the user's index or working changes.

The commit is built through a private index (GIT_INDEX_FILE): read HEAD's tree into it, add only
optlog's paths, write the tree, make the commit object, and move the branch with a compare-and-swap
`update-ref`. The user's staged and unstaged changes are never swept in.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from optlog.errors import Failed
from optlog.paths import Workspace

FALLBACK_NAME = "optlog"
FALLBACK_EMAIL = "optlog@localhost"


@dataclass
class CommitRequest:
    subject: str
    body: str = ""
    trailers: dict[str, str] = field(default_factory=dict)
    paths: list[Path] = field(default_factory=list)


def message(req: CommitRequest) -> str:
    parts = [req.subject.strip()]
    if req.body.strip():
        parts.append(req.body.strip())
    if req.trailers:
        parts.append("\n".join(f"{k}: {v}" for k, v in req.trailers.items()))
    return "\n\n".join(parts) + "\n"


def _git(ws: Workspace, *args: str, env: dict[str, str] | None = None, input: str | None = None) -> str:
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(["git", *args], cwd=ws.root, env=e, input=input, capture_output=True, text=True)
    if p.returncode != 0:
        raise Failed(f"git {args[0]} failed: {p.stderr.strip() or p.stdout.strip()}", code="git_failed")
    return p.stdout


def commit(ws: Workspace, req: CommitRequest) -> str | None:
    """Commit `req.paths` (relative to the workspace) as they are on disk; None if nothing changed."""
    from optlog.gitlog.safe import safe_commit

    return safe_commit(ws, req)


def _tmp_index(ws: Workspace) -> str:
    fd, path = tempfile.mkstemp(prefix="optlog-index-")
    os.close(fd)
    os.unlink(path)
    return path
