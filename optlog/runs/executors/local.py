"""The local executor (`executor: local`, the default): this machine. Each command is its own
process group (and, where one can be made, in the launch's cgroup v2); exit is noticed without
reaping, so stray members of the group can still be ended; kill ends the group, then what it
daemonized out of it (found by its process tag, see optlog.runs.tree)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from optlog import settings
from optlog.runs import procs, tree
from optlog.runs.executors.base import ExecutorKind, close_pidfd, exited_unreaped, open_pidfd, wait_for_exit

if TYPE_CHECKING:
    from optlog.needs import Launches


class LocalHandle:
    """A local process group. Exit is detected without reaping (waitid WNOWAIT), so the leader's PID
    still holds the group id while stray members of the group are killed; then it is reaped."""

    def __init__(self, popen: subprocess.Popen[Any], argv: list[str], role: str, host: str,
                 on_exit: Callable[["LocalHandle"], None] | None) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.pgid = popen.pid
        self.start_ticks = procs.start_ticks(popen.pid)
        self.argv = argv
        self.role = role
        self.host = host
        self.returncode: int | None = None
        self.record_id: int | None = None
        self.tag: str | None = None  # OPTLOG_PROCESS_TAG of this command (see optlog.runs.tree)
        self.stdout: IO[Any] | None = popen.stdout  # bytes; the Slurm executor wraps it as text
        self._on_exit = on_exit
        self._pidfd = open_pidfd(popen.pid)

    def fileno(self) -> int | None:
        return self._pidfd

    def _exited(self) -> bool:
        return exited_unreaped(self.pid)

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        if not self._exited():
            return None
        # The leader is a zombie: its PID (= the group id) cannot be reused yet; end stray members.
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.tag:  # and what it daemonized out of its group (setsid): the command is over
            tree.end(tree.find(tag=self.tag, exclude=(self.pid,)), sig=signal.SIGKILL, grace_s=0)
        self.returncode = self.popen.wait()
        self._close()
        if self._on_exit:
            self._on_exit(self)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        return wait_for_exit(self.poll, timeout, self._pidfd)

    def _close(self) -> None:
        close_pidfd(self._pidfd)
        self._pidfd = None


class LocalExecutor:
    kind = "local"
    on_this_machine = True
    telemetry = "nvml"
    same_python = True

    def __init__(self, *, base_env: dict[str, str] | None = None,
                 on_spawn: Callable[[LocalHandle], None] | None = None,
                 on_exit: Callable[[LocalHandle], None] | None = None) -> None:
        self.host = socket.gethostname()
        self.base_env = dict(settings.environ() if base_env is None else base_env)
        self.on_spawn = on_spawn
        self.on_exit = on_exit
        self.token = self.base_env.get(tree.TOKEN_VAR)
        self._n = 0
        self.cgroup: Any = None  # the launch's optlog.runs.cgroup.LaunchCgroup, set by the driver

    def _env(self, env: dict[str, str] | None) -> dict[str, str]:
        e = dict(self.base_env)
        if env:
            e.update(env)
        return e

    def _tagged(self, env: dict[str, str] | None) -> tuple[dict[str, str], str | None]:
        """The environment of one command, with its process tag when the launch has a token."""
        e = self._env(env)
        if not self.token:
            return e, None
        self._n += 1
        tag = f"{self.token}:{os.getpid()}:{self._n}"
        e[tree.TAG_VAR] = tag
        return e, tag

    def _join_cgroup(self) -> Any:
        """The child joins the launch's cgroup before it execs, so nothing it forks at once (a
        daemonizing server) starts outside it; the parent's `cgroup.add` after spawning stays as the
        fallback. Plain os calls only: this runs between fork and exec."""
        if self.cgroup is None:
            return None
        procs = str(self.cgroup.path / "cgroup.procs").encode()

        def join() -> None:
            try:
                fd = os.open(procs, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
            except OSError:
                pass

        return join

    def _adopt(self, p: subprocess.Popen[Any], argv: list[str], role: str, tag: str | None) -> LocalHandle:
        """A process just started: into the launch's cgroup (the fallback to `_join_cgroup`), its
        handle tagged, and announced (`on_spawn`: the process record, the kill path)."""
        if self.cgroup is not None:
            self.cgroup.add(p.pid)
        h = LocalHandle(p, argv, role, self.host, self.on_exit)
        h.tag = tag
        if self.on_spawn:
            self.on_spawn(h)
        return h

    def popen(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
              stdout: Path | None = None, stderr: Path | None = None, role: str = "bench") -> LocalHandle:
        out = open(stdout, "ab") if stdout else subprocess.DEVNULL
        err = open(stderr, "ab") if stderr else subprocess.DEVNULL
        e, tag = self._tagged(env)
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd,
                                 env=e, start_new_session=True, close_fds=True, preexec_fn=self._join_cgroup())
        finally:
            for f in (out, err):
                if hasattr(f, "close"):
                    f.close()
        return self._adopt(p, argv, role, tag)

    def stream(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
               role: str = "telemetry") -> LocalHandle:
        e, tag = self._tagged(env)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             cwd=cwd, env=e, start_new_session=True, close_fds=True, preexec_fn=self._join_cgroup())
        return self._adopt(p, argv, role, tag)

    def kill(self, handle: Any, *, sig: int = signal.SIGTERM, grace_s: float = 10.0) -> bool:
        """End the whole group: `sig`, then SIGKILL after `grace_s`. Reaps the leader."""
        if handle.returncode is not None and not procs.ours(handle.pgid, handle.start_ticks):
            return True
        ok = procs.kill_group(handle.pgid, handle.start_ticks, sig=sig, grace_s=grace_s, reap=handle.poll)
        if getattr(handle, "tag", None):  # daemons it moved out of its group (setsid)
            tree.end(tree.find(tag=handle.tag, exclude=(handle.pid,)), sig=sig, grace_s=min(grace_s, 5.0))
        handle.poll()
        if handle.returncode is None:
            handle.wait(1.0)
        return ok


class LocalKind(ExecutorKind):
    name = "local"
    section = dict[str, Any]
    spelling = "`local`"
    on_this_machine = True
    telemetry = "nvml"
    kill_path = "the process group (by start time), then what left it by its process tag, then the launch's cgroup"
    lock_key = "`local:<hostname>`: the machine, or its GPU set"

    def parse(self, value: Any) -> Any | None:
        return "local" if value is None or value == "local" else None

    def claims(self, value: Any) -> bool:
        return value is None or value == "local"

    def make(self, ctx: "Launches", value: Any, **kw: Any) -> LocalExecutor:
        return LocalExecutor(**kw)

    def lock_target(self, value: Any) -> str | None:
        return f"local:{socket.gethostname()}"


KIND = LocalKind()
