"""Faults of the database's environment, named for what they are (issue 34): a PostgreSQL server
that cannot be reached (which host and port, and after how long), a password it refuses, a
database it does not have, a URL of a kind optlog does not speak, a file system that will not
take a write. Each is exit 1 with its own error code and says what to check; none advises moving,
restoring or deleting the database, which is not at fault.

Why here and not in each verb: the first connection happens wherever the first query is (choosing
the schema, the migration check, a hot read), and a pooled connection can fail mid-command; so the
CLI's and MCP's last net (`optlog.cli.main.internal_error`) asks `named` before it calls an
exception internal. Only the standard library at import: the net consults it on every failure.
"""

from __future__ import annotations

import errno
import os
import zlib
from pathlib import Path
from typing import Any

from optlog import settings
from optlog.core.numfmt import fmt_written
from optlog.errors import Failed

BUSY_TIMEOUT_S = 60.0  # how long a SQLite writer waits for another's transaction by default
CONNECT_TIMEOUT_S = 10  # the longest a command waits for a PostgreSQL server to answer (issue 34: <= 10 s)
CONNECT_TIMEOUT_ENV = "OPTLOG_DB_CONNECT_TIMEOUT"
LOCK_TIMEOUT_ENV = "OPTLOG_LOCK_TIMEOUT"
SCHEMES = ("sqlite:///", "postgresql://", "postgres://", "postgresql+psycopg://")


def connect_timeout() -> int:
    """Seconds to wait for a PostgreSQL server's answer: OPTLOG_DB_CONNECT_TIMEOUT (1 or more),
    else CONNECT_TIMEOUT_S."""
    raw = settings.read("db_connect_timeout", "") or ""
    try:
        n = int(raw)
    except ValueError:
        return CONNECT_TIMEOUT_S
    return n if n >= 1 else CONNECT_TIMEOUT_S


def lock_timeout(default: float) -> float:
    """Seconds to wait for a lock another process holds: OPTLOG_LOCK_TIMEOUT (above 0), else `default`."""
    try:
        n = float(settings.read("lock_timeout", "") or "")
    except ValueError:
        return default
    return n if n > 0 else default


def lock_holders(*paths: Any) -> list[dict[str, Any]]:
    """The other processes that hold a write lock on any of `paths` (flock or POSIX; SQLite's
    writer holds one on the database's -shm file), read from /proc/locks: pid and command line.
    [] where that is not known (no /proc, the holder on another host)."""
    want: set[tuple[int, int, int]] = set()
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        want.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    found: list[dict[str, Any]] = []
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return found
    for ln in lines:
        parts = ln.split()
        if "->" in parts:  # a waiter, not a holder
            continue
        try:
            i = parts.index("WRITE")
            pid = int(parts[i + 1])
            maj, mnr, ino = parts[i + 2].split(":")
            key = (int(maj, 16), int(mnr, 16), int(ino))
        except (ValueError, IndexError):
            continue
        if key in want and pid != os.getpid() and all(h["pid"] != pid for h in found):
            found.append({"pid": pid, "command": _cmdline(pid)})
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        return "?"
    return " ".join(w.decode(errors="replace") for w in words if w)[:200]


def locked(what: Any, waited: float, holders: list[dict[str, Any]], left: str = "nothing was written") -> Failed:
    """Another process held `what` for all of `waited` seconds (exit 1, `locked`), naming it."""
    who = ", ".join(f"pid {h['pid']} ({h['command']})" for h in holders) or "another process (not known here)"
    return Failed(f"{what} is locked by {who}: waited {fmt_written(waited)} s; {left}. Let it finish and run the command "
                  f"again ({LOCK_TIMEOUT_ENV} sets the wait)", code="locked",
                  extra={"path": str(what), "holders": holders, "waited_s": waited})


def pg_connect_args(url: str, schema: str | None = None) -> dict[str, Any]:
    """psycopg's connect arguments: the workspace's schema as search_path, the connect timeout
    unless the URL sets its own (`?connect_timeout=N`, which libpq reads from the URL), and an
    application name that says which process this is (`optlog pid N@HOST`): a session that holds
    the write lock is named by it to the one that waits (`pg_lock_holders`), across hosts."""
    args: dict[str, Any] = {"options": f"-csearch_path={schema}"} if schema else {}
    query = url.partition("?")[2]
    if "connect_timeout=" not in query:
        args["connect_timeout"] = connect_timeout()
    if "application_name=" not in query:
        import socket  # deferred: PostgreSQL only (every read imports this module through store.plainread)

        args["application_name"] = f"optlog pid {os.getpid()}@{socket.gethostname()}"[:63]
    return args


