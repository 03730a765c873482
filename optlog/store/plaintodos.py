"""The first read of the todo list after an agent's hook queued one (issue 47): the queued lists
applied on plain SQL (the standard library's `sqlite3`, or plain psycopg), as `service.todos.drain` applies them, so the read
after the hook needs neither SQLAlchemy nor the ORM.

The same steps as the full path: each list claimed (`store.todoinbox.claim`), oldest first, read
with the same guards as `yamlio.parse_json` (size, UTF-8, duplicate keys, no NaN or Infinity) and
validated by `core.todos.parse_todowrite`; what it does to the list is `core.todos.rows_after` (the
full path's `service.todos.write` runs it too), its owner `core.todos.list_owner_of`; the rows
written in one write transaction (`plainwrite.writing`) that moves change counter 1 (a todo write:
`store.db.COUNTERS["todos"]`). A list that links a hypothesis (its link is checked against the
workspace first), anything the guards refuse, or any error: the claimed list is handed back
untouched and the full path applies it (or says what is wrong with it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from optlog.core import jsondoc
from optlog.core.limits import LIMITS
from optlog.core.timeutil import now_iso
from optlog.core.todos import list_owner_of, parse_todowrite, rows_after
from optlog.paths import Workspace
from optlog.store import todoinbox
from optlog.store.plainread import TODO_OWNER_KEY
from optlog.store.plainwrite import BUMP_SQL, Writer, writing


class _Refused(Exception):
    """Not for this path: the full path applies the list."""


def _no_constant(token: str) -> Any:
    raise _Refused(token)


def _read(path: Path, rel: str) -> Any:
    raw = path.read_bytes()
    if len(raw) > LIMITS.file_bytes:
        raise _Refused("too large")
    text = raw.decode("utf-8")  # strict: anything else is the full path's to report
    if len(text) > LIMITS.file_bytes:
        raise _Refused("too large")
    return jsondoc.loads(text, parse_constant=_no_constant)


def drain(ws: Workspace, sqlite_file: Path | None, pg: Any = None) -> bool:
    """Apply the queued lists, oldest first, on the SQLite file or (`pg`) a `plainread.pg_connect`
    connection; True when none is left waiting (False: the full path applies the rest)."""
    for path in todoinbox.pending(ws):
        mine = todoinbox.claim(path)
        if mine is None:
            continue  # another process applies it
        try:
            rel = ws.rel(path)
            data = _read(mine, rel)
            incoming = parse_todowrite(data, rel)
            if any(t.hypothesis for t in incoming):
                raise _Refused("a hypothesis link: checked by the full path")
            with writing(sqlite_file, pg) as w:
                _write(w, incoming, list_owner_of(data, rel))
        except Exception:  # noqa: BLE001  (handed back: the full path applies it or says what is wrong)
            try:
                os.rename(mine, path)
            except OSError:
                pass
            return False
        mine.unlink()
    return not todoinbox.pending(ws)


def _write(w: Writer, incoming: list[Any], owner: str | None) -> None:
    existing = [(tid, content) for tid, content in
                w.run("SELECT id, content FROM todo ORDER BY position, seq").fetchall()]
    keep, planned = rows_after(incoming, existing)
    for tid, _content in existing:
        if tid not in keep:
            w.run("DELETE FROM todo WHERE id = :id", {"id": tid})
    now = now_iso()
    for inc, mid, tid, pos in planned:
        row = {"id": tid, "content": inc.content, "status": inc.status, "priority": inc.priority,
               "hypothesis_id": inc.hypothesis, "position": pos, "extra": json.dumps(inc.extra), "now": now}
        if mid is not None:
            link = ", hypothesis_id = :hypothesis_id" if inc.has_hypothesis else ""
            w.run("UPDATE todo SET content = :content, status = :status, priority = :priority" + link +
                  ", extra = :extra, position = :position, updated_at = :now WHERE id = :id", row)
        else:
            w.run("INSERT INTO todo (id, content, status, priority, hypothesis_id, position, extra, created_at, "
                  "updated_at) VALUES (:id, :content, :status, :priority, :hypothesis_id, :position, :extra, :now, :now)",
                  row)
    w.run("DELETE FROM sync_stamp WHERE key = :k", {"k": TODO_OWNER_KEY})
    if owner is not None:
        w.run("INSERT INTO sync_stamp (key, value) VALUES (:k, :v)", {"k": TODO_OWNER_KEY, "v": owner})
    w.run(BUMP_SQL.format(values="(1, 1)"))  # store.db.COUNTERS["todos"]
