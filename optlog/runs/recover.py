"""Recovery on start: a launch left `running` by an optlog process that no longer exists (kill -9,
a crash, a reboot) gets its runs marked `interrupted`, and every process group it started is ended.

Cheap on the common path: one indexed query (launch.status) that finds nothing. A process group is
only killed after checking its leader's start time (/proc/PID/stat field 22) against the one
recorded at spawn, so a reused PID is never hit; processes spawned just before the driver died
(before their record was written) are found by the launch's token in their environment.
"""

from __future__ import annotations

import socket
from typing import Any

from optlog.core.numfmt import plural
from optlog.core.statuses import LIVE_RUN_STATUSES
from optlog.core.timeutil import now_iso
from optlog.needs import Launches
from optlog.runs import procs, tree
from optlog.runs.cgroup import LaunchCgroup
from optlog.runs.executors.registry import kill_record
from optlog.store.launchrows import launch, live_launch_processes, live_records, live_runs


def _dead(pid: int | None, pid_start: str | None, launch_host: str | None, host: str) -> bool:
    if launch_host and launch_host != host:
        return False  # another machine's launch (shared PostgreSQL): not ours to judge
    if not pid:
        return True
    try:
        start = int(pid_start) if pid_start not in (None, "", "None") else None
    except ValueError:
        start = None
    return not procs.alive(int(pid), start)


def recover(ctx: Launches, db: Any) -> list[int]:
    """Mark launches whose driver died as interrupted and end their processes; returns their ids."""
    with db.read() as s:
        live = live_launch_processes(s)
    if not live:
        return []
    host = socket.gethostname()
    dead = [lid for lid, pid, start, la_host in live if _dead(pid, start, la_host, host)]
    if not dead:
        return []
    return [lid for lid in (_recover_one(ctx, db, i) for i in dead) if lid is not None]


def _recover_one(ctx: Launches, db: Any, lid: int) -> int | None:
    with db.read() as s:
        la = launch(s, lid)
        if la is None or la.status not in LIVE_RUN_STATUSES:
            return None
        recs = live_records(s, lid)
        token = (la.spec or {}).get("token")
        pid = la.pid
    killed = 0
    host = socket.gethostname()
    for r in recs:
        if r.host and r.host != host:
            try:  # an SSH host's group or a Slurm job: ended through that executor
                if kill_record(ctx, r):
                    killed += 1
            except Exception:
                pass
            continue
        if procs.ours(r.pgid, r.start_ticks):
            procs.kill_group(r.pgid, r.start_ticks, grace_s=3.0)
            killed += 1
    if token:  # spawned just before the driver died, or daemonized out of its group (setsid)
        killed += tree.end(tree.find(token=token), grace_s=3.0)
        cg = LaunchCgroup.find(token)  # and what cleared its environment too, where there was a cgroup
        if cg is not None:
            killed += cg.kill()
    now = now_iso()
    why = f"interrupted: the optlog process driving launch {lid} (pid {pid}) ended without finishing it"
    with db.write(touches="launch") as s:  # (no run becomes evidence: what is due stays as it was)
        la = launch(s, lid)
        if la is None or la.status not in LIVE_RUN_STATUSES:
            return None
        la.status = "interrupted"
        la.finished_at = now
        la.error = why
        s.add(la)
        for run in live_runs(s, lid):
            run.status, run.error, run.cause, run.finished_at = "interrupted", why, "interrupted", now
            s.add(run)
        for rec in live_records(s, lid):
            rec.alive = False
            s.add(rec)
    try:
        ctx.notice(f"launch {lid}: its optlog process had died; runs marked interrupted, "
                   f"{plural(killed, 'leftover process group')} ended")
    except Exception:
        pass
    return lid
