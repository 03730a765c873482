"""The workspace's identity: `id:` in optlog.yaml, committed, so rows of two workspaces on one
database server never mix (on PostgreSQL each identity gets its own schema; see store.db).

`optlog init` writes it. A workspace from before identities gets one on first use of a database
that is not its own SQLite file (`OPTLOG_DB_URL` set), committed as `Optlog-Event: identity`.
A clone has the same identity as its origin: it is the same workspace, and on a shared server it
sees the same rows.

The upgrade gives every clone of such a workspace the SAME identity, whoever upgrades first and
whether or not they pulled each other's commit: the identity that already claimed the database's
rows of the workspace (a teammate's clone upgraded first) is adopted; else it is derived from what
every clone has in common, the repository's first commit and the workspace's folder in it; only a
workspace outside git (no clones) gets a random one. Two teammates who upgrade apart then write the
same `id:` line, so `git pull` merges it, and both see the same rows.
"""

from __future__ import annotations

import hashlib
import re

from optlog.core.ids import new_id
from optlog.errors import BadInput
from optlog.gitlog import history
from optlog.gitlog.commit import run_git
from optlog.needs import Commits, Writes
from optlog.paths import IDENTITY_RE
from optlog.gitlog import trailers as TR
from optlog.store import cas
from optlog.store.db import legacy_owner
from optlog.store.lock import workspace_lock


def with_identity(text: str, identity: str) -> str:
    """optlog.yaml's text with an `id:` line added after its leading comments."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (lines[i].lstrip().startswith("#") or not lines[i].strip()):
        i += 1
    line = f"id: {identity}  # this workspace's identity (keeps it apart on a shared database)\n"
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join(lines[:i] + [line] + lines[i:])


def ensure(ctx: Writes, commit: bool = True) -> str:
    """This workspace's identity, added to optlog.yaml (and committed) if it has none yet."""
    ident = ctx.ws.identity
    if ident is not None:
        return ident

    with workspace_lock(ctx.ws):
        ident = ctx.ws.identity
        if ident is not None:
            return ident
        ident, how = upgrade_identity(ctx)

        def identified(text: str) -> str:
            if re.search(r"^id:", text, re.M):
                raise BadInput("`id` must be 32 lower-case hex digits (optlog writes it; remove the line to get a "
                               "new one)", file=ctx.ws.rel(ctx.ws.config_file), field="id")
            return with_identity(text, ident)

        cas.update_text(ctx.ws.config_file, identified)  # from the file as it is: a concurrent edit is kept
        ctx.forget_config()
        if commit:
            history.record(ctx, [ctx.ws.config_file], "optlog: give the workspace an identity",
                           "Rows of this workspace stay apart from other workspaces on a shared database.",
                           {TR.EVENT: "identity"})
            ctx.notice(f"gave this workspace an identity ({ident}, {how}) in optlog.yaml and committed it")
    return ident


def upgrade_identity(ctx: Commits) -> tuple[str, str]:
    """The identity a workspace from before identities takes, and how it was found (see the module)."""
    if ctx.ws.sqlite_file is None:
        owner = legacy_owner(ctx.ws.db_url)
        if owner and IDENTITY_RE.match(owner):
            return owner, "adopted from the shared database, where another clone of it claimed its rows"
    derived = derived_identity(ctx)
    if derived:
        return derived, "derived from the repository's first commit, so every clone gets the same"
    return new_id("workspace", ctx.ws.root.name), "new: the workspace is not in a git repository with commits"


def derived_identity(ctx: Commits) -> str | None:
    """32 hex digits from the repository's root commit(s) and the workspace's folder in it: the
    same in every clone, different for two workspaces of one repository; None outside git or
    before the first commit."""
    info = history.repo(ctx)
    if info is None:
        return None
    p = run_git(ctx.ws.root, "rev-list", "--max-parents=0", "HEAD", check=False)
    roots = sorted(p.stdout.split()) if p.returncode == 0 else []
    if not roots:
        return None
    try:
        folder = ctx.ws.root.resolve().relative_to(info.toplevel.resolve()).as_posix()
    except ValueError:
        folder = "."
    return hashlib.sha256(f"optlog workspace\n{roots[0]}\n{folder}".encode()).hexdigest()[:32]
