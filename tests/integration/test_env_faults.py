"""Every environment fault is named for what it is (issue 34 item 3): an unreachable PostgreSQL
server (host, port, after how long), a refused password, a missing database, an unknown kind of
database URL, a read-only file system, a corrupt database (refused by reads too), a lock another
process holds (which one). Each is exit 1 with the error document, no traceback, and no advice
that risks data. The faults are real: a silent TCP listener, a closed port, the real PostgreSQL
server of the test run, a tmpfs remounted read-only, bytes overwritten in the database file, a
lock held by another process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests._tmpfs import tmpfs

from tests.conftest import PG_BASE

RISKY = ("move it aside", "restore it from a backup", "delete", "remove it")


def _fault(r, code: str) -> dict:
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    assert r.code == 1, (r.code, r.out, r.err)
    err = json.loads(r.out)["error"]
    assert err["code"] == code, err
    assert not any(x in err["message"] for x in RISKY), err["message"]
    return err


# ---------------------------------------------------------------- PostgreSQL and the URL


@pytest.fixture
def silent_port():
    """A TCP listener on 127.0.0.1 that accepts connections (the kernel completes the handshake)
    and never says a word."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    try:
        yield s.getsockname()[1]
    finally:
        s.close()


def test_a_server_that_never_answers_is_unreachable_after_the_connect_timeout(ws, silent_port):
    url = f"postgresql://u:pw@127.0.0.1:{silent_port}/db"
    t0 = time.monotonic()
    r = ws.cli("run", "list", "--json", check=False, timeout=30,
               env={"OPTLOG_DB_URL": url, "OPTLOG_DB_CONNECT_TIMEOUT": "1"})
    took = time.monotonic() - t0
    err = _fault(r, "db_unreachable")
    assert took < 8, took
    assert err["host"] == "127.0.0.1" and err["port"] == silent_port and err["after_s"] == 1, err
    assert f"127.0.0.1:{silent_port}" in err["message"] and "after 1 s" in err["message"]
    assert "pw" not in r.out + r.err  # the password is not repeated


def test_the_default_connect_timeout_is_at_most_10_s(monkeypatch):
    from optlog.store.faults import pg_connect_args

    monkeypatch.delenv("OPTLOG_DB_CONNECT_TIMEOUT", raising=False)
    assert 0 < pg_connect_args("postgresql://u@h/db")["connect_timeout"] <= 10
    # a URL's own connect_timeout is the user's word (libpq reads it from the URL)
    assert "connect_timeout" not in pg_connect_args("postgresql://u@h/db?connect_timeout=3")
    # the name a session that holds the write lock is said by (pg_stat_activity.application_name)
    assert pg_connect_args("postgresql://u@h/db")["application_name"].startswith(f"optlog pid {os.getpid()}@")


def test_a_closed_port_is_unreachable(ws):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r = ws.cli("status", "--json", check=False, env={"OPTLOG_DB_URL": f"postgresql://u:pw@127.0.0.1:{port}/db"})
    err = _fault(r, "db_unreachable")
    assert err["port"] == port and "refused" in err["message"]


def test_an_unknown_url_scheme_is_named(ws):
    r = ws.cli("todo", "list", "--json", check=False, env={"OPTLOG_DB_URL": "mysql://a:b@host/db"})
    err = _fault(r, "bad_database_url")
    assert "mysql" in err["message"] and "postgresql://" in err["message"] and "sqlite:///" in err["message"]


@pytest.mark.skipif(not PG_BASE, reason="needs the test PostgreSQL server (OPTLOG_TEST_PG)")
def test_a_wrong_password_and_a_missing_database_on_the_real_server(ws):
    from sqlalchemy.engine import make_url

    base = make_url(PG_BASE.replace("postgresql+psycopg://", "postgresql://"))
    wrong = base.set(password="not-the-password-" + uuid.uuid4().hex[:6])
    r = ws.cli("status", "--json", check=False,
               env={"OPTLOG_DB_URL": wrong.render_as_string(hide_password=False)})
    err = _fault(r, "db_auth_failed")
    assert str(base.username) in err["message"] and "not-the-password" not in r.out + r.err
    missing = "optlog_missing_" + uuid.uuid4().hex[:8]
    r = ws.cli("hypothesis", "list", "--json", check=False,
               env={"OPTLOG_DB_URL": base.set(database=missing).render_as_string(hide_password=False)})
    err = _fault(r, "db_missing")
    assert missing in err["message"] and err["database"] == missing


