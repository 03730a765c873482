"""Shared fixtures: a real workspace in a temp git repo, the real CLI as a subprocess, and (when
OPTLOG_TEST_PG names a PostgreSQL server) a fresh PostgreSQL database per test.

The whole suite runs twice in CI: once on SQLite, once with OPTLOG_TEST_PG set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PG_BASE = os.environ.get("OPTLOG_TEST_PG")  # e.g. postgresql://postgres@127.0.0.1:5432/postgres


# ---------------------------------------------------------------- stray processes of killed runs
# A test run killed from outside (Ctrl-C twice, a CI timeout, kill -9) never reaches optlog's own
# clean-up, and servers it started (llama-server, the test server) were left running for hours.
# Every process this run starts inherits a mark naming this process; a run ends what still
# carries its own mark when it finishes, and, when it starts, what carries the mark of a run that
# no longer exists. Another test run going on at the same time is never touched.

RUN_MARK = "OPTLOG_TEST_RUN"


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _marked() -> list[tuple[int, str]]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for kv in env:
            if kv.startswith(RUN_MARK.encode() + b"="):
                out.append((int(d.name), kv.split(b"=", 1)[1].decode(errors="replace")))
                break
    return out


def _end(pids: list[int]) -> None:
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _alive(mark: str) -> bool:
    pid, _, start = mark.partition(":")
    return pid.isdigit() and _start_time(int(pid)) == start


_OWN_MARK = f"{os.getpid()}:{_start_time(os.getpid())}"
if os.path.isdir("/proc"):
    _end([pid for pid, mark in _marked() if not _alive(mark)])  # left over by a run that was killed
    os.environ[RUN_MARK] = _OWN_MARK


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    controller = getattr(session.config, "workerinput", None) is None and session.config.getoption("dist", "no") != "no"
    if os.path.isdir("/proc") and not controller:  # an xdist controller's mark is on its own workers
        _end([pid for pid, mark in _marked() if mark == _OWN_MARK])


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """`sqlite_only` tests check SQLite itself: on a PostgreSQL pass they are skipped here, not only
    when scripts/test.sh deselects them."""
    if PG_BASE:
        skip = pytest.mark.skip(reason="SQLite-specific (OPTLOG_TEST_PG is set)")
        for item in items:
            if item.get_closest_marker("sqlite_only"):
                item.add_marker(skip)


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.setdefault("OPTLOG_ACTOR", "tester")
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("OPTLOG_DB_URL", None)
    if extra:
        env.update(extra)
    return env


class Workspace:
    """A real optlog workspace (a git repository) in a temp folder, driven through the real CLI."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env

    def cli(self, *args: str, input: str | None = None, check: bool | int = True, timeout: float = 120,
            cwd: Path | None = None, env: dict[str, str] | None = None) -> Result:
        e = dict(self.env)
        if env:
            e.update(env)
        p = subprocess.run([sys.executable, "-m", "optlog", *args], cwd=cwd or self.root, env=e, input=input,
                           capture_output=True, text=True, timeout=timeout)
        r = Result(p.returncode, p.stdout, p.stderr)
        if check is True and p.returncode != 0:
            raise AssertionError(f"optlog {' '.join(args)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        if check is not True and check is not False and p.returncode != check:
            raise AssertionError(f"optlog {' '.join(args)} exited {p.returncode}, expected {check}\n{p.stdout}\n{p.stderr}")
        return r

    def j(self, *args: str, **kw: Any) -> Any:
        """Run with --json and parse stdout."""
        return self.cli(*args, "--json", **kw).json

    def git(self, *args: str) -> str:
        p = subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True, env=self.env)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def commits(self) -> int:
        p = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=self.root, capture_output=True, text=True)
        return int(p.stdout.strip() or 0) if p.returncode == 0 else 0


def _pg_database() -> tuple[str, str]:
    """Create a fresh database on the test PostgreSQL server; returns (url, name)."""
    import psycopg

    name = "optlog_t_" + uuid.uuid4().hex[:12]
    base = PG_BASE.replace("postgresql+psycopg://", "postgresql://")  # type: ignore[union-attr]
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    url = base.rsplit("/", 1)[0] + "/" + name
    return url, name


def _pg_drop(name: str) -> None:
    import psycopg

    base = PG_BASE.replace("postgresql+psycopg://", "postgresql://")  # type: ignore[union-attr]
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _runtime_dir(tmp_path: Path) -> str:
    """The host-wide launch locks (optlog.runs.targetlock) live here: one per test, so tests running
    side by side on one machine do not wait for each other's launches."""
    d = tmp_path / "xdg-runtime"
    d.mkdir(exist_ok=True)
    return str(d)


@pytest.fixture
def db_env() -> Any:
    """Environment for the database under test: {} for SQLite, OPTLOG_DB_URL for PostgreSQL."""
    if not PG_BASE:
        yield {}
        return
    url, name = _pg_database()
    yield {"OPTLOG_DB_URL": url}
    _pg_drop(name)


@pytest.fixture
def backend() -> str:
    return "postgresql" if PG_BASE else "sqlite"


@pytest.fixture
def ws(tmp_path: Path, db_env: dict[str, str]) -> Workspace:
    root = tmp_path / "ws"
    env = _clean_env(db_env)
    env["GIT_CONFIG_GLOBAL"] = str(tmp_path / "gitconfig")
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n")
    env["XDG_RUNTIME_DIR"] = _runtime_dir(tmp_path)
    w = Workspace(root, env)
    w.cli("init", str(root), cwd=tmp_path)
    return w


@pytest.fixture
def make_ws(tmp_path: Path, db_env: dict[str, str]) -> Any:
    """A factory for extra workspaces (each with its own database on PostgreSQL)."""
    made: list[str] = []

    def make(name: str = "ws2", init: bool = True) -> Workspace:
        env = _clean_env()
        if PG_BASE:
            url, dbname = _pg_database()
            made.append(dbname)
            env["OPTLOG_DB_URL"] = url
        env["GIT_CONFIG_GLOBAL"] = str(tmp_path / "gitconfig")
        (tmp_path / "gitconfig").write_text("[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n")
        env["XDG_RUNTIME_DIR"] = _runtime_dir(tmp_path)  # shared with `ws`: one "machine" per test
        root = tmp_path / name
        w = Workspace(root, env)
        if init:
            w.cli("init", str(root), cwd=tmp_path)
        return w

    yield make
    for n in made:
        _pg_drop(n)
