"""Recording decisions in git: the one call service verbs make after changing tracked files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from optlog.gitlog.commit import CommitRequest, commit

if TYPE_CHECKING:
    from optlog.service.context import Ctx


def record(ctx: "Ctx", paths: list[Path], subject: str, body: str = "", trailers: dict[str, str] | None = None) -> str | None:
    if not (ctx.ws.root / ".git").exists():
        return None
    tr = dict(trailers or {})
    tr.setdefault("Optlog-Actor", ctx.actor)
    return commit(ctx.ws, CommitRequest(subject=subject, body=body, trailers=tr, paths=paths))