# ---------------------------------------------------------------- a read-only file system


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real tmpfs of its own (root only), so that the test can remount it read-only."""
    with tmpfs(tmp_path / "disk", "16m") as where:
        yield where


READS = [["status"], ["run", "list"], ["todo", "list"], ["hypothesis", "list"], ["hypothesis", "show", "h"]]
WRITES = [["hypothesis", "add", "New", "--id", "new"], ["run", "record", "--metric", "tps=2"], ["todo", "add", "x"]]


@pytest.mark.sqlite_only
def test_a_read_only_file_system_is_named_and_the_database_is_kept(small_disk, make_ws):
    w = make_ws("disk/ws", init=False)
    w.cli("init", str(w.root), cwd=small_disk)
    w.cli("hypothesis", "add", "H", "--id", "h")
    w.cli("run", "record", "--metric", "tps=1")
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        for cmd in READS + WRITES:
            err = _fault(w.cli(*cmd, "--json", check=False, env={"OPTLOG_READ_CACHE": "0"}), "read_only")
            assert "read-only file system" in err["message"], (cmd, err)
            assert str(w.root / ".optlog" / "optlog.db") in err["message"]
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert len(w.j("run", "list")["runs"]) == 1  # the database was good all along


# ---------------------------------------------------------------- corrupt in the middle


@pytest.mark.sqlite_only
def test_a_database_corrupt_in_its_middle_is_refused_by_reads_too(ws):
    """Pages no read touches (the verdict table's) are overwritten: every command refuses the
    file, naming where SQLite found it corrupt, and the file is left as it is."""
    import sqlite3

    ws.cli("hypothesis", "add", "H", "--id", "h")
    ws.cli("run", "record", "--metric", "tps=1")
    ws.cli("todo", "add", "t")
    assert ws.j("run", "list")["runs"]  # a read the read cache keeps
    db = ws.root / ".optlog" / "optlog.db"
    c = sqlite3.connect(db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = c.execute("PRAGMA page_size").fetchone()[0]
    root = c.execute("SELECT rootpage FROM sqlite_master WHERE name = 'verdict'").fetchone()[0]
    c.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * page)
        f.write(b"\xa5" * page)
    before = db.read_bytes()
    for cmd in (["run", "list"], ["todo", "list"], ["status"], ["hypothesis", "list"], ["verdict", "--all"],
                ["run", "record", "--metric", "tps=2"]):
        r = ws.cli(*cmd, "--json", check=False)
        assert "Traceback" not in r.err, (cmd, r.err)
        assert r.code == 1, (cmd, r.code, r.out)
        err = json.loads(r.out)["error"]
        assert err["code"] == "bad_database" and "corrupt" in err["message"], (cmd, err)
        assert f"page {root}" in err["message"] or "malformed" in err["message"], err
    assert db.read_bytes() == before


# ---------------------------------------------------------------- a lock another process holds

HOLD = """
import sys, time, sqlite3
from filelock import FileLock
kind, path = sys.argv[1], sys.argv[2]
if kind == "file":
    lock = FileLock(path)
    lock.acquire()
else:
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("BEGIN IMMEDIATE")
    c.execute("UPDATE change_counter SET n = n WHERE id = 1")
print("held", flush=True)
time.sleep(60)
"""


def _holder(kind: str, path: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, kind, str(path)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_a_workspace_lock_held_by_another_process_names_it(ws):
    p = _holder("file", ws.root / ".optlog" / "write.lock")
    try:
        t0 = time.monotonic()
        r = ws.cli("hypothesis", "add", "H", "--id", "h", "--json", check=False, env={"OPTLOG_LOCK_TIMEOUT": "1"})
        assert time.monotonic() - t0 < 20
    finally:
        p.kill()
        p.wait()
    err = _fault(r, "locked")
    assert err["holders"][0]["pid"] == p.pid and f"pid {p.pid}" in err["message"], err
    assert not (ws.root / "hypotheses" / "h.yaml").exists()


@pytest.mark.sqlite_only
def test_a_database_write_lock_held_by_another_process_names_it(ws):
    ws.cli("run", "list")  # the database exists, in WAL mode
    p = _holder("sqlite", ws.root / ".optlog" / "optlog.db")
    try:
        r = ws.cli("run", "record", "--metric", "tps=1", "--json", check=False, env={"OPTLOG_LOCK_TIMEOUT": "1"})
    finally:
        p.kill()
        p.wait()
    err = _fault(r, "locked")
    assert f"pid {p.pid}" in err["message"] and "optlog.db" in err["message"], err
    assert ws.j("run", "list")["runs"] == []


def test_the_default_lock_wait_is_unchanged(monkeypatch):
    from optlog.store.faults import lock_timeout

    monkeypatch.delenv("OPTLOG_LOCK_TIMEOUT", raising=False)
    assert lock_timeout(120.0) == 120.0
    monkeypatch.setenv("OPTLOG_LOCK_TIMEOUT", "2")
    assert lock_timeout(120.0) == 2.0


@pytest.mark.skipif(not PG_BASE, reason="needs the test PostgreSQL server (OPTLOG_TEST_PG)")
def test_a_postgresql_connection_ended_mid_command_is_named_and_nothing_is_written(ws, monkeypatch):
    """The server ends the command's connection while it waits to write (what a stopped or
    restarted server does): named `db_connection_lost`, the transaction rolled back."""
    import psycopg

    from optlog.paths import find_workspace
    from optlog.store.db import Database

    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)
    db = Database(find_workspace(ws.root))
    url = ws.env["OPTLOG_DB_URL"]
    holder = psycopg.connect(url, autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (db.write_lock_key,))  # the command waits on it
        p = subprocess.Popen([sys.executable, "-m", "optlog", "run", "record", "--metric", "tps=1", "--json"],
                             cwd=ws.root, env=ws.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        ended = False
        while not ended and time.monotonic() < deadline and p.poll() is None:
            rows = holder.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                  "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()").fetchall()
            for (pid,) in rows:
                ended = holder.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0] or ended
            time.sleep(0.1)
        out, err = p.communicate(timeout=60)
    finally:
        holder.close()
        db.dispose()
    assert ended, (out, err)

    e = _fault(SimpleNamespace(code=p.returncode, out=out, err=err), "db_connection_lost")
    assert "nothing" in e["message"] and e["host"]
    assert ws.j("run", "list")["runs"] == []


@pytest.mark.skipif(not PG_BASE, reason="needs the test PostgreSQL server (OPTLOG_TEST_PG)")
def test_a_postgresql_write_lock_held_by_another_session_names_it(ws, monkeypatch):
    """The write lock (and so the decision lock) held by another session of the real server: the
    write waits the lock wait, then says who holds it (its server pid and application name, from
    pg_locks and pg_stat_activity), as SQLite's held lock is said; it used to wait for ever."""
    import psycopg

    from optlog.paths import find_workspace
    from optlog.store.db import Database

    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)
    db = Database(find_workspace(ws.root))
    holder = psycopg.connect(ws.env["OPTLOG_DB_URL"], autocommit=True, application_name="the test's holder")
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (db.write_lock_key,))
        pid = holder.execute("SELECT pg_backend_pid()").fetchone()[0]
        t0 = time.monotonic()
        r = ws.cli("run", "record", "--metric", "tps=1", "--json", check=False, env={"OPTLOG_LOCK_TIMEOUT": "1"})
        waited = time.monotonic() - t0
    finally:
        holder.close()
        db.dispose()
    err = _fault(r, "locked")
    assert f"pid {pid} (PostgreSQL session: the test's holder" in err["message"], err
    assert err["waited_s"] == 1 and waited < 20
    assert err["holders"][0]["pid"] == pid and err["holders"][0]["application_name"] == "the test's holder"
    assert "password" not in err["message"] and ws.env["OPTLOG_DB_URL"] not in err["message"]
    assert ws.j("run", "list")["runs"] == []