def pg_lock_holders(conn: Any, key: int) -> list[dict[str, Any]]:
    """The PostgreSQL sessions that hold advisory lock `key` (a bigint key: pg_locks shows its high
    and low 32 bits as classid and objid) in this database, from pg_locks and pg_stat_activity:
    the server's pid for the session, and what the session says of itself (its application name:
    an optlog process's pid and host, see `pg_connect_args`), its client address, its state and
    since when its transaction is open. `conn`: a SQLAlchemy connection of its own."""
    from sqlalchemy import text  # deferred: only when a lock is found held

    rows = conn.execute(text(
        "SELECT l.pid, a.application_name, host(a.client_addr), a.usename, a.state, a.xact_start "
        "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
        "AND l.classid::bigint = :hi AND l.objid::bigint = :lo AND l.pid <> pg_backend_pid() "
        "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"),
        {"hi": (key >> 32) & 0xFFFFFFFF, "lo": key & 0xFFFFFFFF}).all()
    out = []
    for pid, app, client, user, state, since in rows:
        said = [app or "no application name", f"user {user}" if user else "",
                f"from {client}" if client else "over a local socket", state or "",
                f"in a transaction since {since.isoformat(timespec='seconds')}" if since else ""]
        out.append({"pid": pid, "command": "PostgreSQL session: " + ", ".join(x for x in said if x),
                    "application_name": app, "client": client, "user": user, "state": state,
                    "since": since.isoformat(timespec="seconds") if since else None})
    return out


def _where(url: str) -> dict[str, Any]:
    """Host, port, user and database of a PostgreSQL URL, never its password."""
    try:
        from sqlalchemy.engine import make_url  # deferred: only when a fault is being named

        u = make_url(url)
        return {"host": u.host or "localhost", "port": u.port or 5432, "user": u.username, "database": u.database}
    except Exception:
        return {"host": None, "port": None, "user": None, "database": None}


def shown_url(url: str) -> str:
    """A database URL with its password hidden (for messages)."""
    try:
        from sqlalchemy.engine import make_url  # deferred: only when a fault is being named

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("://", 1)[0] + "://…"


def check_scheme(url: str) -> None:
    """Refuse a database URL of a kind optlog does not speak, before any driver is looked for."""
    if not url.startswith(SCHEMES):
        kind = url.split("://", 1)[0] if "://" in url else url[:20]
        raise Failed(f"the database URL {shown_url(url) if '://' in url else repr(kind)} is of a kind optlog does "
                     f"not speak ({kind!r}): it takes sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE "
                     f"(OPTLOG_DB_URL)", field="OPTLOG_DB_URL", code="bad_database_url", extra={"scheme": kind})


def sqlite_path(url: str) -> Path | None:
    """The file of a `sqlite:///PATH` URL (its query cut off); None for another kind or an in-memory one."""
    if not url.startswith("sqlite:///"):
        return None
    p = url[len("sqlite:///"):].split("?", 1)[0]
    return Path(p) if p and p != ":memory:" else None


def _chain(e: BaseException | None) -> list[BaseException]:
    out: list[BaseException] = []
    while e is not None and e not in out:
        out.append(e)
        e = getattr(e, "orig", None) or e.__cause__ or e.__context__
    return out


def named(e: BaseException, url: str | None) -> Failed | None:
    """The named fault `e` is, or None when it is none of these."""
    chain = _chain(e)
    text = " ".join(str(x) for x in chain).lower()
    if url and not url.startswith("sqlite"):
        pg = _pg_fault(chain, text, url)
        if pg is not None:
            return pg
    file = sqlite_path(url) if url else None
    if file is not None and "database is locked" in text:
        path = str(file)
        return locked(path, lock_timeout(BUSY_TIMEOUT_S), lock_holders(path, path + "-shm", path + "-wal"))
    if file is not None and ("readonly database" in text or "read-only" in text):
        return read_only(str(file), unwritable(file) or "it is read-only")
    return _read_only_os(chain)


