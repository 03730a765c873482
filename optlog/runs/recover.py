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

from optlog.core.timeutil import now_iso


def _dead(la: Any, host: str) -> bool:
    from optlog.runs import procs

    if la.host and la.host != host:
        return False  # another machine's launch (shared PostgreSQL): not ours to judge
    if not la.pid:
        return True
    try:
        start = int(la.pid_start) if la.pid_start not in (None, "", "None") else None
    except ValueError:
        start = None
    return not procs.alive(int(la.pid), start)


def recover(ctx: Any, db: Any) -> list[int]:
    """Mark launches whose driver died as interrupted and end their processes; returns their ids."""
    from sqlmodel import col, select

    from optlog.store.models import Launch

    with db.read() as s:
        live = s.exec(select(Launch.id, Launch.pid, Launch.pid_start, Launch.host)
                      .where(col(Launch.status).in_(("running", "queued")))).all()
    if not live:
        return []
    host = socket.gethostname()
    dead = [row for row in live if _dead(row, host)]
    if not dead:
        return []
    return [lid for lid in (_recover_one(ctx, db, row.id) for row in dead) if lid is not None]


def _recover_one(ctx: Any, db: Any, lid: int) -> int | None:
    from sqlmodel import col, select

    from optlog.runs import procs
    from optlog.store.models import Launch, ProcessRecord, Run

    with db.read() as s:
        la = s.get(Launch, lid)
        if la is None or la.status not in ("running", "queued"):
            return None
        recs = s.exec(select(ProcessRecord).where(ProcessRecord.launch_id == lid, ProcessRecord.alive == True)).all()  # noqa: E712
        token = (la.spec or {}).get("token")
        pid = la.pid
    killed = 0
    host = socket.gethostname()
    for r in recs:
        if r.host and r.host != host:
            from optlog.runs.executor_select import kill_record

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
        from optlog.runs import tree

        killed += tree.end(tree.find(token=token), grace_s=3.0)
        from optlog.runs.cgroup import LaunchCgroup

        cg = LaunchCgroup.find(token)  # and what cleared its environment too, where there was a cgroup
        if cg is not None:
            killed += cg.kill()
    now = now_iso()
    why = f"interrupted: the optlog process driving launch {lid} (pid {pid}) ended without finishing it"
    with db.write() as s:
        la = s.get(Launch, lid)
        if la is None or la.status not in ("running", "queued"):
            return None
        la.status = "interrupted"
        la.finished_at = now
        la.error = why
        s.add(la)
        for r in s.exec(select(Run).where(Run.launch_id == lid, col(Run.status).in_(("queued", "running")))).all():
            r.status, r.error, r.cause, r.finished_at = "interrupted", why, "interrupted", now
            s.add(r)
        for rec in s.exec(select(ProcessRecord).where(ProcessRecord.launch_id == lid, ProcessRecord.alive == True)).all():  # noqa: E712
            rec.alive = False
            s.add(rec)
    try:
        ctx.notice(f"launch {lid}: its optlog process had died; runs marked interrupted, "
                   f"{killed} leftover process group(s) ended")
    except Exception:
        pass
    return lid
