"""The database side of committed run evidence (service.runfiles): which runs this database has, by
uid or number; the stamps that let a command skip files it already read; an invalidation made in
another clone. Plain SQL: these run when a command opens the database, so they stay cheap."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, text

from optlog.store.plainread import MADE_HERE_KEY  # noqa: F401  (set by `init` of a new workspace: this database is no fresh clone's)

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlmodel import Session

    from optlog.store.db import Database

# SQLite's default limit on bound parameters is 999: ask in chunks below it.
_CHUNK = 900


EVIDENCE_STAMP_KEY = "evidence_dir"  # the evidence folder's mtime when this database last read it


def evidence_unchanged(c: Connection, evidence_dir: str) -> bool:
    """Whether the evidence folder is as this database last read it (one stat, one indexed query):
    the common case of opening a workspace, which then loads nothing of the import path."""
    try:
        stamp = str(os.stat(evidence_dir).st_mtime_ns)
    except (FileNotFoundError, NotADirectoryError):
        return True  # no folder: nothing to import
    return sync_stamp(c, EVIDENCE_STAMP_KEY) == stamp


def sync_stamp(c: Connection, key: str) -> str | None:
    """The stamp kept under `key` (e.g. the evidence folder's mtime at the last import)."""
    v = c.execute(text("SELECT value FROM sync_stamp WHERE key = :k"), {"k": key}).scalar()
    return None if v is None else str(v)


def set_sync_stamp(db: Database, key: str, value: str) -> None:
    with db.write() as s:
        s.execute(text("DELETE FROM sync_stamp WHERE key = :k"), {"k": key})
        s.execute(text("INSERT INTO sync_stamp (key, value) VALUES (:k, :v)"), {"k": key, "v": value})


def evidence_stamps(c: Connection) -> dict[str, str | None]:
    """uid → the evidence-file stamp this database last read or wrote, for every run with a uid."""
    return {u: st for u, st in c.execute(text("SELECT uid, evidence_stamp FROM run WHERE uid IS NOT NULL"))}


def set_evidence_stamps(db: Database, stamps: dict[int, str]) -> None:
    """Record the stamp of each run's evidence file (run id → stamp)."""
    if not stamps:
        return

    with db.write() as s:
        for rid, st in stamps.items():
            s.execute(text("UPDATE run SET evidence_stamp = :s WHERE id = :i"), {"s": st, "i": rid})


def run_by_uid(s: Session, uid: str) -> tuple[int, bool] | None:
    """(id, invalidated) of the run with `uid`, if this database has it."""
    row = s.execute(text("SELECT id, invalidated FROM run WHERE uid = :u"), {"u": uid}).first()
    return None if row is None else (int(row[0]), bool(row[1]))


def set_invalidated(s: Session, run_id: int, reason: str | None) -> None:
    s.execute(text("UPDATE run SET invalidated = :t, invalid_reason = :w WHERE id = :i"),
              {"t": True, "w": reason, "i": run_id})


def set_evidence_stamp(s: Session, run_id: int, stamp: str) -> None:
    s.execute(text("UPDATE run SET evidence_stamp = :s WHERE id = :i"), {"s": stamp, "i": run_id})


def id_taken(s: Session, run_id: int) -> bool:
    return s.execute(text("SELECT 1 FROM run WHERE id = :i"), {"i": run_id}).first() is not None


def advance_run_ids(s: Session) -> None:
    """After rows were inserted with explicit ids: PostgreSQL's sequence does not advance by itself."""
    s.execute(text("SELECT setval(pg_get_serial_sequence('run', 'id'), (SELECT COALESCE(MAX(id), 1) FROM run))"))


def _in(c: Connection, sql: str, values: Sequence[object]) -> Iterable[tuple[Any, ...]]:
    q = text(sql).bindparams(bindparam("v", expanding=True))
    for i in range(0, len(values), _CHUNK):
        yield from (tuple(row) for row in c.execute(q, {"v": list(values[i:i + _CHUNK])}))


def uids_present(c: Connection, uids: Sequence[str]) -> set[str]:
    """Which of `uids` this database has."""
    return {str(u) for (u,) in _in(c, "SELECT uid FROM run WHERE uid IN :v", uids)}


def ids_present(c: Connection, run_ids: Sequence[int]) -> set[int]:
    """Which of `run_ids` this database has."""
    return {int(n) for (n,) in _in(c, "SELECT id FROM run WHERE id IN :v", run_ids)}


def uids_by_id(c: Connection, run_ids: Sequence[int]) -> dict[int, str | None]:
    """run id → uid for those of `run_ids` this database has."""
    return {int(i): u for i, u in _in(c, "SELECT id, uid FROM run WHERE id IN :v", run_ids)}
