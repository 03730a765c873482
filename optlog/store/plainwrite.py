"""A write on a plain connection (issue 47): the first read after a change writes what the full
path would write on its way (`store.plainindex`: the index of a changed hypothesis file;
`store.plaintodos`: a todo list the agent's hook queued) without SQLAlchemy, in a transaction made
as `store.db.Database.write_core` makes one."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from optlog.store import integrity
from optlog.store.faults import BUSY_TIMEOUT_S, lock_timeout, write_lock_key

# store.db.Database._bump: the counters a write touches (store.db.COUNTERS), made by the first write
BUMP_SQL = "INSERT INTO change_counter (id, n) VALUES {values} ON CONFLICT (id) DO UPDATE SET n = change_counter.n + 1"


class Busy(Exception):
    """Another writer holds the write lock: the full path waits for it (and names it)."""


class Writer:
    """SQL with `:name` parameters on a plain connection in a write transaction (`writing`)."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.pg = not isinstance(con, sqlite3.Connection)

    def _sql(self, sql: str) -> str:
        return re.sub(r":(\w+)", r"%(\1)s", sql) if self.pg else sql

    def run(self, sql: str, args: dict[str, Any] | None = None) -> Any:
        return self.con.execute(self._sql(sql), args or {})

    def many(self, sql: str, rows: list[dict[str, Any]]) -> None:
        self.con.cursor().executemany(self._sql(sql), rows)


@contextmanager
def writing(sqlite_file: Path | None, pg: Any = None) -> Iterator[Writer]:
    """A write transaction as `store.db.Database.write_core` makes one, on a plain connection:
    SQLite's `BEGIN IMMEDIATE` (its write lock, waited for as optlog waits), or on PostgreSQL
    (`pg`: a `pg_connect` connection) the workspace's advisory write lock taken at once (`Busy`
    when another writer holds it) and `NOTIFY optlog_change` with the commit. The caller moves the
    counters its write touches. Committed at the end, rolled back on any exception."""
    if pg is not None:
        with pg.transaction():
            schema = pg.execute("SELECT current_schema()").fetchone()[0]
            if not pg.execute("SELECT pg_try_advisory_xact_lock(%s)", (write_lock_key(schema),)).fetchone()[0]:
                raise Busy(schema)
            yield Writer(pg)
            pg.execute("NOTIFY optlog_change")
        return
    assert sqlite_file is not None
    wait = lock_timeout(BUSY_TIMEOUT_S)
    con = sqlite3.connect(str(sqlite_file), timeout=wait, isolation_level=None)
    try:
        con.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
        con.execute("PRAGMA foreign_keys=ON")
        con.execute("PRAGMA synchronous=NORMAL")  # as store.db's connections: WAL synced at checkpoints, not each commit
        con.execute("BEGIN IMMEDIATE")
        try:
            yield Writer(con)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    integrity.restamp(sqlite_file)  # written through SQLite by optlog: the file is still as it knows it
