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
