"""The engine and sessions: SQLite (WAL, busy timeout, IMMEDIATE write transactions) or PostgreSQL.

Why IMMEDIATE: a deferred SQLite transaction that reads first and then writes cannot be upgraded
when another writer got there first, and fails with SQLITE_BUSY whatever the busy timeout. Writers
therefore take the write lock when they begin (SQLAlchemy's documented pysqlite recipe: the driver's
own transaction handling is switched off in the "connect" event and the "begin" event emits BEGIN
itself). On PostgreSQL a transaction-scoped advisory lock gives writers the same one-at-a-time
order, which the replace semantics of `todo write` need.

Start-up: this module imports SQLAlchemy Core only. The ORM session (SQLModel) is imported when a
command first opens one, so hot read paths written in Core (`todo list`) never pay for the ORM or
the model classes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DatabaseError, OperationalError

from optlog.core import jsondoc
from optlog.errors import BadInput, Failed, no_space, out_of_space
from optlog.paths import Workspace
from optlog.store import integrity
from optlog.store.faults import (BUSY_TIMEOUT_S, check_scheme, lock_timeout, locked, pg_connect_args, pg_lock_holders,
                                 read_only, shown_url, sqlite_path, unwritable, write_lock_key)
from optlog.store.lock import workspace_lock
from optlog.store.migrate import ensure_schema
from optlog.store.plainread import APPENDS_KEY, SYNC_SET_SQL, SYNC_STAMP_SQL
from optlog.store.plainwrite import BUMP_SQL

if TYPE_CHECKING:
    from sqlmodel import Session

BUSY_TIMEOUT_MS = int(BUSY_TIMEOUT_S * 1000)
WRITE_OPTION = "optlog_write"


def _sqlite_engine(url: str) -> Engine:
    busy_ms = int(lock_timeout(BUSY_TIMEOUT_MS / 1000) * 1000)
    engine = create_engine(url, connect_args={"timeout": busy_ms / 1000, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _rec: Any) -> None:
        # Hand transaction control to SQLAlchemy's "begin" event below (pysqlite would otherwise
        # emit a deferred BEGIN of its own just before the first INSERT/UPDATE/DELETE).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={busy_ms}")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get(WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")

    return engine


def engine_for(url: str, schema: str | None = None) -> Engine:
    """An engine for `url` with optlog's settings (SQLite pragmas and BEGIN handling; psycopg 3).
    `schema` (PostgreSQL): every connection's search_path, so every table and query is that
    workspace's."""
    check_scheme(url)
    if url.startswith("sqlite"):
        return _sqlite_engine(url)
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return create_engine(url, pool_pre_ping=True, connect_args=pg_connect_args(url, schema))


def schema_for(identity: str) -> str:
    return f"optlog_{identity}"


def _pick_schema(url: str, identity: str) -> str:
    """The PostgreSQL schema of workspace `identity`: its own `optlog_<id>` (created here), or
    `public` where a workspace from before identities keeps its tables (claimed by the first
    identity that opens it; see `OWNER_KEY`)."""
    own = schema_for(identity)
    eng = engine_for(url)
    try:
        with eng.begin() as c:
            c.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})")
            if c.exec_driver_sql("SELECT 1 FROM pg_namespace WHERE nspname = %(s)s", {"s": own}).first():
                return own
            legacy = c.exec_driver_sql("SELECT to_regclass('public.alembic_version')").scalar()
            if legacy:
                if c.exec_driver_sql("SELECT to_regclass('public.sync_stamp')").scalar() is None:
                    return "public"  # revision 0001: no owner yet; the upgrade adds the table, we claim it then
                owner = c.exec_driver_sql("SELECT value FROM public.sync_stamp WHERE key = %(k)s",
                                          {"k": OWNER_KEY}).scalar()
                if owner in (None, identity):
                    return "public"
            c.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{own}"')
            return own
    finally:
        eng.dispose()


