"""Helpers for the launcher's tests: free ports, specs around the test server, /proc checks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

TESTS = Path(__file__).resolve().parent
PY = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_cmd(extra: str = "") -> str:
    return "{{ py }} {{ tests }}/testserver.py --port {{ port }} --ttft-ms 2 --itl-ms 1 --model {{ marker }} " + extra


def bench_cmd(extra: str = "") -> str:
    return ("{{ py }} {{ tests }}/_launch_bench.py --url {{ server_url }} --out {{ out }} "
            "--concurrency {{ concurrency }} " + extra)


def spec(ws: Any, name: str = "t", *, server: dict[str, Any] | None | bool = True, bench: dict[str, Any] | None = None,
         params: dict[str, Any] | None = None, **top: Any) -> str:
    """Write runs/<name>.yaml: a server of tests/testserver.py and a bench of tests/_launch_bench.py."""
    port = free_port()
    d: dict[str, Any] = {"name": name,
                         "params": {"py": PY, "tests": str(TESTS), "port": port, "marker": str(ws.root), **(params or {})}}
    if server is True:
        d["server"] = {"cmd": server_cmd(),
                       "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05},
                       "check": {"prompts": ["The capital of France is"], "expect_regex": "Paris"},
                       "stop": {"timeout_s": 3}}
    elif isinstance(server, dict):
        d["server"] = server
    d["bench"] = bench or {"cmd": bench_cmd()}
    d.setdefault("matrix", {"concurrency": [1]})
    d.update(top)
    if "matrix" in top and top["matrix"] is None:
        d.pop("matrix")
    p = ws.root / "runs" / f"{name}.yaml"
    p.write_text(yaml.safe_dump(d, sort_keys=False, width=10000))
    return f"runs/{name}.yaml"


def survivors(marker: str) -> list[tuple[int, str]]:
    """Live processes whose command line mentions `marker` (the workspace path in every command)."""
    out = []
    me = os.getpid()
    for n in os.listdir("/proc"):
        if not n.isdigit() or int(n) == me:
            continue
        try:
            with open(f"/proc/{n}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{n}/stat", "rb") as f:
                st = f.read().decode()
        except OSError:
            continue
        state = st[st.rfind(")") + 2:].split()[0]
        if marker in cmd and state not in ("Z", "X"):
            out.append((int(n), cmd))
    return out


# ---------------------------------------------------------------- one test's own processes
# A test that starts launches as processes marks them with a token of its own (CASE_VAR in the
# workspace's environment, inherited by every process a launch starts), so that what it checks
# and what it ends are its own processes only: never another test's, never by name. A daemon that
# cleared its environment is still found by the workspace path in its command line.

CASE_VAR = "OPTLOG_TEST_CASE"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def mark_case(ws: Any) -> str:
    """Give `ws` (every CLI call and launch of it) a token of this test's own; returns it."""
    ws.env[CASE_VAR] = ws.env.get(CASE_VAR) or uuid.uuid4().hex
    return ws.env[CASE_VAR]


def own_processes(ws: Any) -> list[tuple[int, str]]:
    """Live processes of this test: its token in their environment, or its workspace in their
    command line (zombies left out)."""
    token = f"{CASE_VAR}={ws.env.get(CASE_VAR, '-')}".encode()
    root = str(ws.root)
    me = os.getpid()
    out = []
    for n in os.listdir("/proc"):
        if not n.isdigit() or int(n) == me:
            continue
        try:
            with open(f"/proc/{n}/stat", "rb") as f:
                st = f.read().decode()
            with open(f"/proc/{n}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            try:
                with open(f"/proc/{n}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                env = []
        except OSError:
            continue
        if st[st.rfind(")") + 2:].split()[0] in ("Z", "X"):
            continue
        if root in cmd or token in env:
            out.append((int(n), cmd))
    return out


def assert_none_left(ws: Any, timeout: float = 30.0) -> None:
    """Nothing this test started is alive (a process being killed gets `timeout` to be gone; on an
    idle machine the check passes at once)."""
    deadline = time.monotonic() + timeout
    while (left := own_processes(ws)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"processes of the test survived: {left}"


def end_own(ws: Any) -> None:
    """SIGKILL every process of this test, by pid (a test's finaliser: whatever failed, nothing it
    started outlives it to fail the tests after it)."""
    for _ in range(3):  # a process forking while it is ended is caught by the next pass
        left = own_processes(ws)
        if not left:
            return
        for pid, _cmd in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)


def _as_a_terminal_starts_it(ignore_sigint: bool) -> Any:
    """preexec_fn: SIGINT, SIGTERM and SIGHUP at their defaults, as a command typed at a terminal
    gets them, whatever the test runner inherited (a CI runner under nohup ignores SIGHUP, and an
    ignored SIGHUP is inherited and, by design, stays ignored: docs/launch-safety.md); with
    `ignore_sigint`, SIGINT ignored as a script's background job (`optlog … &`) gets it."""
    def pre() -> None:
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        if ignore_sigint:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    return pre


def start_launch(ws: Any, *args: str, ignore_sigint: bool = False) -> subprocess.Popen:
    """`optlog run launch ARGS --json` as a process in a session of its own, its signals as a
    terminal gives them (see `_as_a_terminal_starts_it`)."""
    return start_optlog(ws, "run", "launch", *args, "--json", ignore_sigint=ignore_sigint)


def start_optlog(ws: Any, *args: str, ignore_sigint: bool = False) -> subprocess.Popen:
    """`optlog ARGS` as `start_launch` starts a launch."""
    return subprocess.Popen([sys.executable, "-m", "optlog", *args], cwd=ws.root, env=ws.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_as_a_terminal_starts_it(ignore_sigint))


class Launch:
    """`optlog run launch ARGS --json` as a process whose stderr is a file, so a test can see it
    waiting (for a lock) while it runs: tests wait for such events, never for a time."""

    def __init__(self, ws: Any, *args: str, env: dict[str, str] | None = None) -> None:
        self.err_file = Path(ws.root).parent / f"launch-{uuid.uuid4().hex[:8]}.err"
        with open(self.err_file, "w") as err:
            self.p = subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", *args, "--json"],
                                      cwd=ws.root, env={**ws.env, **(env or {})}, stdout=subprocess.PIPE,
                                      stderr=err, text=True, preexec_fn=_as_a_terminal_starts_it(False))

    @property
    def err(self) -> str:
        return self.err_file.read_text()

    def waiting(self) -> bool:
        """It said it waits for the machine (or ended)."""
        return "waiting:" in self.err or self.p.poll() is not None

    def communicate(self, timeout: float = 600) -> tuple[str, str]:
        out, _ = self.p.communicate(timeout=timeout)
        return out, self.err

    def poll(self) -> int | None:
        return self.p.poll()

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)


def wait_for(pred: Any, timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def assert_no_survivors(marker: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    left: list[tuple[int, str]] = []
    while time.monotonic() < deadline:
        left = survivors(marker)
        if not left:
            return
        time.sleep(0.05)
    raise AssertionError(f"processes of the run survived: {left}")
