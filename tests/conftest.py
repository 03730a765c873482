"""Shared fixtures: a real workspace in a temp git repo, the real CLI as a subprocess, and (when
OPTLOG_TEST_PG names a PostgreSQL server) a fresh PostgreSQL database per test.

The whole suite runs twice in CI: once on SQLite, once with OPTLOG_TEST_PG set.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

_sp = subprocess  # `Workspace.cli` has a parameter of that name

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


# The fixtures that give a test the database under test (OPTLOG_DB_URL on a PostgreSQL pass); `ws`,
# `make_ws` and `tool` reach it through `db_env`. A test that uses one of them is a `db` test.
DB_FIXTURES = frozenset({"db_env", "db_env_module"})
# A test that needs llama.cpp's llama-server and the model takes them from the `real_server` fixture
# and is a `realserver` test: what it checks is the server path (requests, counters, timing); its
# writes go through the same store calls that the launches with the test server make, and those run
# on both databases. So the PostgreSQL pass leaves it out (`not realserver`, scripts/test.sh): a
# minute or more a test, for nothing the database could change.
REALSERVER_FIXTURES = frozenset({"real_server"})
# Modules whose tests check the process path — signals and process trees, ports, the target lock,
# the telemetry sampler, the load generator, a peer client, the ssh and Slurm executors — get the
# `process_path` marker. Like the real-server tests, their writes are the launches' writes, made by
# the same store calls that test_launch, test_tune and the concurrency tests make on both databases,
# so the PostgreSQL pass leaves them out (`not process_path`, scripts/test.sh): ~60 tests whose time
# is processes starting and ending, for nothing the database could change. A module that checks what
# a database does (races, shared servers, faults, verdicts) stays off this list.
PROCESS_PATH_MODULES = frozenset({
    "test_launch_signals", "test_proctree", "test_ports", "test_targetlock", "test_telemetry_cli",
    "test_loadgen", "test_peer_client", "test_executor_ssh", "test_executor_slurm", "test_executor_registered",
    # the demo's loop and `optlog tune`'s search: launches and verdicts whose store calls test_launch and
    # the verdict tests make on PostgreSQL; tune's own storage on PostgreSQL (a companion schema, shared
    # by workers, resumed after kill -9) is the one part the database changes: PG_KEEP keeps those tests
    "test_demo", "test_demo_branches", "test_tune",
})
PG_KEEP = frozenset({
    "test_two_workers_share_one_study_and_run_n_distinct_trials",
    "test_kill_9_mid_study_then_resume_loses_and_repeats_no_finished_trial",
})


@pytest.hookimpl(tryfirst=True)  # before `-m` selects on the markers
def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Every test whose fixtures reach the database under test gets the `db` marker, so the
    PostgreSQL pass (`-m db`, scripts/test.sh) runs what depends on the database, and a new test
    falls under the rule by the fixtures it uses; what never opens that database (unit,
    architecture, a TUI picture of its own SQLite workspace) runs once, on the SQLite pass.
    `sqlite_only` tests check SQLite itself: on a PostgreSQL pass they are skipped here, not only
    when scripts/test.sh deselects them."""
    db = pytest.mark.db
    skip = pytest.mark.skip(reason="SQLite-specific (OPTLOG_TEST_PG is set)")
    for item in items:
        names = getattr(item, "fixturenames", ())
        if DB_FIXTURES.intersection(names) and not item.get_closest_marker("sqlite_only"):
            item.add_marker(db)
        if REALSERVER_FIXTURES.intersection(names):
            item.add_marker(pytest.mark.realserver)
        if (getattr(item, "module", None) is not None and item.module.__name__.rsplit(".", 1)[-1] in PROCESS_PATH_MODULES
                and getattr(item, "originalname", item.name) not in PG_KEEP):
            item.add_marker(pytest.mark.process_path)
        if PG_BASE and item.get_closest_marker("sqlite_only"):
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


# ---------------------------------------------------------------- the CLI, in-process or a process
# A test calls the CLI as `ws.cli(...)`. By default the call runs in this process through the same
# entry point as the `optlog` program (`optlog.cli.fast.serve`, then `optlog.cli.main.main`: the
# read cache, click, the bindings, the error documents and exit codes), with the call's own
# environment, working folder, stdin, stdout and stderr swapped in for its length, and the output
# decoded as `subprocess.run(text=True)` decodes it. That saves the interpreter start and imports
# (1-3 s a call on a busy 2-core machine). What only a process shows runs as one: the commands in
# PROCESS_COMMANDS (they run launch drivers, install signal handlers, become a child subreaper,
# change resource limits or serve on stdin), a call with `subprocess=True`, every call of a test
# marked `cli_process` (tests/cli/test_smoke.py, tests/cli/test_process_boundary.py), and every
# call when OPTLOG_TEST_CLI=process (the whole suite as before, to compare).

