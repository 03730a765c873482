"""Which executor runs a spec's commands, and who ends a remote process record: the one place that
knows every executor (local in `executors`, `executor_ssh`, `executor_slurm`), so the executors
themselves never import each other's dispatcher."""

from __future__ import annotations

from typing import Any

from optlog.errors import Failed
from optlog.needs import ServiceContext
from optlog.runs import executor_slurm, executor_ssh
from optlog.runs.executors import Executor, LocalExecutor


def make_executor(ctx: ServiceContext, executor: Any, **kw: Any) -> Executor:
    """The executor a spec names: `local`; "ssh:HOST" (optlog.yaml `executors.ssh`, see
    `optlog.runs.executor_ssh`); {slurm: {partition, gres, time, account, nodes, extra}} or
    {slurm: NAME} (optlog.yaml `executors.slurm`, see `optlog.runs.executor_slurm`).
    """
    if executor in (None, "local"):
        return LocalExecutor(**kw)
    if isinstance(executor, str) and executor.startswith("ssh:"):
        return executor_ssh.make(ctx, executor[4:], **kw)
    if isinstance(executor, str) and executor.startswith("slurm:") or isinstance(executor, dict) and "slurm" in executor:
        return executor_slurm.make(ctx, executor, **kw)
    raise Failed(f"unknown executor {executor!r}", field="executor", code="bad_executor")


def kill_record(ctx: ServiceContext, rec: Any) -> bool | None:
    """Recovery of a process record made by a remote executor (host `ssh:NAME` or `slurm:…`): end it
    there. None when the record is not a remote executor's (the caller handles local ones)."""
    host = str(rec.host or "")
    if host.startswith("ssh:"):
        return executor_ssh.kill_record(ctx, rec)
    if host.startswith("slurm:"):
        return executor_slurm.kill_record(ctx, rec)
    return None
