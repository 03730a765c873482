"""The executor interface: where a run's processes execute. An `Executor` starts a command as its own
process group, says when it ended, and kills the whole group; an `ExecutorKind` is one kind of them
(local, ssh, slurm: one file each in this package) as the rest of optlog knows it, registered in
`optlog.runs.executors.registry`. Nothing outside this package compares a kind's name or parses its
target syntax (tests/architecture/test_executor_kinds.py).

Protocol, as the launcher and telemetry use it:
  ex.kind                         the kind's registered name
  ex.host                         the host name recorded on runs and process records
  ex.on_this_machine              its processes run here (cgroup, ports, host load, /proc are read here)
  ex.telemetry                    "nvml": sampled in this process; "stream": `ex.stream(sampler argv)` on the host
  ex.same_python                  this Python and the workspace are there (a shared filesystem): tune's workers
  ex.popen(argv, env=, cwd=, stdout=PATH, stderr=PATH, role=)  -> Handle   (own process group)
  ex.stream(argv, env=, cwd=, role="telemetry")                -> Handle   (stdout is a pipe: h.stdout)
  ex.kill(handle, sig=SIGTERM, grace_s=)   the whole group, SIGKILL after the grace period
  Handle: pid, pgid, start_ticks, host, role, argv, poll() -> code|None, wait(timeout) -> code|None,
          fileno() (readable when the process has exited, for select), returncode
"""

from __future__ import annotations

import os
import select
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from optlog.needs import Launches


class Handle(Protocol):
    pid: int
    pgid: int
    start_ticks: int | None
    host: str
    role: str
    argv: list[str]
    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int | None: ...
    def fileno(self) -> int | None: ...


class Executor(Protocol):
    host: str
    kind: str
    on_this_machine: bool
    telemetry: str
    same_python: bool

    def popen(self, argv: list[str], *, env: dict[str, str], cwd: str | None, stdout: Path | None,
              stderr: Path | None, role: str) -> Handle: ...
    def stream(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
               role: str = "telemetry") -> Handle: ...
    def kill(self, handle: Handle, *, sig: int = signal.SIGTERM, grace_s: float = 10.0) -> bool: ...


def exited_unreaped(pid: int) -> bool:
    """Whether our child `pid` has exited, without reaping it (WNOWAIT): while it is a zombie its PID,
    and so its process-group id, cannot be reused, so stray group members can still be killed."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None and info.si_pid != 0


def open_pidfd(pid: int) -> int | None:
    """A pidfd for `pid` (Linux ≥ 5.3): readable when the process exits, so waits need no polling."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def close_pidfd(fd: int | None) -> None:
    """Close a pidfd from `open_pidfd` (None is fine)."""
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def wait_for_exit(poll: Callable[[], int | None], timeout: float | None, fd: int | None = None,
                  step: float = 0.01) -> int | None:
    """Wait until `poll()` returns an exit code (None after `timeout`): sleep on `fd` (a pidfd,
    readable when the process exits) where there is one, else poll every `step` seconds. One loop
    for every executor's handle."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        rc = poll()
        if rc is not None:
            return rc
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return None
        if fd is not None:
            select.select([fd], [], [], min(left, 1.0) if left is not None else 1.0)
        else:
            time.sleep(min(step, left) if left is not None else step)


class ExecutorKind(ABC):
    """One kind of executor, everything the rest of optlog knows of it: its name (the key of
    optlog.yaml `executors:` and `Executor.kind`), its target syntax (a spec's `executor:`, tune's
    `--on`), its config section, how it starts a point (`make`) and ends one after optlog died
    (`kill_record`), its telemetry stream and its lock key. Registered once, in
    `optlog.runs.executors.registry`."""

    name: ClassVar[str]
    # the type of optlog.yaml `executors.<name>` (e.g. dict[str, SshHost]); validated by optlog.config
    section: ClassVar[Any] = dict[str, Any]
    # how a spec names it, in the message that lists every kind ("executor is A, B, C")
    spelling: ClassVar[str]
    # tune --on: how a worker's target is named, in `--on`'s message (None: not a worker target)
    on_spelling: ClassVar[str | None] = None
    # its processes run on this machine: the launch's cgroup, port checks, host load and /proc
    on_this_machine: ClassVar[bool] = False
    # "nvml": telemetry sampled in optlog's process; "stream": a sampler command through `stream()`
    telemetry: ClassVar[str] = "stream"
    # the kill path, said in words (docs and the registry's listing)
    kill_path: ClassVar[str] = ""
    # the lock key, said in words (docs and the registry's listing)
    lock_key: ClassVar[str] = "none (the scheduler allocates)"

    def parse(self, value: Any) -> Any | None:
        """A spec's `executor:` value in this kind's syntax, made canonical; None when it is not
        this kind's (ValueError: this kind's, but wrong)."""
        return None

    def parse_on(self, word: str) -> Any | None:
        """tune's `--on WORD` as a spec's `executor:` value; None when it is not this kind's."""
        return None

    @abstractmethod
    def claims(self, value: Any) -> bool:
        """Whether a parsed `executor:` value (or `parse_on`'s) is this kind's: `make` gets it."""

    @abstractmethod
    def make(self, ctx: "Launches", value: Any, **kw: Any) -> Executor:
        """The executor of a value this kind `claims` (errors.Failed when it cannot run)."""

    def owns_record(self, host: str) -> bool:
        """Whether a process record with this `host` was made by this kind (and `kill_record` ends it)."""
        return False

    def kill_record(self, ctx: "Launches", rec: Any) -> bool:
        """Recovery after optlog died: end the process of a record this kind `owns_record`."""
        return False

    def lock_target(self, value: Any) -> str | None:
        """The target lock's key of a launch on `value` (None: no lock)."""
        return None