def legacy_owner(url: str) -> str | None:
    """The identity that already claimed the tables of a workspace from before identities on a
    shared database (PostgreSQL's `public` schema, or a shared SQLite file), or None: what a second
    clone of that workspace adopts on its upgrade, so the team stays one workspace."""
    if url.startswith("sqlite"):
        path = sqlite_path(url)
        if path is None or not path.is_file():
            return None
        try:
            lite = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                row = lite.execute("SELECT value FROM sync_stamp WHERE key = ?", (OWNER_KEY,)).fetchone()
            finally:
                lite.close()
        except sqlite3.DatabaseError:
            return None  # no table yet, or not optlog's file: opening it says so
        return str(row[0]) if row else None
    eng = engine_for(url)
    try:
        with eng.connect() as c:
            if c.exec_driver_sql("SELECT to_regclass('public.sync_stamp')").scalar() is None:
                return None
            owner = c.exec_driver_sql("SELECT value FROM public.sync_stamp WHERE key = %(k)s",
                                      {"k": OWNER_KEY}).scalar()
            return str(owner) if owner else None
    finally:
        eng.dispose()


def workspace_engine(ws: Workspace) -> Engine:
    """An engine on the workspace's own tables (its schema on PostgreSQL), for tools and tests that
    read the database directly; no migration is run."""
    url = ws.db_url
    ident = ws.identity
    schema = _pick_schema(url, ident) if ident and not url.startswith("sqlite") else None
    return engine_for(url, schema)


OWNER_KEY = "workspace"  # sync_stamp row: the identity of the workspace whose rows this schema holds
SCHEMA_LOCK_KEY = 0x6F707363  # "opsc"


SQLITE_MAGIC = b"SQLite format 3\x00"
WHAT_TO_DO = ("restore it from a backup, or move it aside (optlog then starts a new index: hypotheses "
              "come back from hypotheses/*.yaml; runs, todos and notes kept only in it do not)")


def bad_database(path: str, why: str) -> Failed:
    """A database file optlog will not use: the path, what is wrong, what to do (exit 1: the
    file is at fault, not the command)."""
    return Failed(f"{path}: {why}; {WHAT_TO_DO}", file=path, code="bad_database")


def prepare_sqlite_file(path: Path) -> None:
    """Refuse a file that is not an optlog SQLite database before SQLite sees it, and make a new
    one so that it is never seen empty: SQLite would silently turn an empty (0-byte, perhaps
    truncated) file into a new database. A new file is made aside (in WAL mode, so it has its
    4 KiB header) and linked into place, which fails harmlessly if another process got there first."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(fd)
        try:
            c = sqlite3.connect(tmp)
            c.execute("PRAGMA journal_mode=WAL")
            c.close()
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
        finally:
            for p in (tmp, tmp + "-wal", tmp + "-shm"):
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
        return
    except IsADirectoryError:
        raise bad_database(str(path), "is a folder, not a database file") from None
    if not head:
        raise bad_database(str(path), "is empty (0 bytes), so it is not optlog's database (was it truncated?)")
    if head != SQLITE_MAGIC:
        raise bad_database(str(path), "is not a SQLite database (corrupt, or another program's file)")
    _refuse_foreign(path)
    _check_integrity(path)


def _refuse_foreign(path: Path) -> None:
    """A SQLite file with tables but none of optlog's is another program's database. Read-only, on
    a connection of its own: optlog's engine would switch the file to WAL mode on connecting."""
    try:
        c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            c.close()
    except sqlite3.DatabaseError as e:
        if out_of_space(e, path):  # no room for the shared memory file: the database is fine
            raise no_space(path.parent, "nothing was written") from None
        if (ro := unwritable(path)) is not None:  # no journal can be made: the database is fine
            raise read_only(path, ro) from None
        raise bad_database(str(path), f"cannot be read ({e})") from None
    if names and "alembic_version" not in names and "hypothesis" not in names:
        shown = ", ".join(sorted(names)[:5])
        raise bad_database(str(path), f"holds another program's tables ({shown}), not optlog's")


