"""The engine and sessions: SQLite (WAL, busy timeout, IMMEDIATE write transactions) or PostgreSQL.

Why IMMEDIATE: a deferred SQLite transaction that reads first and then writes cannot be upgraded
when another writer got there first, and fails with SQLITE_BUSY whatever the busy timeout. Writers
therefore take the write lock when they begin (SQLAlchemy's documented pysqlite event recipe). On
PostgreSQL a transaction-scoped advisory lock gives writers the same one-at-a-time order, which the
replace semantics of `todo write` need.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlmodel import Session

from optlog.paths import Workspace

WRITE_LOCK_KEY = 0x6F70746C  # "optl"
BUSY_TIMEOUT_MS = 60_000


def _sqlite_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _rec: Any) -> None:
        # Hand transaction control to SQLAlchemy's "begin" event below.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get("optlog_write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")

    return engine


class Database:
    """One database connection pool for a workspace (created lazily by the service context)."""

    def __init__(self, ws: Workspace, url: str | None = None) -> None:
        self.ws = ws
        self.url = url or ws.db_url
        self.is_sqlite = self.url.startswith("sqlite")
        if self.is_sqlite:
            ws.state_dir.mkdir(parents=True, exist_ok=True)
            self.engine = _sqlite_engine(self.url)
        else:
            url = self.url
            if url.startswith("postgresql://") or url.startswith("postgres://"):
                url = "postgresql+psycopg://" + url.split("://", 1)[1]
            self.engine = create_engine(url, pool_pre_ping=True)
        from optlog.store.migrate import ensure_schema

        ensure_schema(self.engine)

    @cached_property
    def _write_engine(self) -> Engine:
        return self.engine.execution_options(optlog_write=True)  # type: ignore[return-value]

    @contextmanager
    def read(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as s:
            yield s

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A write transaction: serialised with other writers, bumps the change counter, commits."""
        with Session(self._write_engine, expire_on_commit=False) as s:
            if not self.is_sqlite:
                s.exec(text("SELECT pg_advisory_xact_lock(:k)").bindparams(k=WRITE_LOCK_KEY))  # type: ignore[call-overload]
            yield s
            s.exec(text("UPDATE change_counter SET n = n + 1 WHERE id = 1"))  # type: ignore[call-overload]
            if not self.is_sqlite:
                s.exec(text("NOTIFY optlog_change"))  # type: ignore[call-overload]
            s.commit()

    def change_token(self) -> int:
        """A number that changes whenever any process commits a write (cheap to poll)."""
        with self.engine.connect() as c:
            return int(c.exec_driver_sql("SELECT n FROM change_counter WHERE id = 1").scalar() or 0)

    def dispose(self) -> None:
        self.engine.dispose()