PROCESS_COMMANDS = frozenset({"tui", "mcp", "demo", "bench", "calibrate", "tune", "telemetry", "run launch"})
IN_PROCESS_READS = frozenset({"tune show", "tune list"})  # reads of a group that runs as a process
CLI_MODE = os.environ.get("OPTLOG_TEST_CLI", "inprocess")


def _command_path(args: tuple[str, ...]) -> tuple[str, ...]:
    """The first two words of the command (global options -C PATH and --json skipped, aliases
    resolved), e.g. ("run", "launch")."""
    from optlog.cli.fast import ALIASES

    words: list[str] = []
    it = iter(args)
    for a in it:
        if a == "-C":
            next(it, None)
        elif a == "--" or (a.startswith("-") and a != "-"):
            if words:
                break
        else:
            words.append(ALIASES.get(a, a) if not words else a)
            if len(words) == 2:
                break
    return tuple(words)


def needs_process(args: tuple[str, ...]) -> bool:
    path = _command_path(args)
    two = " ".join(path[:2])
    return bool(path) and two not in IN_PROCESS_READS and (path[0] in PROCESS_COMMANDS or two in PROCESS_COMMANDS)


class _CliTimeout(BaseException):
    """Raised in an in-process call that ran past its timeout (BaseException: the CLI's own last
    net catches Exception)."""


def _decode(raw: bytes) -> str:
    """As `subprocess.run(..., text=True)` reads a pipe: the locale's encoding, universal newlines."""
    import io
    import locale

    return io.TextIOWrapper(io.BytesIO(raw), encoding=locale.getpreferredencoding(False)).read()


def run_inprocess(args: tuple[str, ...], *, cwd: Path, env: dict[str, str], input: str | None,
                  timeout: float) -> Result:
    """Run `optlog ARGS` in this process as the `optlog` program would run it (optlog.cli.entry)."""
    import io
    import locale
    import signal
    import threading
    import warnings

    from optlog.cli import fast
    from optlog.cli import main as cli_main

    out_b, err_b = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_b, encoding="utf-8", errors="surrogateescape", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", errors="backslashreplace", write_through=True)
    enc = locale.getpreferredencoding(False)
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode(enc)), encoding="utf-8", errors="surrogateescape")
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_std = sys.stdin, sys.stdout, sys.stderr
    alarm = threading.current_thread() is threading.main_thread()
    old_alarm: Any = None
    code: int = 0
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
        if alarm:
            def _expired(_sig: int, _frame: Any) -> None:
                raise _CliTimeout()

            old_alarm = signal.signal(signal.SIGALRM, _expired)
            signal.setitimer(signal.ITIMER_REAL, timeout)
        with warnings.catch_warnings():
            try:
                if not fast.serve(list(args)):
                    cli_main.main(list(args))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except _CliTimeout:
        raise subprocess.TimeoutExpired(["optlog", *args], timeout) from None
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_alarm)
        fast.PENDING = None
        cli_main.close_contexts()
        sys.stdin, sys.stdout, sys.stderr = saved_std
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return Result(code, _decode(out_b.getvalue()), _decode(err_b.getvalue()))


class Workspace:
    """A real optlog workspace (a git repository) in a temp folder, driven through the real CLI
    (in-process by default; see `run_inprocess`)."""

    def __init__(self, root: Path, env: dict[str, str], process: bool = False) -> None:
        self.root = root
        self.env = env
        self.process = process or CLI_MODE == "process"  # every call a process (marker `cli_process`)

    def cli(self, *args: str, input: str | None = None, check: bool | int = True, timeout: float = 120,
            cwd: Path | None = None, env: dict[str, str] | None = None, subprocess: bool | None = None) -> Result:
        """`optlog ARGS`: its exit code, stdout and stderr. `subprocess=True` runs a real process,
        `False` in-process whatever the command; None chooses (see PROCESS_COMMANDS)."""
        e = dict(self.env)
        if env:
            e.update(env)
        process = subprocess if subprocess is not None else (self.process or needs_process(args))
        if process:
            p = _sp.run([sys.executable, "-m", "optlog", *args], cwd=cwd or self.root, env=e, input=input,
                        capture_output=True, text=True, timeout=timeout)
            r = Result(p.returncode, p.stdout, p.stderr)
        else:
            r = run_inprocess(args, cwd=Path(cwd or self.root), env=e, input=input, timeout=timeout)
        where = "" if process else " (in-process)"
        if check is True and r.code != 0:
            raise AssertionError(f"optlog {' '.join(args)} exited {r.code}{where}\nstdout:\n{r.out}\nstderr:\n{r.err}")
        if check is not True and check is not False and r.code != check:
            raise AssertionError(f"optlog {' '.join(args)} exited {r.code}, expected {check}{where}\n{r.out}\n{r.err}")
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


