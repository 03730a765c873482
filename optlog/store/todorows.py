"""Reading and ordering todo rows (service.todos keeps the rules: ids, matching, statuses)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, text

from optlog.store.plainread import TODO_OWNER_KEY
from optlog.store.plainread import TODO_LIST_SQL as _LIST_SQL  # one text: the plain first read's too

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlmodel import Session

    from optlog.store.models import Todo


def todo_rows(c: Connection, status: str | None = None, hypothesis: str | None = None) -> list[tuple[Any, ...]]:
    """(id, content, status, priority, hypothesis, extra) in list order. Core SQL, not the ORM:
    agents read the list many times a minute, and this path never imports the model classes."""
    conds, params = [], {}
    if status:
        conds.append("status = :status")
        params["status"] = status
    if hypothesis:
        conds.append("hypothesis_id = :hyp")
        params["hyp"] = hypothesis
    sql = _LIST_SQL.format(where=(" WHERE " + " AND ".join(conds)) if conds else "")
    out = []
    for tid, content, st, prio, hyp, extra in c.execute(text(sql), params).all():
        if isinstance(extra, str):  # SQLite hands back the JSON text; psycopg decodes it
            extra = json.loads(extra)
        out.append((tid, content, st, prio, hyp, extra))
    return out


def todo_ids(s: Session) -> set[str]:
    from sqlmodel import select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Todo  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    return set(s.exec(select(Todo.id)).all())


def last_position(s: Session) -> int:
    """The largest position in the list (0 when it is empty)."""
    from sqlmodel import select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Todo  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    return int(s.exec(select(func.max(Todo.position))).one() or 0)


def todo(s: Session, tid: str) -> Todo | None:
    from sqlmodel import select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Todo  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    return s.exec(select(Todo).where(Todo.id == tid)).first()


def todos_in_order(s: Session) -> list[Todo]:
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Todo  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    return list(s.exec(select(Todo).order_by(col(Todo.position), col(Todo.seq))).all())


def new_todo(**fields: Any) -> Todo:
    """A todo row (not yet added to a session): the service builds rows without importing the ORM."""
    from optlog.store.models import Todo  # deferred: the row models load SQLModel (the ORM)

    return Todo(**fields)


OWNER_KEY = TODO_OWNER_KEY  # in sync_stamp: the agent tool whose writes replace the whole list


def list_owner(c: Connection) -> str | None:
    """The agent tool that owns the list (its last whole-list write came from its hook), or None."""
    v = c.execute(text("SELECT value FROM sync_stamp WHERE key = :k"), {"k": OWNER_KEY}).scalar()
    return None if v is None else str(v)


def set_list_owner(s: Session, owner: str | None) -> None:
    s.execute(text("DELETE FROM sync_stamp WHERE key = :k"), {"k": OWNER_KEY})
    if owner is not None:
        s.execute(text("INSERT INTO sync_stamp (key, value) VALUES (:k, :v)"), {"k": OWNER_KEY, "v": owner})
