"""todowrite JSON, as coding agents emit it, checked without I/O.

OpenCode's `todowrite`: {content, status, priority[, id]}; Claude Code's `TodoWrite`: {content,
status, activeForm}. Priority may be missing; unknown keys are kept and returned unchanged.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from optlog.core.text import check_tree
from optlog.errors import BadInput

TODO_STATUSES = ("pending", "in_progress", "completed", "cancelled")
# how a todo's status reads in a list, on every face (`todo list`, the dashboard's table and overview)
TODO_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
PRIORITIES = ("high", "medium", "low")
KNOWN = {"id", "content", "status", "priority", "hypothesis"}


@dataclass
class TodoIn:
    content: str
    status: str
    priority: str | None = None
    id: str | None = None
    hypothesis: str | None = None
    has_hypothesis: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def open_first(todos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The todos still to do, in progress before pending, each group in list order: what the agent
    is doing, then what it will do."""
    return [t for t in todos if t["status"] == "in_progress"] + [t for t in todos if t["status"] == "pending"]


def check_status(s: Any, where: str = "status") -> str:
    if s not in TODO_STATUSES:
        raise BadInput(f"unknown todo status {s!r}; one of {', '.join(TODO_STATUSES)}", field=where)
    return str(s)


def check_priority(p: Any, where: str = "priority") -> str | None:
    if p is None:
        return None
    if p not in PRIORITIES:
        raise BadInput(f"unknown priority {p!r}; one of {', '.join(PRIORITIES)}", field=where)
    return str(p)


def parse_todowrite(data: Any, file: str = "<stdin>") -> list[TodoIn]:
    """Validate a whole todowrite document before anything is written."""
    try:
        check_tree(data, file)
        return _parse(data, file)
    except BadInput as e:
        e.file = e.file or file
        raise


def unwrap(data: Any, file: str = "<stdin>") -> Any:
    """The todowrite document inside an agent's hook payload, so a hook pipes its input unchanged:
    Claude Code's PreToolUse/PostToolUse (`{"tool_name": "TodoWrite", "tool_input": {"todos": …}}`),
    OpenCode's `todo.updated` event (`{"type": …, "properties": {"sessionID", "todos"}}`), its
    `tool.execute.before` output (`{"args": {"todos"}}`) and `tool.execute.after` output
    (`{"metadata": {"todos"}}`). Anything else is returned as it is."""
    if not isinstance(data, dict) or "todos" in data:
        return data
    if isinstance(data.get("tool_input"), dict):
        name = data.get("tool_name")
        if name is not None and name != "TodoWrite":
            raise BadInput(f"a hook payload for tool {name!r}; only TodoWrite carries todos (match the hook on TodoWrite)",
                           file=file, field="tool_name")
        return data["tool_input"]
    for key in ("properties", "args", "metadata"):
        if isinstance(data.get(key), dict) and "todos" in data[key]:
            return data[key]
    return data


def _parse(data: Any, file: str) -> list[TodoIn]:
    data = unwrap(data, file)
    if isinstance(data, list):
        items = data  # a bare list is what some agents log; accept it
    elif isinstance(data, dict) and "todos" in data:
        items = data["todos"]
    else:
        raise BadInput('expected a JSON object with a "todos" list', file=file, field="todos")
    if not isinstance(items, list):
        raise BadInput('"todos" must be a list', file=file, field="todos")
    out: list[TodoIn] = []
    seen_ids: set[str] = set()
    for i, it in enumerate(items):
        where = f"todos[{i}]"
        if not isinstance(it, dict):
            raise BadInput("each todo must be an object", file=file, field=where)
        content = it.get("content")
        if not isinstance(content, str) or not content.strip():
            raise BadInput("a todo needs non-empty text in \"content\"", file=file, field=f"{where}.content")
        status = check_status(it.get("status"), f"{where}.status")
        priority = check_priority(it.get("priority"), f"{where}.priority")
        tid = it.get("id")
        if tid is not None:
            if not isinstance(tid, (str, int)) or isinstance(tid, bool) or str(tid) == "":
                raise BadInput("a todo id must be a non-empty string or number", file=file, field=f"{where}.id")
            tid = str(tid)
            if tid in seen_ids:
                raise BadInput(f"duplicate todo id {tid!r}", file=file, field=f"{where}.id")
            seen_ids.add(tid)
        hyp = it.get("hypothesis")
        if hyp is not None and not isinstance(hyp, str):
            raise BadInput("\"hypothesis\" must be a hypothesis id", file=file, field=f"{where}.hypothesis")
        extra = {k: v for k, v in it.items() if k not in KNOWN}
        out.append(TodoIn(content=content, status=status, priority=priority, id=tid, hypothesis=hyp,
                          has_hypothesis="hypothesis" in it, extra=extra))
    return out


def match_existing(incoming: list[TodoIn], existing: list[tuple[str, str]]) -> list[str | None]:
    """For each incoming todo, the id of the existing todo it continues: by id, else by content.

    `existing` is [(id, content)] in list order. Each existing todo matches at most once."""
    by_id = {eid for eid, _ in existing}
    used: set[str] = set()
    result: list[str | None] = [None] * len(incoming)
    for i, t in enumerate(incoming):
        if t.id is not None and t.id in by_id:
            result[i] = t.id
            used.add(t.id)
    for i, t in enumerate(incoming):
        if result[i] is not None or t.id is not None:
            continue
        for eid, content in existing:
            if eid not in used and content == t.content:
                result[i] = eid
                used.add(eid)
                break
    return result


def list_owner_of(data: Any, file: str = "<stdin>") -> str | None:
    """The agent tool a written list belongs to: a list mirrored from an agent's TodoWrite by its
    hook (a hook payload) is that tool's; its next write replaces whatever `todo set` changed, so
    `status` proposes no `todo_set` on it (issue 31). None for a plain todowrite document."""
    return data.get("tool_name") or "TodoWrite" if isinstance(data, dict) and unwrap(data, file) is not data else None


def new_todo_id(taken: set[str]) -> str:
    """A fresh todo id (`t` and 6 hex digits) not in `taken`."""
    while True:
        tid = "t" + secrets.token_hex(3)
        if tid not in taken:
            return tid


def rows_after(incoming: list[TodoIn],
               existing: list[tuple[str, str]]) -> tuple[set[str], list[tuple[TodoIn, str | None, str, int]]]:
    """What writing `incoming` over the list `existing` ([(id, content)] in list order) does: the
    ids of the existing todos kept (the others are deleted), and for each incoming todo (itself, the
    id of the existing todo it continues or None for a new one, its id, its position)."""
    matches = match_existing(incoming, existing)
    keep: set[str] = {m for m in matches if m is not None}
    taken = set(keep) | {t.id for t in incoming if t.id}
    out: list[tuple[TodoIn, str | None, str, int]] = []
    for pos, (inc, mid) in enumerate(zip(incoming, matches)):
        if mid is not None:
            out.append((inc, mid, mid, pos))
        else:
            tid = inc.id or new_todo_id(taken)
            taken.add(tid)
            out.append((inc, None, tid, pos))
    return keep, out
