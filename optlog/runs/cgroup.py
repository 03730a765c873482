"""A cgroup v2 per launch, where this process may make one: the kernel's own list of its processes.

The environment token and the subreaper (optlog.runs.tree) find nearly everything a launch
started; what they miss is a daemon that clears its environment and outlives a kill -9 of the
driver (re-parented to init, nothing of the launch on it). A cgroup holds every descendant whatever
it does to its environment, session or parent, and `cgroup.kill` ends them all at once, with no
PID to be reused in between. So, where the cgroup v2 hierarchy is mounted and optlog's own cgroup
is writable (root, or a delegated systemd scope), each launch gets `optlog-<token>` below optlog's
cgroup, every command it spawns is moved into it right after the spawn, and the launch's end (every
path) and recovery after a kill -9 kill the cgroup and remove it. Elsewhere nothing changes: the
token and subreaper are the fallback.

A process is moved in just after `fork`+`exec` (Python's subprocess cannot spawn straight into a
cgroup), so a command that forks within its first instants could leave a child outside: that child
still carries the launch token, which the other mechanism finds.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PREFIX = "optlog-"


def _mount() -> Path | None:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return Path(left.split()[4])
    except OSError:
        pass
    return None


def _own() -> str | None:
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            for line in f:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        pass
    return None


def _base() -> Path | None:
    m, own = _mount(), _own()
    if m is None or own is None:
        return None
    base = m / own.lstrip("/")
    return base if base.is_dir() else None


class LaunchCgroup:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, token: str) -> "LaunchCgroup | None":
        """The launch's cgroup, or None where none can be made (not writable, no cgroup v2)."""
        base = _base()
        if base is None or not token:
            return None
        path = base / f"{PREFIX}{token}"
        try:
            path.mkdir(exist_ok=True)
            if not os.access(path / "cgroup.procs", os.W_OK):
                path.rmdir()
                return None
        except OSError:
            return None
        return cls(path)

    @classmethod
    def find(cls, token: str) -> "LaunchCgroup | None":
        """The cgroup a launch with `token` made (for recovery), if it is still there."""
        if not token:
            return None
        for base in filter(None, (_base(), _mount())):
            for cand in (base / f"{PREFIX}{token}", *base.glob(f"*/{PREFIX}{token}"), *base.glob(f"*/*/{PREFIX}{token}")):
                if cand.is_dir():
                    return cls(cand)
        return None

    def add(self, pid: int) -> bool:
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
            return True
        except OSError:
            return False

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self, timeout_s: float = 5.0) -> int:
        """End every process in the cgroup and remove it; returns how many there were."""
        n = len(self.pids())
        if n:
            try:
                (self.path / "cgroup.kill").write_text("1")  # Linux ≥ 5.14: atomic, no PID race
            except OSError:
                for pid in self.pids():  # older kernels: a PID listed here is in this cgroup now
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            deadline = time.monotonic() + timeout_s
            while self.pids() and time.monotonic() < deadline:
                time.sleep(0.01)
        try:
            self.path.rmdir()
        except OSError:
            pass
        return n
