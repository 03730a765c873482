"""Process facts from /proc and safe killing of process groups.

Every group a run starts is its own session (start_new_session), so session id == process group
id == the leader's pid. A group is only signalled after checking that it is still ours: the
leader's start time (field 22 of /proc/PID/stat, in clock ticks since boot) must match the one
recorded at spawn; when the leader is gone, the remaining members of its session are ours because
the kernel never hands out a PID still in use as a session or group id, and they must have started
no earlier than the leader did.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from optlog.runs import interrupt


@dataclass(frozen=True)
class Stat:
    pid: int
    ppid: int
    pgrp: int
    session: int
    start: int
    state: str


def stat(pid: int) -> Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
        return None
    # comm (field 2) may hold spaces and parentheses: split after the last ')'.
    rest = data[data.rfind(")") + 2:].split()
    try:
        return Stat(pid=pid, state=rest[0], ppid=int(rest[1]), pgrp=int(rest[2]), session=int(rest[3]),
                    start=int(rest[19]))
    except (IndexError, ValueError):
        return None


def start_ticks(pid: int) -> int | None:
    st = stat(pid)
    return st.start if st else None


def alive(pid: int, start: int | None) -> bool:
    """True when `pid` is running (not a zombie) and, if given, started at `start` ticks."""
    st = stat(pid)
    if st is None or st.state in ("Z", "X"):
        return False
    return start is None or st.start == start


def members(sid: int) -> list[Stat]:
    """Live processes whose session or process group is `sid`."""
    out: list[Stat] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for n in names:
        if not n.isdigit():
            continue
        st = stat(int(n))
        if st is not None and (st.session == sid or st.pgrp == sid) and st.state not in ("Z", "X"):
            out.append(st)
    return out


def ours(sid: int, leader_start: int | None) -> list[Stat]:
    """Members of group/session `sid` that are safely ours (see the module doc); [] if reused."""
    ms = members(sid)
    leader = next((m for m in ms if m.pid == sid), None)
    if leader is not None and leader_start is not None and leader.start != leader_start:
        return []  # the number now belongs to somebody else's group
    if leader_start is not None:
        ms = [m for m in ms if m.start >= leader_start]
    return ms


def kill_group(sid: int, leader_start: int | None, *, sig: int = signal.SIGTERM, grace_s: float = 10.0,
               reap: "object | None" = None) -> bool:
    """Signal every process of group/session `sid`, wait up to `grace_s`, then SIGKILL what is left.

    `reap` is an optional callable polled while waiting (reaps our own child leader). Returns True
    when nothing of the group is left. A launch cancelled by a signal waits less (runs.interrupt)."""
    targets = ours(sid, leader_start)
    if not targets:
        return True
    _signal_all(sid, targets, sig)
    t0 = time.monotonic()
    delay = 0.002
    while True:
        if callable(reap):
            reap()
        left = ours(sid, leader_start)
        if not left:
            return True
        if interrupt.grace_left(t0, grace_s) <= 0:
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    _signal_all(sid, left, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        if callable(reap):
            reap()
        left = ours(sid, leader_start)
        if not left:
            return True
        time.sleep(0.01)
    return False


def _signal_all(sid: int, targets: list[Stat], sig: int) -> None:
    pgrps = {t.pgrp for t in targets}
    for g in pgrps:
        try:
            os.killpg(g, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for t in targets:  # members that moved to another group of the session
        if t.pgrp not in pgrps:
            try:
                os.kill(t.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def with_token(token: str) -> list[Stat]:
    """Live processes whose environment carries OPTLOG_LAUNCH_TOKEN=token (recovery's safety net for
    a process spawned just before optlog died, before its record was written)."""
    needle = f"OPTLOG_LAUNCH_TOKEN={token}".encode()
    out: list[Stat] = []
    me = os.getpid()
    for n in os.listdir("/proc"):
        if not n.isdigit() or int(n) == me:
            continue
        try:
            with open(f"/proc/{n}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            st = stat(int(n))
            if st is not None and st.state not in ("Z", "X"):
                out.append(st)
    return out
