"""The whole process tree of a launch: found wherever it went, ended without hitting a stranger.

A process group is not enough: a server that daemonizes a worker (double fork + `setsid`) moves it
into a session of its own, out of reach of `killpg`. So every process a launch spawns carries two
environment variables, inherited by everything it starts:

    OPTLOG_LAUNCH_TOKEN=<token>          the launch (recovery after a kill -9 finds its leftovers)
    OPTLOG_PROCESS_TAG=<token>:<n>       the one spawned command (its stop ends its daemons too)

and the driver makes itself a *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`), so a descendant
whose parent exits is re-parented to the driver rather than to init — found even if it cleared its
environment. Matching is read from /proc (environ, stat), and every signal goes through a pidfd
opened *and then re-checked* against the start time seen in the scan: a PID that was reused between
the scan and the signal is never hit (the pidfd refers to one process for its whole life).

A cgroup per launch would also catch a daemon that clears its environment after the driver itself
was killed -9; this module is the portable fallback (no delegation needed).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import time
from collections.abc import Iterable

from optlog.runs import interrupt, procs
from optlog.runs.procs import Stat

TOKEN_VAR = "OPTLOG_LAUNCH_TOKEN"
TAG_VAR = "OPTLOG_PROCESS_TAG"
_PR_SET_CHILD_SUBREAPER = 36
_subreaper = False


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ≥ 3.4); idempotent."""
    global _subreaper
    if _subreaper:
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _subreaper = False
    return _subreaper


def is_subreaper() -> bool:
    return _subreaper


def now_ticks() -> int:
    """Now, in the unit of /proc/PID/stat's start time (clock ticks since boot)."""
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    return int(up * os.sysconf("SC_CLK_TCK"))


def _environ_has(pid: int, needles: tuple[bytes, ...]) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return False
    return any(n in env for n in needles)


def _all() -> list[Stat]:
    out: list[Stat] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for n in names:
        if n.isdigit():
            st = procs.stat(int(n))
            if st is not None and st.state not in ("Z", "X"):
                out.append(st)
    return out


def find(*, token: str | None = None, tag: str | None = None, orphans_since: int | None = None,
         exclude: Iterable[int] = ()) -> list[Stat]:
    """Live processes of a launch: those whose environment carries the launch `token` (or the one
    command's `tag`), those re-parented to this process (a subreaper) that started at or after
    `orphans_since` (clock ticks since boot), and every descendant of either."""
    me = os.getpid()
    skip = {me, *exclude}
    needles: list[bytes] = []
    if token:
        needles.append(f"{TOKEN_VAR}={token}".encode())
    if tag:
        needles.append(f"{TAG_VAR}={tag}".encode())
    every = _all()
    roots: dict[int, Stat] = {}
    for st in every:
        if st.pid in skip:
            continue
        if needles and _environ_has(st.pid, tuple(needles)):
            roots[st.pid] = st
        elif orphans_since is not None and _subreaper and st.ppid == me and st.start >= orphans_since:
            roots[st.pid] = st
    kids: dict[int, list[Stat]] = {}
    for st in every:
        kids.setdefault(st.ppid, []).append(st)
    found = dict(roots)
    stack = list(roots)
    while stack:
        for c in kids.get(stack.pop(), []):
            if c.pid not in found and c.pid not in skip:
                found[c.pid] = c
                stack.append(c.pid)
    return sorted(found.values(), key=lambda s: s.pid)


def _open_checked(st: Stat) -> int | None:
    """A pidfd for the very process `st` describes, or None if it is gone (or its PID was reused)."""
    try:
        fd = os.pidfd_open(st.pid)
    except (AttributeError, OSError):
        return None
    if procs.start_ticks(st.pid) != st.start:
        os.close(fd)
        return None
    return fd


def _send(fd: int, sig: int) -> None:
    try:
        signal.pidfd_send_signal(fd, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _reap(pids: Iterable[int]) -> None:
    """Collect the exit status of re-parented orphans (our children only because we are the
    subreaper; no Popen object waits for them)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


def end(targets: list[Stat], *, sig: int = signal.SIGTERM, grace_s: float = 5.0, reap: Iterable[int] = ()) -> int:
    """`sig` to every target, SIGKILL to what is left after `grace_s`; returns how many were signalled.
    The PIDs in `reap` (orphans re-parented to us, which no Popen object waits for) are reaped; any
    other child is left to its Popen object, which would otherwise lose its exit status."""
    fds: dict[int, int] = {}
    for st in targets:
        fd = _open_checked(st)
        if fd is not None:
            fds[st.pid] = fd
    if not fds:
        return 0
    mine = {st.pid for st in targets if st.ppid == os.getpid()} & set(reap)

    def wait_all(left: dict[int, int], secs: float, cut: bool = True) -> dict[int, int]:
        t0 = time.monotonic()
        while left:
            _reap(p for p in left if p in mine)
            ready, _, _ = select.select(list(left.values()), [], [], 0)
            left = {p: f for p, f in left.items() if f not in ready}
            rest = interrupt.grace_left(t0, secs) if cut else secs - (time.monotonic() - t0)
            if not left or rest <= 0:
                break
            select.select(list(left.values()), [], [], min(0.05, rest))
        return left

    try:
        for fd in fds.values():
            _send(fd, sig)
        left = wait_all(dict(fds), grace_s)
        for fd in left.values():
            _send(fd, signal.SIGKILL)
        wait_all(left, 5.0, cut=False)  # after SIGKILL: only the kernel's time to end them
        _reap(mine)
        return len(fds)
    finally:
        for fd in fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
