"""The first read of the todo list after an agent's hook queued one (issue 47): the queued lists
applied on the standard library's `sqlite3`, as `service.todos.drain` applies them, so the read
after the hook needs neither SQLAlchemy nor the ORM.

The same steps as the full path: each list claimed (`store.todoinbox.claim`), oldest first, read
with the same guards as `yamlio.parse_json` (size, UTF-8, duplicate keys, no NaN or Infinity) and
validated by `core.todos.parse_todowrite`; what it does to the list is `core.todos.rows_after` (the
full path's `service.todos.write` runs it too), its owner `core.todos.list_owner_of`; the rows
written in one `BEGIN IMMEDIATE` transaction that moves change counter 1 (a todo write:
`store.db.COUNTERS["todos"]`). A list that links a hypothesis (its link is checked against the
workspace first), anything the guards refuse, or any error: the claimed list is handed back
untouched and the full path applies it (or says what is wrong with it).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from optlog.core import jsondoc
from optlog.core.limits import LIMITS
from optlog.core.timeutil import now_iso
from optlog.core.todos import list_owner_of, new_id, parse_todowrite, rows_after
from optlog.paths import Workspace
from optlog.store import integrity, todoinbox
from optlog.store.faults import BUSY_TIMEOUT_S, lock_timeout
from optlog.store.plainread import TODO_OWNER_KEY

BUMP_TODOS = "INSERT INTO change_counter (id, n) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET n = change_counter.n + 1"


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


def drain(ws: Workspace, sqlite_file: Path) -> bool:
    """Apply the queued lists, oldest first; True when none is left waiting (False: the full path
    applies the rest)."""
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
            _write(sqlite_file, incoming, list_owner_of(data, rel))
        except Exception:  # noqa: BLE001  (handed back: the full path applies it or says what is wrong)
            try:
                os.rename(mine, path)
            except OSError:
                pass
            return False
        mine.unlink()
    return not todoinbox.pending(ws)


def _write(sqlite_file: Path, incoming: list[Any], owner: str | None) -> None:
    wait = lock_timeout(BUSY_TIMEOUT_S)
    con = sqlite3.connect(str(sqlite_file), timeout=wait, isolation_level=None)
    try:
        con.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
        con.execute("PRAGMA foreign_keys=ON")
        con.execute("BEGIN IMMEDIATE")
        try:
            existing = [(tid, content) for tid, content in
                        con.execute("SELECT id, content FROM todo ORDER BY position, seq").fetchall()]
            keep, planned = rows_after(incoming, existing, new_id)
            for tid, _content in existing:
                if tid not in keep:
                    con.execute("DELETE FROM todo WHERE id = ?", (tid,))
            now = now_iso()
            for inc, mid, tid, pos in planned:
                extra = json.dumps(inc.extra)
                if mid is not None:
                    if inc.has_hypothesis:
                        con.execute("UPDATE todo SET content = ?, status = ?, priority = ?, hypothesis_id = ?, extra = ?, "
                                    "position = ?, updated_at = ? WHERE id = ?",
                                    (inc.content, inc.status, inc.priority, inc.hypothesis, extra, pos, now, mid))
                    else:
                        con.execute("UPDATE todo SET content = ?, status = ?, priority = ?, extra = ?, position = ?, "
                                    "updated_at = ? WHERE id = ?",
                                    (inc.content, inc.status, inc.priority, extra, pos, now, mid))
                else:
                    con.execute("INSERT INTO todo (id, content, status, priority, hypothesis_id, position, extra, "
                                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                (tid, inc.content, inc.status, inc.priority, inc.hypothesis, pos, extra, now, now))
            con.execute("DELETE FROM sync_stamp WHERE key = ?", (TODO_OWNER_KEY,))
            if owner is not None:
                con.execute("INSERT INTO sync_stamp (key, value) VALUES (?, ?)", (TODO_OWNER_KEY, owner))
            con.execute(BUMP_TODOS)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    integrity.restamp(sqlite_file)  # written through SQLite by optlog: the file is still as it knows it
