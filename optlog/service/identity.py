"""The workspace's identity: `id:` in optlog.yaml, committed, so rows of two workspaces on one
database server never mix (on PostgreSQL each identity gets its own schema; see store.db).

`optlog init` writes it. A workspace from before identities gets one on first use of a database
that is not its own SQLite file (`OPTLOG_DB_URL` set), committed as `Optlog-Event: identity`.
A clone has the same identity as its origin: it is the same workspace, and on a shared server it
sees the same rows.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from optlog.core.ids import new_id
from optlog.errors import BadInput
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.store import cas
from optlog.store.lock import workspace_lock

if TYPE_CHECKING:
    from optlog.service.context import Ctx


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


def ensure(ctx: "Ctx", commit: bool = True) -> str:
    """This workspace's identity, added to optlog.yaml (and committed) if it has none yet."""
    ident = ctx.ws.identity
    if ident is not None:
        return ident

    with workspace_lock(ctx.ws):
        ident = ctx.ws.identity
        if ident is not None:
            return ident
        ident = new_id("workspace", ctx.ws.root.name)

        def identified(text: str) -> str:
            if re.search(r"^id:", text, re.M):
                raise BadInput("`id` must be 32 lower-case hex digits (optlog writes it; remove the line to get a "
                               "new one)", file=ctx.ws.rel(ctx.ws.config_file), field="id")
            return with_identity(text, ident)

        cas.update_text(ctx.ws.config_file, identified)  # from the file as it is: a concurrent edit is kept
        ctx.__dict__.pop("config", None)
        if commit:
            history.record(ctx, [ctx.ws.config_file], "optlog: give the workspace an identity",
                           "Rows of this workspace stay apart from other workspaces on a shared database.",
                           {TR.EVENT: "identity"})
            ctx.notice(f"gave this workspace an identity ({ident}) in optlog.yaml and committed it")
    return ident
