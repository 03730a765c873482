"""The todo list: the agent's own plan of work, with links to hypotheses.

`write` has replace semantics (the list given is the whole list) and keeps each todo's hypothesis
link across writes, matching by id, else by content.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from optlog.core.limits import LIMITS
from optlog.core.timeutil import now_iso
from optlog.core.todos import (TodoIn, check_priority, check_status, list_owner_of, new_todo_id, parse_todowrite,
                               rows_after)
from optlog.errors import BadInput, not_found, param
from optlog.needs import Files, Index, Reads
from optlog.service import documents
from optlog.service.refs import require
from optlog.store import todoinbox
from optlog.store.todorows import (
    last_position,
    list_owner,
    new_todo,
    set_list_owner,
    todo,
    todo_ids,
    todo_rows,
    todos_in_order,
)
from optlog.yamlio import decode, parse_json, read_text


def _out(t: Any) -> dict[str, Any]:
    d = {"id": t.id, "content": t.content, "status": t.status, "priority": t.priority, "hypothesis": t.hypothesis_id}
    for k, v in (t.extra or {}).items():
        d.setdefault(k, v)
    return d


def drain(ctx: Reads) -> int:
    """Apply the lists an agent's hook queued (store.todoinbox), oldest first; how many. Every
    reader and writer of the list calls this first, so no one sees the list without them."""
    n = 0
    for path in todoinbox.pending(ctx.ws):
        mine = todoinbox.claim(path)
        if mine is None:
            continue  # another process applies it
        try:
            data = parse_json(mine.read_text(encoding="utf-8"), ctx.ws.rel(path))
            write(ctx, data, ctx.ws.rel(path), queued=True)
        except BadInput as e:  # validated when queued: only a hand-made file gets here
            ctx.notice(f"a queued todo list was not applied ({e.message}); it is kept as {ctx.ws.rel(mine)}.bad")
            os.replace(mine, mine.with_name(mine.name + ".bad"))
            continue
        mine.unlink()
        n += 1
    return n


def list_(ctx: Reads, status: str | None = None, hypothesis: str | None = None) -> list[dict[str, Any]]:
    """The list in order, in the shape `todo write` takes (store.todorows: agents call this many
    times a minute)."""
    drain(ctx)

    if status is not None:
        check_status(status)
    with ctx.db.connect() as c:
        rows = todo_rows(c, status, hypothesis)
    out = []
    for tid, content, st, prio, hyp, extra in rows:
        d = {"id": tid, "content": content, "status": st, "priority": prio, "hypothesis": hyp}
        for k, v in (extra or {}).items():
            d.setdefault(k, v)
        out.append(d)
    return out


def add(ctx: Reads, content: str, priority: str | None = "medium", hypothesis: str | None = None,
        status: str = "pending") -> dict[str, Any]:
    drain(ctx)
    if not content.strip():
        raise BadInput("a todo needs text", field="text")
    check_priority(priority)
    check_status(status)
    if hypothesis:
        require(ctx, hypothesis)
    now = now_iso()
    with ctx.db.write(touches="todos") as s:
        t = new_todo(id=new_todo_id(todo_ids(s)), content=content.strip(), status=status, priority=priority,
                     hypothesis_id=hypothesis, position=last_position(s) + 1, created_at=now, updated_at=now)
        s.add(t)
        s.flush()
        return _out(t)


def set_(ctx: Reads, tid: str, status: str | None = None, priority: str | None = None,
         hypothesis: str | None = None, content: str | None = None) -> dict[str, Any]:
    drain(ctx)
    if status is not None:
        check_status(status)
    if priority is not None:
        check_priority(priority)
    if status is None and priority is None and hypothesis is None and content is None:
        raise BadInput(f"nothing to change: give {param('status')}, {param('priority')}, {param('hypothesis')} or {param('content')}", field="status")
    if hypothesis:
        require(ctx, hypothesis)
    with ctx.db.write(touches="todos") as s:
        t = todo(s, tid)
        if t is None:
            raise not_found("todo", tid, sorted(todo_ids(s)), field="tid")
        if status is not None:
            t.status = status
        if priority is not None:
            t.priority = priority
        if hypothesis is not None:
            t.hypothesis_id = hypothesis or None
        if content is not None:
            t.content = content
        t.updated_at = now_iso()
        s.add(t)
        s.flush()
        return _out(t)


def read_todowrite(source: str) -> tuple[Any, str]:
    """Read todowrite JSON from a file path or '-' (stdin); JSON errors name line and column."""
    if source == "-":
        name = "<stdin>"
        text = decode(sys.stdin.buffer.read(LIMITS.file_bytes + 1), name)
    else:
        name = source
        if not Path(source).is_file():
            raise BadInput(f"no such file: {source}", file=source, field="source")
        text = read_text(Path(source), source)
    return parse_json(text, name), name


def write(ctx: Reads, data: Any, file: str = "<stdin>", *, queued: bool = False) -> list[dict[str, Any]]:
    """Replace the todo list with `data` (todowrite JSON); return it in the same shape."""
    if not queued:
        drain(ctx)  # older lists first: this one replaces them

    incoming: list[TodoIn] = parse_todowrite(data, file)
    owner = list_owner_of(data, file)  # a hook's list is its tool's (issue 31)
    links = {t.hypothesis for t in incoming if t.hypothesis}
    if links:
        for h in links:
            require(ctx, h, field="todos[].hypothesis")
    now = now_iso()
    with ctx.db.write(touches="todos") as s:
        existing = todos_in_order(s)
        by_id = {t.id: t for t in existing}
        keep, planned = rows_after(incoming, [(t.id, t.content) for t in existing])
        for t in existing:
            if t.id not in keep:
                s.delete(t)
        s.flush()
        result = []
        for inc, mid, tid, pos in planned:
            if mid is not None:
                row = by_id[mid]
                row.content, row.status, row.priority = inc.content, inc.status, inc.priority
                if inc.has_hypothesis:
                    row.hypothesis_id = inc.hypothesis
                row.extra, row.position, row.updated_at = inc.extra, pos, now
            else:
                row = new_todo(id=tid, content=inc.content, status=inc.status, priority=inc.priority,
                               hypothesis_id=inc.hypothesis, position=pos, extra=inc.extra, created_at=now,
                               updated_at=now)
            s.add(row)
            result.append(row)
        set_list_owner(s, owner)
        s.flush()
        return [_out(t) for t in result]


def owner(ctx: Index) -> str | None:
    """The agent tool whose hook writes the whole list (`TodoWrite`), or None."""
    with ctx.db.connect() as c:
        return list_owner(c)


# ---------------------------------------------------------------- the verbs' documents (every face)


def queue(ctx: Files, source: str) -> int:
    """`todo write --queue`: validate and queue the list the file `source` holds ('-': stdin) for
    the next optlog call (store.todoinbox); how many todos. The fast path (`optlog.cli.fast`)
    answers the same without loading the CLI."""
    data, file = read_todowrite(source)
    return todoinbox.queue(ctx.ws, data, file)
