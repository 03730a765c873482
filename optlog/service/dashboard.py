"""Read models for the dashboard (TUI): cheap change detection and paged loading.

The TUI asks `change_token` twice a second; only when it moves does it reload, and then only
what is on screen (a page of runs, not all of them).
"""

from __future__ import annotations

import os
from typing import Any

from optlog.service.context import Ctx


def files_token(ctx: Ctx) -> tuple[int, int]:
    """(count, newest mtime) of the hypothesis files: a hand edit or a new file moves it."""
    d = ctx.ws.hypotheses_dir
    newest, n = 0, 0
    try:
        newest = os.stat(d).st_mtime_ns
        with os.scandir(d) as it:
            for e in it:
                if e.name.endswith(".yaml"):
                    n += 1
                    m = e.stat().st_mtime_ns
                    if m > newest:
                        newest = m
    except FileNotFoundError:
        pass
    return n, newest


def change_token(ctx: Ctx) -> tuple[Any, ...]:
    """Moves whenever another process writes the database or touches a hypothesis file."""
    return (ctx.db.change_token(), *files_token(ctx))


def hypotheses_tree(ctx: Ctx) -> list[dict[str, Any]]:
    """Hypotheses as nested nodes (parent → children), each with status and prediction counts."""
    from optlog.service import hypotheses as H

    docs = H.sync(ctx)
    nodes = {d.id: {**H.summary(d, docs), "children_nodes": []} for d in docs.values()}
    roots: list[dict[str, Any]] = []
    for hid in sorted(nodes, key=lambda i: (nodes[i]["created"] or "", i)):
        n = nodes[hid]
        p = n["parent"]
        if p and p in nodes:
            nodes[p]["children_nodes"].append(n)
        else:
            roots.append(n)
    return roots


def runs_page(ctx: Ctx, offset: int = 0, limit: int = 200) -> dict[str, Any]:
    from optlog.service import evidence as E

    return {"runs": E.list_runs(ctx, limit=limit, offset=offset), "total": E.count_runs(ctx), "offset": offset}


def live_launches(ctx: Ctx) -> list[dict[str, Any]]:
    from sqlmodel import select

    from optlog.store.models import Launch

    with ctx.db.read() as s:
        rows = s.exec(select(Launch).where(Launch.status.in_(("queued", "running")))).all()  # type: ignore[attr-defined]
        return [{"id": r.id, "status": r.status, "spec": r.spec_path, "progress": r.progress or {}} for r in rows]