@pytest.mark.sqlite_only
def test_a_long_lived_writer_keeps_the_file_stamped(ws, monkeypatch):
    """A launch driver holds its database open for hours and writes (each commit may checkpoint
    into the file): other commands must not take the file for one changed behind optlog's back
    and check all of it each time."""
    from optlog.paths import find_workspace
    from optlog.store import integrity
    from optlog.store.db import Database
    from optlog.store.runrows import insert_run

    monkeypatch.delenv("OPTLOG_DB_URL", raising=False)
    db = Database(find_workspace(ws.root))
    try:
        for i in range(3):
            with db.write() as s:
                insert_run(s, labels={"i": i}, metrics={"x": 1.0})
            with db.engine.connect() as c:
                c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")  # what an auto-checkpoint does
            with db.write() as s:
                pass
            assert integrity.as_stamped(ws.root / ".optlog" / "optlog.db")
    finally:
        db.dispose()


@pytest.mark.sqlite_only
def test_the_mcp_face_names_a_held_database_lock_too(ws, monkeypatch):
    from _face import face

    ws.cli("run", "list")
    p = _holder("sqlite", ws.root / ".optlog" / "optlog.db")
    try:
        with face(ws, monkeypatch, "OPTLOG_LOCK_TIMEOUT") as call:
            monkeypatch.setenv("OPTLOG_LOCK_TIMEOUT", "1")
            doc, is_error, code = call("run_record", {"metrics": {"tps": 1}})
    finally:
        p.kill()
        p.wait()
    assert is_error and code == 1 and doc["error"]["code"] == "locked", doc
    assert f"pid {p.pid}" in doc["error"]["message"]


def test_a_workspace_file_that_will_not_take_a_write_is_named(ws):
    """An immutable hypothesis file (`chattr +i`: even root gets EPERM) is `permission_denied`
    naming the file, not an internal error; the database and git are left as they were."""
    ws.cli("hypothesis", "add", "H", "--id", "h")
    f = ws.root / "hypotheses" / "h.yaml"
    if subprocess.run(["chattr", "+i", str(f)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available on this file system")
    head = ws.git("rev-parse", "HEAD")
    try:
        r = ws.cli("hypothesis", "edit", "h", "--title", "New title", "--json", check=False)
    finally:
        subprocess.run(["chattr", "-i", str(f)], check=True)
    err = _fault(r, "permission_denied")
    assert str(f) in err["message"] and err["path"] == str(f), err
    assert ws.git("rev-parse", "HEAD") == head and "New title" not in f.read_text()
