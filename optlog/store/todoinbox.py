"""The todo inbox: an agent's hook hands its whole todo list over without waiting for a database.

Why: Claude Code runs the TodoWrite hook on every TodoWrite, on the agent's clock. Opening the
database (SQLAlchemy, a migration check; on PostgreSQL a server round trip) cost 1.2-2.8 s a call
on a 2-core machine. `todo write --queue` (answered by `optlog.cli.fast` before click or SQLAlchemy
load, on any backend) validates the list with the same checks as `todo write`
(`core.todos.parse_todowrite`), then writes it as one file under `.optlog/todo-inbox/`; every
command that reads or writes the todo list applies the waiting lists first, oldest first
(`service.todos.drain`), and the read cache answers nothing while one waits. Each list replaces
the whole list, so applying them in order gives what writing them one by one would have.

Only the standard library and `optlog.core.todos` are imported here.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from optlog.core.todos import parse_todowrite, unwrap
from optlog.errors import BadInput
from optlog.paths import Workspace

INBOX = "todo-inbox"


def inbox(ws: Workspace) -> Path:
    return ws.state_dir / INBOX


def queue(ws: Workspace, data: Any, file: str = "<stdin>") -> int:
    """Validate `data` (todowrite JSON or a hook payload) and queue it; the number of todos.
    Raises BadInput as `todo write` does (nothing is queued then)."""
    n = len(parse_todowrite(data, file))
    hyps = {str(t["hypothesis"]) for t in _items(data) if isinstance(t, dict) and t.get("hypothesis")}
    missing = sorted(h for h in hyps if not (ws.hypotheses_dir / f"{h}.yaml").is_file())
    if missing:
        raise BadInput(f"no hypothesis {missing[0]!r}", file=file, field="todos[].hypothesis")
    d = inbox(ws)
    d.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}"
    tmp = d / f".{name}.tmp"
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, d / f"{name}.json")  # whole or not at all
    return n


def _items(data: Any) -> list[Any]:
    inner = unwrap(data)
    items = inner.get("todos") if isinstance(inner, dict) else inner
    return items if isinstance(items, list) else []


def pending(ws: Workspace) -> list[Path]:
    """The queued lists, oldest first (one listdir: cheap when there are none)."""
    try:
        names = os.listdir(inbox(ws))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [inbox(ws) / n for n in sorted(n for n in names if n.endswith(".json") and not n.startswith("."))]


def claim(path: Path) -> Path | None:
    """Take one queued list for applying (a rename: two processes never both apply it), or None."""
    mine = path.with_name(f".{path.stem}.{os.getpid()}.applying")
    try:
        os.rename(path, mine)
    except FileNotFoundError:
        return None
    return mine
