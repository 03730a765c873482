"""What `optlog status` reads of the runs and launches, in a handful of bounded Core queries (the
ORM's table classes cost more than the whole answer, and an agent calls `status` every few
minutes). service.status keeps the rules: what to show, clipping, the next calls."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from optlog.store.runsync import MADE_HERE_KEY, sync_stamp

if TYPE_CHECKING:
    from sqlalchemy import Connection


@dataclass
class RunFacts:
    total: int = 0
    live_total: int = 0
    live: list[dict[str, Any]] = field(default_factory=list)  # {id, status, name, launch, hypothesis}
    launches: list[dict[str, Any]] = field(default_factory=list)  # {id, status, hypothesis, finished_at, error, runs}
    invalid_total: int = 0
    invalid: list[tuple[int, str | None]] = field(default_factory=list)  # (run, reason), newest first
    newest: dict[str, str] = field(default_factory=dict)  # hypothesis → its newest finished evidence
    made_here: bool = False  # `init` made this workspace with this database (so it is no fresh clone)


def run_facts(c: Connection, since: str, live_cap: int) -> RunFacts:
    """The runs' totals, up to `live_cap` live runs (running first), the 5 newest launches live or
    ended badly since `since` (with their runs counted by status), the 3 newest invalidations, and
    each hypothesis's newest succeeded evidence (its own runs and the runs linked to it)."""
    total = int(c.execute(text("SELECT COUNT(*) FROM run")).scalar() or 0)
    if not total:
        return RunFacts(made_here=sync_stamp(c, MADE_HERE_KEY) is not None)
    live_total = int(c.execute(text("SELECT COUNT(*) FROM run WHERE status IN ('queued','running')")).scalar() or 0)
    live = [dict(r._mapping) for r in c.execute(text(
        "SELECT id, status, name, launch_id AS launch, hypothesis_id AS hypothesis FROM run "
        "WHERE status IN ('queued','running') ORDER BY (status = 'running') DESC, id LIMIT :n"), {"n": live_cap})]
    seen = _launches_seen(c)
    args: dict[str, Any]
    if seen is None:  # no verdict committed since launches were stamped: by time, as before
        cond, args = "COALESCE(finished_at, created_at) >= :since", {"since": since}
    else:  # launches the last verdict had not seen end: created after it, or live then (issue 42)
        cond, args = "(id > :top" + (f" OR id IN ({', '.join(str(int(i)) for i in seen[1])})" if seen[1] else "") + ")", \
            {"top": seen[0]}
    launches = [dict(r._mapping) for r in c.execute(text(
        "SELECT id, status, hypothesis_id AS hypothesis, created_at, finished_at, error FROM launch "
        "WHERE status IN ('queued','running') OR (status IN ('failed','cancelled','interrupted') "
        f"AND {cond}) ORDER BY id DESC LIMIT 5"), args)]
    for la in launches:
        la["runs"] = {s: int(n) for s, n in c.execute(text(
            "SELECT status, COUNT(*) FROM run WHERE launch_id = :l GROUP BY status"), {"l": la["id"]})}
        del la["created_at"]
    inv_total = int(c.execute(text("SELECT COUNT(*) FROM run WHERE invalidated = :t"), {"t": True}).scalar() or 0)
    invalid = [(int(r[0]), r[1]) for r in c.execute(text(
        "SELECT id, invalid_reason FROM run WHERE invalidated = :t ORDER BY id DESC LIMIT 3"), {"t": True})]
    newest: dict[str, str] = {}
    for h, at in c.execute(text(
            "SELECT h, MAX(at) FROM (SELECT hypothesis_id AS h, COALESCE(finished_at, created_at) AS at FROM run "
            "WHERE hypothesis_id IS NOT NULL AND status = 'succeeded' AND invalidated = :f "
            # (evidence_link is looked up by run through ix_evidence_link_run_id, migration 0003)
            "UNION ALL SELECT e.hypothesis_id AS h, COALESCE(r.finished_at, r.created_at) AS at FROM evidence_link e "
            "JOIN run r ON r.id = e.run_id WHERE r.status = 'succeeded' AND r.invalidated = :f) x GROUP BY h"),
            {"f": False}):
        newest[h] = at
    return RunFacts(total, live_total, live, launches, inv_total, invalid, newest)


LAUNCHES_SEEN_KEY = "verdict_launches_seen"  # what the last committed verdict had seen of launches


def launches_seen(c: Connection) -> str:
    """The stamp a committed verdict leaves: the newest launch id and the launches live then, so
    `status` names the launches that ended badly after it by their ids, never by comparing a
    launch's end with the verdict's time (a clock set ahead hid them; issue 42)."""
    top = int(c.execute(text("SELECT COALESCE(MAX(id), 0) FROM launch")).scalar() or 0)
    live = [int(r[0]) for r in c.execute(text("SELECT id FROM launch WHERE status IN ('queued','running') ORDER BY id"))]
    return json.dumps({"top": top, "live": live})


def _launches_seen(c: Connection) -> tuple[int, list[int]] | None:
    raw = sync_stamp(c, LAUNCHES_SEEN_KEY)
    try:
        d = json.loads(raw) if raw else None
        return (int(d["top"]), [int(i) for i in d["live"]]) if isinstance(d, dict) else None
    except (ValueError, TypeError, KeyError):
        return None


def planned_for(c: Connection) -> set[str]:
    """The hypotheses some plan needs (a plan's `needs`: `HYP` or `HYP=falsified`)."""
    out: set[str] = set()
    for (needs,) in c.execute(text("SELECT needs FROM plan")):
        for n in (json.loads(needs) if isinstance(needs, str) else needs) or []:
            out.add(str(n).split("=", 1)[0])
    return out


DUE_MEMO_KEY = "verdict_due"  # in sync_stamp: which verdicts are due, as service.verdicts.due found them
EVIDENCE_COUNTER_SQL = "SELECT n FROM change_counter WHERE id = 3"  # store.db.COUNTERS: writes that may change the evidence


def due_memo(c: Connection) -> tuple[int | None, Any]:
    """(the evidence counter, or None before the first write that made it; the kept memo of what is
    due, or None), in one snapshot."""
    row = c.execute(text(f"SELECT ({EVIDENCE_COUNTER_SQL}), (SELECT value FROM sync_stamp WHERE key = :k)"),
                    {"k": DUE_MEMO_KEY}).one()
    gen = None if row[0] is None else int(row[0])
    try:
        memo = json.loads(row[1]) if row[1] else None
    except ValueError:
        memo = None  # not ours to trust: worked out again
    return gen, memo


def set_due_memo(db: Any, memo: dict[str, Any]) -> None:
    """Keep the memo of what is due (a derived write: no change counter moves, so a read that
    keeps it still stores its document in the read cache)."""
    with db.write_core(touches="derived") as s:
        s.execute(text("DELETE FROM sync_stamp WHERE key = :k"), {"k": DUE_MEMO_KEY})
        s.execute(text("INSERT INTO sync_stamp (key, value) VALUES (:k, :v)"),
                  {"k": DUE_MEMO_KEY, "v": json.dumps(memo, separators=(",", ":"))})
