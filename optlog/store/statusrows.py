"""What `optlog status` reads of the runs and launches, in a handful of bounded Core queries (the
ORM's table classes cost more than the whole answer, and an agent calls `status` every few
minutes). service.status keeps the rules: what to show, clipping, the next calls."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from optlog.store import plainread
from optlog.store.plainread import DUE_MEMO_KEY, LAUNCHES_SEEN_KEY, RunFacts

if TYPE_CHECKING:
    from sqlalchemy import Connection


def run_facts(c: Connection, since: str, live_cap: int) -> RunFacts:
    """`store.plainread.run_facts` through SQLAlchemy (the full path's `status`)."""
    return plainread.run_facts(_query(c), since, live_cap)


def _query(c: Connection) -> plainread.Query:
    return lambda sql, args: list(c.execute(text(sql), args).all())


def launches_seen(c: Connection) -> str:
    """The stamp a committed verdict leaves: the newest launch id and the launches live then, so
    `status` names the launches that ended badly after it by their ids, never by comparing a
    launch's end with the verdict's time (a clock set ahead hid them; issue 42)."""
    top = int(c.execute(text("SELECT COALESCE(MAX(id), 0) FROM launch")).scalar() or 0)
    live = [int(r[0]) for r in c.execute(text("SELECT id FROM launch WHERE status IN ('queued','running') ORDER BY id"))]
    return json.dumps({"top": top, "live": live})


def planned_for(c: Connection) -> set[str]:
    """The hypotheses some plan needs (a plan's `needs`: `HYP` or `HYP=falsified`)."""
    return plainread.planned_for(_query(c))


def due_memo(c: Connection) -> tuple[int | None, Any, Any]:
    """(the evidence counter, or None before the first write that made it; the kept memo of what is
    due, or None; the journal of runs appended since), in one snapshot (`store.plainread.due_memo`)."""
    return plainread.due_memo(_query(c))


def counting_runs(c: Connection, ids: list[int]) -> list[tuple[int, str, dict[str, str]]]:
    """`store.plainread.counting_runs` through SQLAlchemy (the runs appended since the memo)."""
    return plainread.counting_runs(_query(c), ids)


def set_due_memo(db: Any, memo: dict[str, Any]) -> None:
    """Keep the memo of what is due (a derived write: no change counter moves, so a read that
    keeps it still stores its document in the read cache)."""
    with db.write_core(touches="derived") as s:
        for sql in plainread.SYNC_SET_SQL:
            s.execute(text(sql), {"k": DUE_MEMO_KEY, "v": json.dumps(memo, separators=(",", ":"))})
