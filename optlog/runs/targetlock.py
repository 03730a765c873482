"""Runs that disturb each other are not silently compared: one launch at a time on a target.

Two launches on one machine share its CPUs, memory bandwidth and GPUs; on a 2-core host an M=1
GEMM came out 4× slower. So a launch holds an exclusive lock on its *target* for as long as it
runs — `local:<hostname>` for the local executor, `ssh:<name>` for an SSH host (a Slurm job gets its
allocation from the scheduler: no lock). The lock is an `fcntl.flock` on a file in two places:

    <workspace>/.optlog/locks/<target>.lock          launches of this workspace (any machine on a
                                                      shared file system)
    $XDG_RUNTIME_DIR/optlog/locks/<target>.lock      every workspace of this user on this machine
    (else /tmp/optlog-<uid>/locks/)                   (two workspaces share one CPU)

A second launch waits for both, saying on stderr which launch holds them; with `--allow-concurrent`
it runs alongside instead, and every run of either launch that overlapped the other is labelled
`concurrent=true` (see `optlog.core.labels.CONCURRENT`), which verdicts treat as not comparable
unless a prediction selects on that label. Overlap is known from a registry next to each lock:
every running launch holds a flock on its own file in `<target>.d/`, and a launch that joins
alongside appends a line to `<target>.joins`; a run overlapped another launch when, at its start or
end, another registrant was alive, or the joins file grew while it ran. flock is released by the
kernel when a process dies, so a kill -9 never leaves a stale lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def target_of(executor: Any) -> str | None:
    """The lock target of a spec's executor (None: no lock, the scheduler allocates)."""
    if executor in (None, "local"):
        return f"local:{socket.gethostname()}"
    if isinstance(executor, str) and executor.startswith("ssh:"):
        return executor
    return None


def host_dir() -> Path:
    run = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(run) / "optlog" if run and os.path.isdir(run) else Path("/tmp") / f"optlog-{os.getuid()}"
    return base / "locks"


def _safe(target: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", target)


def _holder(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


def _describe(h: dict[str, Any]) -> str:
    if not h:
        return "another launch"
    return f"launch L{h.get('launch')} of {h.get('workspace')} (pid {h.get('pid')})"


class TargetLock:
    """The lock of one launch on its target, and the registry that tells overlapping runs."""

    def __init__(self, target: str, dirs: list[Path], me: dict[str, Any]) -> None:
        self.target = target
        self.dirs = dirs
        self.me = me
        self.fds: list[int] = []
        self.reg: list[tuple[int, Path]] = []
        self.concurrent = False  # started alongside another launch (--allow-concurrent)

    # ---------------------------------------------------------------- acquire / release
    def acquire(self, *, allow_concurrent: bool, say: Callable[[str], None],
                check_cancel: Callable[[], None], poll_s: float = 0.2) -> None:
        said = False
        for d in self.dirs:
            d.mkdir(parents=True, exist_ok=True)
            path = d / f"{_safe(self.target)}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, json.dumps(self.me).encode(), 0)
                    self.fds.append(fd)
                    break
                except BlockingIOError:
                    pass
                if allow_concurrent:
                    os.close(fd)
                    if not self.concurrent:
                        say(f"{self.target} is in use by {_describe(_holder(path))}: running alongside it "
                            "(--allow-concurrent); the runs of both are labelled concurrent=true")
                    self.concurrent = True
                    break
                if not said:
                    say(f"waiting: {self.target} is in use by {_describe(_holder(path))}; this launch starts "
                        "when it ends (--allow-concurrent runs alongside, its runs labelled concurrent)")
                    said = True
                try:
                    check_cancel()
                except BaseException:
                    os.close(fd)
                    raise
                time.sleep(poll_s)
        if said:
            say(f"{self.target} is free: starting")
        self._register()

    def _register(self) -> None:
        for d in self.dirs:
            rd = d / f"{_safe(self.target)}.d"
            rd.mkdir(parents=True, exist_ok=True)
            path = rd / f"{os.getpid()}-{self.me.get('launch')}-{time.monotonic_ns()}.json"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps(self.me).encode())
            self.reg.append((fd, path))
            if self.concurrent:
                with open(d / f"{_safe(self.target)}.joins", "a", encoding="utf-8") as f:
                    f.write(json.dumps(self.me) + "\n")

    def release(self) -> None:
        for fd, path in self.reg:
            try:
                path.unlink()
            except OSError:
                pass
            os.close(fd)
        self.reg = []
        for fd in self.fds:
            try:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self.fds = []

    # ---------------------------------------------------------------- overlap
    def _others_alive(self) -> list[dict[str, Any]]:
        mine = {p for _, p in self.reg}
        out: list[dict[str, Any]] = []
        for d in self.dirs:
            rd = d / f"{_safe(self.target)}.d"
            try:
                names = list(rd.iterdir())
            except OSError:
                continue
            for p in names:
                if p in mine:
                    continue
                try:
                    fd = os.open(p, os.O_RDONLY)
                except OSError:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    out.append(_holder(p))  # held: that launch is running
                else:
                    try:  # nobody holds it: a leftover of a launch that died
                        p.unlink()
                    except OSError:
                        pass
                finally:
                    os.close(fd)
        return out

    def _joins(self) -> int:
        n = 0
        for d in self.dirs:
            try:
                n += (d / f"{_safe(self.target)}.joins").stat().st_size
            except OSError:
                pass
        return n

    def snapshot(self) -> tuple[bool, int]:
        """Taken when a run starts."""
        return bool(self._others_alive()), self._joins()

    def overlapped(self, snap: tuple[bool, int]) -> bool:
        """Whether another launch ran on this target at some point since `snapshot`."""
        alive0, joins0 = snap
        return alive0 or self._joins() != joins0 or bool(self._others_alive())


def open_lock(ctx: Any, executor: Any, launch_id: int) -> TargetLock | None:
    target = target_of(executor)
    if target is None:
        return None
    me = {"launch": launch_id, "workspace": str(ctx.ws.root), "pid": os.getpid(), "host": socket.gethostname()}
    return TargetLock(target, [ctx.ws.state_dir / "locks", host_dir()], me)
