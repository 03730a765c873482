"""The safe commit itself (see gitlog.commit for why a private index)."""

from __future__ import annotations

import os

from optlog.gitlog.commit import FALLBACK_EMAIL, FALLBACK_NAME, CommitRequest, _git, _tmp_index, message
from optlog.paths import Workspace


def _identity_env(ws: Workspace) -> dict[str, str]:
    env: dict[str, str] = {}
    for var, key, fallback in (
        ("GIT_AUTHOR_NAME", "user.name", FALLBACK_NAME),
        ("GIT_AUTHOR_EMAIL", "user.email", FALLBACK_EMAIL),
    ):
        if os.environ.get(var):
            continue
        try:
            val = _git(ws, "config", key).strip()
        except Exception:
            val = ""
        if not val:
            env[var] = fallback
            env[var.replace("AUTHOR", "COMMITTER")] = fallback
    return env


def safe_commit(ws: Workspace, req: CommitRequest) -> str | None:
    idx = _tmp_index(ws)
    env = {"GIT_INDEX_FILE": idx}
    try:
        head = None
        try:
            head = _git(ws, "rev-parse", "--verify", "-q", "HEAD").strip() or None
        except Exception:
            head = None
        if head:
            _git(ws, "read-tree", head, env=env)
        rels = [ws.rel(p) for p in req.paths]
        if rels:
            _git(ws, "add", "-A", "--", *rels, env=env)
        tree = _git(ws, "write-tree", env=env).strip()
        if head:
            head_tree = _git(ws, "rev-parse", f"{head}^{{tree}}").strip()
            if head_tree == tree:
                return None
        env2 = _identity_env(ws)
        args = ["commit-tree", tree]
        if head:
            args += ["-p", head]
        sha = _git(ws, *args, env=env2, input=message(req)).strip()
        ref = "HEAD"
        _git(ws, "update-ref", "-m", f"optlog: {req.subject}", ref, sha, *([head] if head else []))
        # Keep the user's real index in step for optlog's own paths only, so `git status`
        # does not show optlog's committed files as staged deletions or changes.
        if rels:
            _git(ws, "reset", "-q", "--", *rels)
        return sha
    finally:
        try:
            os.unlink(idx)
        except FileNotFoundError:
            pass