def _check_integrity(path: Path) -> None:
    """Refuse a file corrupted behind optlog's back, wherever the damage is (see store.integrity):
    SQLite's structural check runs when the file is not as optlog last left it."""
    if integrity.as_stamped(path):
        return
    try:
        c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            found = integrity.problems(c)
        finally:
            c.close()
    except sqlite3.DatabaseError as e:
        found = [str(e)]
    if found:
        raise bad_database(str(path), f"is corrupt (SQLite's check found: {'; '.join(found)[:400]})")
    integrity.restamp(path)


# the change counters each kind of write bumps (see `Database.write`)
COUNTERS: dict[str, frozenset[int]] = {"all": frozenset({1, 2, 3}), "append": frozenset({1, 2, 3}),
                                       "index": frozenset(), "todos": frozenset({1}), "derived": frozenset(),
                                       "launch": frozenset({1, 2})}
EVIDENCE_COUNTER = 3
# writes that leave the evidence as it was: nested in an "append" write, it still only appended
_NOT_EVIDENCE = frozenset({"append", "index", "todos", "derived", "launch"})
MAX_JOURNAL = 1000  # runs the journal of appends holds; past it the chain breaks (the memo is worked out again)


def _known(touches: str) -> None:
    """An unknown kind of write fails before anything is written."""
    if touches not in COUNTERS:
        raise ValueError(f"unknown kind of write {touches!r}; one of {', '.join(COUNTERS)}")