def _pg_base() -> str:
    return PG_BASE.replace("postgresql+psycopg://", "postgresql://")  # type: ignore[union-attr]


def _pg_database(template: str | None = None) -> tuple[str, str]:
    """Create a fresh database on the test PostgreSQL server (a copy of `template` when given);
    returns (url, name)."""
    import psycopg

    name = "optlog_t_" + uuid.uuid4().hex[:12]
    base = _pg_base()
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        # a commit waits for no WAL flush (~2.7 ms each on CI's disk; SQLite's WAL at synchronous=NORMAL
        # waits for none either): only a server crash could lose the last commits, and no test crashes it
        c.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    url = base.rsplit("/", 1)[0] + "/" + name
    return url, name


def _pg_drop(name: str) -> None:
    import psycopg

    with psycopg.connect(_pg_base(), autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _runtime_dir(tmp_path: Path) -> str:
    """The host-wide launch locks (optlog.runs.targetlock) live here: one per test, so tests running
    side by side on one machine do not wait for each other's launches."""
    d = tmp_path / "xdg-runtime"
    d.mkdir(exist_ok=True)
    return str(d)


GITCONFIG = "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"


def _ws_env(tmp_path: Path, db: dict[str, str]) -> dict[str, str]:
    """A test workspace's environment: its database, its own git identity and config, its own
    runtime folder (launch locks)."""
    env = _clean_env(db)
    env["GIT_CONFIG_GLOBAL"] = str(tmp_path / "gitconfig")
    (tmp_path / "gitconfig").write_text(GITCONFIG)
    env["XDG_RUNTIME_DIR"] = _runtime_dir(tmp_path)  # shared by the workspaces of one test: one "machine"
    return env


# ---------------------------------------------------------------- the workspace template
# `optlog init` is a process (1-3 s on a busy 2-core machine) and nearly every test starts from a
# fresh workspace without being about `init`. So each test session (each xdist worker) runs the
# real `optlog init` once per workspace name, and each test gets a copy of that workspace with what
# must be its own made anew: the identity (`id:` in optlog.yaml; the init commit is amended so the
# tree stays clean) and, on PostgreSQL, its own database, a copy of the template's (CREATE DATABASE
# ... TEMPLATE) whose schema is renamed to the new identity. Tests of `init` itself call
# `ws.cli("init", ...)` or `make_ws(..., init=False)` and get the real thing.

_ID_LINE = re.compile(r"^id: ([0-9a-f]{32})", re.M)


@dataclass
class _Template:
    root: Path
    ident: str
    pg_db: str | None  # the database the template was initialised on (PostgreSQL)


class _Templates:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.made: dict[tuple[str | None, ...], _Template] = {}

    def get(self, name: str, env: dict[str, str]) -> _Template:
        """The template for a workspace named `name` initialised under `env` (its actor, clock and
        database kind are what init writes into the workspace)."""
        key = (name, env.get("OPTLOG_ACTOR"), env.get("OPTLOG_NOW"), "pg" if PG_BASE else "sqlite")
        t = self.made.get(key)
        if t is None:
            d = self.base / f"t{len(self.made)}"
            d.mkdir()
            e = _ws_env(d, {})
            pg = None
            if PG_BASE:
                e["OPTLOG_DB_URL"], pg = _pg_database()
            Workspace(d / name, e).cli("init", str(d / name), cwd=d, subprocess=True)
            m = _ID_LINE.search((d / name / "optlog.yaml").read_text())
            assert m, "optlog init wrote no id"
            t = self.made[key] = _Template(d / name, m.group(1), pg)
        return t

    def close(self) -> None:
        for t in self.made.values():
            if t.pg_db:
                _pg_drop(t.pg_db)


@pytest.fixture(scope="session")
def _templates(tmp_path_factory: Any) -> Any:
    t = _Templates(tmp_path_factory.mktemp("optlog-templates"))
    yield t
    t.close()


def _new_identity(name: str, env: dict[str, str]) -> str:
    """What `optlog init` would give this workspace (deterministic under OPTLOG_NOW, as init's is)."""
    from optlog.core.ids import new_id

    saved = os.environ.get("OPTLOG_NOW")
    try:
        os.environ.pop("OPTLOG_NOW", None)
        if env.get("OPTLOG_NOW"):
            os.environ["OPTLOG_NOW"] = env["OPTLOG_NOW"]
        return new_id("workspace", name)
    finally:
        os.environ.pop("OPTLOG_NOW", None)
        if saved is not None:
            os.environ["OPTLOG_NOW"] = saved


def _from_template(w: Workspace, t: _Template) -> None:
    """Make `w` a copy of the template with its own identity (and schema, on PostgreSQL)."""
    shutil.copytree(t.root, w.root, symlinks=True)
    ident = _new_identity(w.root.name, w.env)
    cfg = w.root / "optlog.yaml"
    cfg.write_text(cfg.read_text().replace(f"id: {t.ident}", f"id: {ident}", 1))
    p = subprocess.run(["git", "commit", "-q", "--amend", "--no-edit", "--reset-author", "--", "optlog.yaml"],
                       cwd=w.root, env=w.env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    url = w.env.get("OPTLOG_DB_URL")
    if t.pg_db and url:
        import psycopg

        from optlog.store.db import OWNER_KEY, schema_for

        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f'ALTER SCHEMA "{schema_for(t.ident)}" RENAME TO "{schema_for(ident)}"')
            c.execute(f'UPDATE "{schema_for(ident)}".sync_stamp SET value = %s WHERE key = %s', (ident, OWNER_KEY))


@pytest.fixture(scope="session")
def real_server() -> tuple[Path, Path]:
    """(llama-server binary, model file): skips without them, fails on CI (tests/_realserver.py).
    The one way a test reaches them, so that it is marked `realserver` (see REALSERVER_FIXTURES)."""
    from _realserver import need_real_server

    return need_real_server()


@pytest.fixture
def db_env(request: Any) -> Any:
    """Environment for the database under test: {} for SQLite, OPTLOG_DB_URL for PostgreSQL (for
    `ws`, a copy of the workspace template's database)."""
    if not PG_BASE:
        yield {}
        return
    template = None
    if "ws" in request.fixturenames:
        template = request.getfixturevalue("_templates").get("ws", _clean_env()).pg_db
    url, name = _pg_database(template)
    yield {"OPTLOG_DB_URL": url}
    _pg_drop(name)


@pytest.fixture(scope="module")
def db_env_module() -> Any:
    """`db_env` for a module-scoped fixture (one workspace shared by a module's tests): an empty
    database of its own on PostgreSQL, {} on SQLite."""
    if not PG_BASE:
        yield {}
        return
    url, name = _pg_database()
    yield {"OPTLOG_DB_URL": url}
    _pg_drop(name)


@pytest.fixture
def backend() -> str:
    return "postgresql" if PG_BASE else "sqlite"


def _process(request: Any) -> bool:
    """Whether the test asked for every CLI call to be a real process (marker `cli_process`)."""
    return request.node.get_closest_marker("cli_process") is not None


@pytest.fixture
def ws(request: Any, tmp_path: Path, db_env: dict[str, str], _templates: Any) -> Workspace:
    """A fresh workspace at tmp_path/ws (a copy of the session's `optlog init`, see above)."""
    w = Workspace(tmp_path / "ws", _ws_env(tmp_path, db_env), _process(request))
    _from_template(w, _templates.get("ws", w.env))
    return w


@pytest.fixture
def make_ws(request: Any, tmp_path: Path, db_env: dict[str, str], _templates: Any) -> Any:
    """A factory for extra workspaces (each with its own database on PostgreSQL); `init=False`
    gives an empty folder for tests of `optlog init` and clones."""
    made: list[str] = []

    def make(name: str = "ws2", init: bool = True) -> Workspace:
        root = tmp_path / name
        w = Workspace(root, _ws_env(tmp_path, {}), _process(request))
        t = _templates.get(root.name, w.env) if init else None
        if PG_BASE:
            w.env["OPTLOG_DB_URL"], dbname = _pg_database(t.pg_db if t else None)
            made.append(dbname)
        if t is not None:
            _from_template(w, t)
        return w

    yield make
    for n in made:
        _pg_drop(n)