def _pg_fault(chain: list[BaseException], text: str, url: str) -> Failed | None:
    w = _where(url)
    at = f"{w['host']}:{w['port']}"
    timeout = any(type(x).__name__ == "ConnectionTimeout" for x in chain) or "timeout expired" in text
    if timeout:
        after = connect_timeout() if "connect_timeout=" not in url else None
        said = f"after {after} s" if after else "within the URL's connect_timeout"
        return Failed(f"cannot reach the PostgreSQL server at {at}: no answer {said}; nothing was read or written. "
                      f"Check that the server runs and that OPTLOG_DB_URL names it ({CONNECT_TIMEOUT_ENV} sets the wait)",
                      code="db_unreachable", extra={"host": w["host"], "port": w["port"], "after_s": after})
    for needle, why in (("connection refused", "connection refused (nothing listens there)"),
                        ("failed to resolve host", "the host name is not known"),
                        ("could not translate host name", "the host name is not known"),
                        ("no route to host", "no route to the host"),
                        ("network is unreachable", "the network is unreachable")):
        if needle in text:
            return Failed(f"cannot reach the PostgreSQL server at {at}: {why}; nothing was read or written. "
                          f"Check that the server runs and that OPTLOG_DB_URL names it",
                          code="db_unreachable", extra={"host": w["host"], "port": w["port"], "after_s": None})
    if any(t in text for t in ("terminating connection", "server closed the connection", "connection is lost",
                               "consuming input failed", "the connection is closed", "connection already closed")):
        return Failed(f"the PostgreSQL server at {at} ended this command's connection (it was stopped or restarted, "
                      f"or the connection was ended) before the command finished; the transaction it had open was "
                      f"rolled back, so nothing of that transaction was written. Run the command again when the server is back",
                      code="db_connection_lost", extra={"host": w["host"], "port": w["port"]})
    if "password authentication failed" in text or "authentication failed" in text or "no password supplied" in text:
        return Failed(f"the PostgreSQL server at {at} refused user {w['user']!r}: authentication failed; nothing was "
                      f"read or written. Check the user and password in OPTLOG_DB_URL",
                      code="db_auth_failed", extra={"host": w["host"], "port": w["port"], "user": w["user"]})
    if "does not exist" in text and "database" in text and w["database"] and f'"{w["database"].lower()}"' in text:
        return Failed(f"the PostgreSQL server at {at} has no database {w['database']!r}; nothing was read or "
                      f"written. Create it (createdb {w['database']}) or name an existing one in OPTLOG_DB_URL",
                      code="db_missing", extra={"host": w["host"], "port": w["port"], "database": w["database"]})
    return None


def unwritable(path: Any) -> str | None:
    """Why the SQLite file at `path`, or the folder it keeps its journal in, will not take a write
    (a read-only file system, no write permission), or None when both would."""
    p = os.fspath(path)
    folder = os.path.dirname(p) or "."
    for target in (p, folder):
        if not os.path.exists(target):
            continue
        try:
            if os.statvfs(target).f_flag & os.ST_RDONLY:
                return f"{folder} is on a read-only file system"
        except OSError:
            pass
        if not os.access(target, os.W_OK):
            return f"{target} is not writable by this user"
    return None


def read_only(path: Any, why: str) -> Failed:
    """A database (or workspace file) that cannot be written: not a bad file (exit 1, `read_only`)."""
    return Failed(f"the database {path} cannot be opened because {why}: SQLite writes its journal beside the "
                  f"file even to read it. Nothing was read or written and the file is not at fault; make it "
                  f"writable (remount the file system read-write, or give this user write permission) and run "
                  f"the command again", file=str(path), code="read_only", extra={"path": str(path)})


def _read_only_os(chain: list[BaseException]) -> Failed | None:
    for x in chain:
        if isinstance(x, OSError) and x.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            target = x.filename2 or x.filename  # a rename into place names the file it replaces second
            what = target or "a workspace file"
            name = str(target) if target else None
            if x.errno == errno.EROFS:
                return Failed(f"cannot write {what}: the file system is read-only. Remount it read-write and run "
                              f"the command again", file=name, code="read_only", extra={"path": name})
            return Failed(f"permission denied on {what} (this user may not read or write it). Give this user "
                          f"access and run the command again", file=name, code="permission_denied",
                          extra={"path": name})
    return None


WRITE_LOCK_KEY = 0x6F70746C  # "optl": PostgreSQL's advisory write lock (store.db.Database.write)


def write_lock_key(schema: str | None) -> int:
    """The advisory lock the writers of one workspace's schema take turns on (other workspaces on
    the server do not wait on them)."""
    return WRITE_LOCK_KEY ^ (zlib.crc32(schema.encode()) if schema else 0)