class Database:
    """One database connection pool for a workspace (created lazily by the service context)."""

    def __init__(self, ws: Workspace, url: str | None = None) -> None:
        self.ws = ws
        self.url = url or ws.db_url
        check_scheme(self.url)
        self.is_sqlite = self.url.startswith("sqlite")
        path = sqlite_path(self.url) if self.is_sqlite else None
        self._checked_file = path  # checked good when opened: stamped again when closed (store.integrity)
        if path is not None:
            prepare_sqlite_file(path)
        self.identity = ws.identity
        self.schema: str | None = None
        if not self.is_sqlite and self.identity:
            self.schema = _pick_schema(self.url, self.identity)
        self.engine = engine_for(self.url, self.schema)
        # writers of one workspace take turns; other workspaces on the server do not wait on them
        self.write_lock_key = write_lock_key(self.schema)
        self._write_engine_: Engine | None = None
        self._read_engine_: Engine | None = None
        # the connection of this thread's open write transaction (see `write`): nested writes and
        # reads of the same thread go through it instead of waiting on the lock it holds
        self._held = threading.local()
        # the revision this open upgraded the database from (None: no upgrade), said by the first
        # command after it (service.context)
        self.upgraded_from: str | None = None
        try:
            self.upgraded_from = ensure_schema(self.engine)
        except DatabaseError as e:
            self.engine.dispose()
            if out_of_space(e, path):  # SQLite could not make its shared memory or journal: not a bad file
                raise no_space(path.parent if path else self.url, "nothing was written") from None
            if path is not None and (ro := unwritable(path)) is not None:
                raise read_only(path, ro) from None
            raise bad_database(str(path or self.url), f"cannot be read ({getattr(e, 'orig', e)})") from None
        self._claim()

    def _claim(self) -> None:
        """Record which workspace's rows this database (or schema) holds, and refuse a different
        workspace on the same shared SQLite file (SQLite holds one workspace: share PostgreSQL)."""
        if not self.identity or self.url == f"sqlite:///{self.ws.db_file}":
            return  # the workspace's own file
        q = text("SELECT value FROM sync_stamp WHERE key = :k").bindparams(k=OWNER_KEY)
        with self.engine.connect() as c:
            owner = c.execute(q).scalar()
        if owner is None:
            with self.engine.begin() as c:
                c.execute(text("INSERT INTO sync_stamp (key, value) VALUES (:k, :v) ON CONFLICT DO NOTHING"),
                          {"k": OWNER_KEY, "v": self.identity})
                owner = c.execute(q).scalar()
        if owner != self.identity:
            where = self.url if self.is_sqlite else f"schema {self.schema} of {self.url.rsplit('@', 1)[-1]}"
            raise BadInput(
                f"the database {where} holds the rows of another workspace (id {owner}); this one is "
                f"{self.identity}. A SQLite file holds one workspace: unset OPTLOG_DB_URL to use this "
                f"workspace's own .optlog/optlog.db, or share a PostgreSQL database (one schema per workspace)",
                file="optlog.yaml", field="id", code="foreign_database")

    @property
    def _write_engine(self) -> Engine:
        if self._write_engine_ is None:
            self._write_engine_ = self.engine.execution_options(**{WRITE_OPTION: True})
        return self._write_engine_

    @property
    def _read_engine(self) -> Engine:
        """Reads see the database as of one moment, whatever commits meanwhile: a read of several
        statements (a launch's progress, then its runs) must not mix two states of a write. SQLite's
        read transaction is one snapshot already (the "begin" event's BEGIN, in WAL); PostgreSQL's
        default READ COMMITTED takes a new one per statement, so its reads run REPEATABLE READ (a
        snapshot at the first statement; writes keep READ COMMITTED under the advisory lock)."""
        if self._read_engine_ is None:
            self._read_engine_ = self.engine if self.is_sqlite else self.engine.execution_options(
                isolation_level="REPEATABLE READ")
        return self._read_engine_

    def _held_conn(self) -> Connection | None:
        return getattr(self._held, "conn", None)

    @contextmanager
    def read(self) -> Iterator["Session"]:
        from sqlmodel import Session  # deferred: the ORM; ORM-free reads (todo list) skip it

        held = self._held_conn()
        if held is not None:  # inside this thread's write: read what it wrote (a savepoint, rolled back)
            with Session(bind=held, expire_on_commit=False, join_transaction_mode="create_savepoint") as s:
                yield s
            return
        with Session(self._read_engine, expire_on_commit=False) as s:
            yield s

    @contextmanager
    def write(self, touches: str = "all") -> Iterator["Session"]:
        """A write transaction: serialised with other writers, bumps the change counters, commits.

        `touches` says what the write may change, so that what does not depend on it stays valid
        (issue 47): "all" (the default: anything), "index" (the hypothesis index, derived from the
        files, which every watcher stats itself: bumps nothing, so the read that indexed a changed
        file still stores its document in the read cache), "todos" (the todo list only),
        "derived" (a memo derived from the rest, e.g. which verdicts are due: bumps nothing),
        "append" (new runs inserted whole, each named by `appended`, and nothing else that counts as
        evidence: bumps what "all" bumps, and journals the runs, so the memo of what is due is
        carried over them instead of worked out again from every run: `core.duestate.advance`),
        "launch" (a launch's bookkeeping: its row, its queued, running, failed or cancelled runs,
        their labels and metrics, process records, telemetry; never a run that counts as evidence,
        succeeded and not invalidated: the write that makes one is an "append"; bumps 1 and 2,
        not 3, so a launch's appends stay one chain). The
        counters (`COUNTERS`): 1 moves on every write but a derived one (`change_token`, the read
        cache of `status` and `todo list`); 2 on every write but a todo list's (the read cache of
        `run list`; `hypothesis list`'s reads the files alone); 3 on every write that may change the evidence
        (`service.verdicts.due` keeps what is due under it).

        Re-entrant within a thread: a write opened inside another (a verdict that holds the write
        lock while it judges and commits, see `exclusive`) is a savepoint of the outer one, which
        commits it (and bumps what either touched); it neither waits on the lock its own thread
        holds nor sees a stale snapshot."""
        from sqlmodel import Session  # deferred: the ORM; ORM-free reads (todo list) skip it

        _known(touches)
        held = self._held_conn()
        if held is not None:
            self._nest(touches)
            with Session(bind=held, expire_on_commit=False, join_transaction_mode="create_savepoint") as s:
                yield s
                s.commit()  # releases the savepoint; the outer transaction commits it all
            return
        with Session(self._write_engine, expire_on_commit=False) as s:
            if not self.is_sqlite:
                self._pg_write_lock(s.connection())
            self._open(s.connection(), touches)
            try:
                yield s
                self._bump(s.connection())
                s.commit()
                if self._checked_file is not None:  # a commit may checkpoint into the file: still ours
                    integrity.restamp(self._checked_file)
            finally:
                self._open(None, None)

    @contextmanager
    def write_core(self, touches: str = "all") -> Iterator[Connection]:
        """`write` through a Core connection: the same lock, counters and commit, without the ORM
        (SQLModel's import costs about what a whole first read may: issue 47). For a read that
        indexes a changed file or keeps a memo, with plain SQL."""
        _known(touches)
        held = self._held_conn()
        if held is not None:
            self._nest(touches)
            with held.begin_nested():
                yield held
            return
        with self._write_engine.connect() as c:
            with c.begin():
                if not self.is_sqlite:
                    self._pg_write_lock(c)
                self._open(c, touches)
                try:
                    yield c
                    self._bump(c)
                finally:
                    self._open(None, None)
        if self._checked_file is not None:  # a commit may checkpoint into the file: still ours
            integrity.restamp(self._checked_file)

    def _open(self, conn: Connection | None, touches: str | None) -> None:
        """This thread's write transaction opened on `conn` (None: closed)."""
        self._held.conn = conn
        self._held.bumps = set(COUNTERS[touches]) if touches else set()
        self._held.appended = [] if touches == "append" else None

    def _nest(self, touches: str) -> None:
        """A write nested in this thread's open one: the outer commits what either touched."""
        self._held.bumps |= COUNTERS[touches]
        if touches not in _NOT_EVIDENCE:
            self._held.appended = None  # it may change any evidence: not appends only

    def moves_evidence(self) -> bool:
        """Whether this thread's open write moves the evidence counter (3): a run may become
        evidence (succeeded, not invalidated) only in such a write, else what is due is stale."""
        return EVIDENCE_COUNTER in (getattr(self._held, "bumps", None) or set()) and self._held_conn() is not None

    def appended(self, run_id: int) -> None:
        """Name a run this "append" write inserted (see `write`); elsewhere nothing."""
        got = getattr(self._held, "appended", None)
        if got is not None and self._held_conn() is not None:
            got.append(int(run_id))

    def _bump(self, c: Connection) -> None:
        """Move the change counters this transaction touched (`COUNTERS`), and tell listeners; an
        "append" write journals its runs under the evidence counter it reached (`_journal`)."""
        ids = sorted(self._held.bumps)
        runs = getattr(self._held, "appended", None)
        before = None
        if runs and EVIDENCE_COUNTER in ids:
            before = c.execute(text(f"SELECT n FROM change_counter WHERE id = {EVIDENCE_COUNTER}")).scalar()
        if ids:  # one statement: counters 2 and 3 are made by the first write that bumps them
            c.execute(text(BUMP_SQL.format(values=", ".join(f"({i}, 1)" for i in ids))))
        if runs and before is not None:
            self._journal(c, int(before), runs)
        if not self.is_sqlite:
            c.execute(text("NOTIFY optlog_change"))

    def _journal(self, c: Connection, before: int, runs: list[int]) -> None:
        """Journal the runs this write appended, as the evidence counter moves from `before` to
        `before + 1`: the chain goes on where the journal ended at `before` (every evidence write
        since it began only appended), else it begins again here. A write of another kind moves
        the counter past the journal's end, which breaks the chain (`core.statusdoc.appended_since`)."""
        raw = c.execute(text(SYNC_STAMP_SQL), {"k": APPENDS_KEY}).scalar()
        try:
            was = jsondoc.loads(raw) if raw else None
        except ValueError:
            was = None
        gen = before + 1
        if isinstance(was, dict) and was.get("gen") == before and len(was.get("runs") or []) + len(runs) <= MAX_JOURNAL:
            doc = {"from": was.get("from"), "gen": gen, "runs": [*was["runs"], *([gen, r] for r in runs)]}
        elif len(runs) <= MAX_JOURNAL:
            doc = {"from": before, "gen": gen, "runs": [[gen, r] for r in runs]}
        else:
            return
        for sql in SYNC_SET_SQL:
            c.execute(text(sql), {"k": APPENDS_KEY, "v": json.dumps(doc, separators=(",", ":"))})

    def _pg_write_lock(self, conn: Connection) -> None:
        """Take this workspace's write lock on PostgreSQL (an advisory lock for the transaction).
        Free, the usual case: one statement. Held by another session: waited for as SQLite waits
        for its write lock (OPTLOG_LOCK_TIMEOUT, else 60 s), then named as SQLite's holder is:
        `locked`, exit 1, with the session's server pid, application name (an optlog process's pid
        and host) and client, from pg_locks and pg_stat_activity; nothing written."""
        key = self.write_lock_key
        if conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": key}).scalar():
            return
        wait = lock_timeout(BUSY_TIMEOUT_S)
        conn.exec_driver_sql(f"SET LOCAL lock_timeout = {max(1, int(wait * 1000))}")
        try:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
        except OperationalError as e:
            if getattr(e.orig, "sqlstate", None) != "55P03":  # lock_not_available: the wait ran out
                raise
            try:
                with self.engine.connect() as other:
                    holders = pg_lock_holders(other, key)
            except DatabaseError:
                holders = []
            what = f"the write lock of {f'schema {self.schema} in ' if self.schema else ''}{shown_url(self.url)}"
            raise locked(what, wait, holders) from None
        conn.exec_driver_sql("SET LOCAL lock_timeout = DEFAULT")  # the rest of the transaction as before

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A Core connection in a read transaction: for hot read paths that skip the ORM (inside
        this thread's write transaction: that transaction's connection, so it reads what it wrote)."""
        held = self._held_conn()
        if held is not None:
            yield held
            return
        with self._read_engine.connect() as c:
            c.begin()  # now, not at the first `execute`: a caller reading through the driver's cursor gets one snapshot too
            yield c

    def change_token(self) -> int:
        """A number that changes whenever any process commits a write (cheap to poll)."""
        with self.engine.connect() as c:
            return int(c.exec_driver_sql("SELECT n FROM change_counter WHERE id = 1").scalar() or 0)

    def dispose(self) -> None:
        self.engine.dispose()
        if self._checked_file is not None:  # what changed it since it was checked was this process's SQLite
            integrity.restamp(self._checked_file)


@contextmanager
def exclusive(db: Database) -> Iterator[None]:
    """The workspace's write lock, held from the start (a write session takes SQLite's lock only at
    its first statement; on PostgreSQL it is the advisory lock of `write`, across hosts)."""
    with db.write() as s:
        s.connection().execute(text("UPDATE change_counter SET n = n WHERE id = 1"))
        yield


@contextmanager
def decision_lock(ws: Workspace, db: Database) -> Iterator[None]:
    """What a judgement is made and committed under: the workspace lock (every write of a
    hypothesis file — prediction add/edit, override — and every commit of this clone) and the
    database's write lock from the start (every write that changes what counts as evidence: a run
    recorded, imported or finished by a launch, an invalidation, a launch queued; on PostgreSQL
    across every clone and host that shares the database). So a verdict is judged on the evidence
    as it is when it is committed: a concurrent writer waits for it, or it waits for the writer.

    Always the workspace lock first, then the database's: never the other way round."""
    with workspace_lock(ws), exclusive(db):
        yield


def schema_exists(db: Database, name: str) -> bool:
    """Whether a PostgreSQL schema exists (read only: a report must not create optlog tune's)."""
    with db.engine.connect() as c:
        return c.execute(text("SELECT 1 FROM information_schema.schemata WHERE schema_name = :n"),
                         {"n": name}).first() is not None


def create_schema(db: Database, name: str) -> None:
    """A PostgreSQL schema in the workspace's database (optlog tune's companion schema)."""
    with db.engine.begin() as c:
        c.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{name}"'))
