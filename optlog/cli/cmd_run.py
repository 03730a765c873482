"""run record|list|show here; launch, wait, logs, cancel, import, diff and invalidate in modules of
their own (`SUBCOMMANDS`), imported only when invoked: `run list`, a hot read, loads none of them."""

from __future__ import annotations

import importlib
from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import add_global_options, agent
from optlog.cli.options import KeyValue, fields_option, pairs, paging
from optlog.api.text import fmt_num, kv, runs_table
from optlog.core import views as VW
from optlog.core.statuses import RUN_STATUSES
from optlog.service import evidence

# subcommand -> "module:attribute", like the root's LAZY table
SUBCOMMANDS: dict[str, str] = {
    "launch": "optlog.cli.cmd_run_launch:run_launch",
    "wait": "optlog.cli.cmd_run_launch:run_wait",
    "logs": "optlog.cli.cmd_run_launch:run_logs",
    "cancel": "optlog.cli.cmd_run_launch:run_cancel",
    "import": "optlog.cli.cmd_run_import:run_import",
    "diff": "optlog.cli.cmd_run_judge:run_diff",
    "invalidate": "optlog.cli.cmd_run_judge:run_invalidate",
}


class RunGroup(click.Group):
    """The `run` group: its own commands, and the `SUBCOMMANDS` imported when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *SUBCOMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands:
            return self.commands[name]
        if name not in SUBCOMMANDS:
            return None
        mod, attr = SUBCOMMANDS[name].split(":")
        cmd: click.Command = getattr(importlib.import_module(mod), attr)
        return add_global_options(cmd)


@click.group("run", cls=RunGroup)
def run() -> None:
    """Benchmark runs: recorded, imported or launched; the evidence verdicts read."""


@run.command("record")
@click.option("--label", "labels", multiple=True, type=KeyValue("--label"), metavar="K=V",
              help="A label (repeatable): config=tp8, concurrency=256 …")
@click.option("--metric", "metrics", multiple=True, type=KeyValue("--metric"), metavar="NAME=VALUE",
              help="A metric (repeatable).")
@click.option("--hypothesis", metavar="ID", help="Attach as evidence to this hypothesis.")
@click.option("--note", metavar="T", help="A note kept with the run (how it was measured).")
@agent(description='Labels and metrics may also be objects: labels={"config": "tp8", "concurrency": 256}, '
                   'metrics={"total_token_throughput": 1867}.')
@verb(lambda r: f"recorded run {r['id']}")
def run_record(call: Call, labels: tuple[tuple[str, Any], ...], metrics: tuple[tuple[str, Any], ...],
               hypothesis: str | None, note: str | None) -> dict[str, Any]:
    """Store a run done elsewhere."""
    return evidence.record(call.ctx, pairs(labels), pairs(metrics), hypothesis, note)


@run.command("list")
@click.option("--status", type=click.Choice(RUN_STATUSES), help="Only runs with this status.")
@click.option("--hypothesis", metavar="ID", help="Only runs attached to this hypothesis.")
@click.option("--launch", type=int, metavar="N", help="Only the runs of launch N (L<N>).")
@click.option("--label", "labels", multiple=True, type=KeyValue("--label"), metavar="K=V",
              help="Only runs with this label (repeatable).")
@click.option("--since", metavar="TIME", help="Only runs created at or after TIME (ISO 8601, e.g. 2026-12-01T08:00).")
@paging(agent_limit=10)
@fields_option(agent_fields="id,status,hypothesis,invalidated,labels,metrics")
@agent(read_only=True, output="run_list")
@verb(runs_table)
def run_list(call: Call, status: str | None, hypothesis: str | None, launch: int | None,
             labels: tuple[tuple[str, Any], ...], since: str | None, limit: int | None, offset: int, order: str,
             fields: str | None) -> Any:
    """List runs with their labels and metrics."""
    return evidence.runs_doc(call.ctx, status=status, hypothesis=hypothesis, launch=launch, labels=pairs(labels),
                             since=since, limit=limit, offset=offset, order=order, fields=fields)


def _show_human(r: dict[str, Any]) -> str:
    out = [f"run {r.get('id')}: {r.get('status')}" + (f" — INVALIDATED: {r.get('invalid_reason')}" if r.get("invalidated") else "")]
    if r.get("name"):
        out.append(f"name: {r['name']}")
    out.append(f"labels: {kv(r.get('labels') or {}) or '-'}")
    if r.get("hypothesis"):
        out.append(f"hypothesis: {r['hypothesis']}")
    if r.get("exit_code") is not None:
        out.append(f"exit code: {r['exit_code']}")
    if r.get("error"):
        out.append(VW.run_error(r))
    if r.get("metrics"):
        out.append("metrics:")
        w = max(len(k) for k in r["metrics"])
        for k, v in sorted(r["metrics"].items()):
            out.append(f"  {k:<{w}}  {fmt_num(v)}")
    tel = r.get("telemetry") or {}
    if tel.get("text"):
        out.append(tel["text"])
    if r.get("note"):
        out.append(f"note: {r['note']}")
    if r.get("artifacts"):
        out.append("artifacts:")
        out += [f"  {a['path']} ({a['bytes']} B)" for a in r["artifacts"]]
    return "\n".join(out)


@run.command("show")
@click.argument("run_id", metavar="ID")
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="Everything, or without the environment, raw result and artifact list (counted instead).")
@fields_option()
@agent(read_only=True, defaults={"detail": False}, args={"run_id": "The run id (a number)."})
@verb(_show_human)
def run_show(call: Call, run_id: str, detail: bool, fields: str | None) -> Any:
    """Show one run: labels, metrics, telemetry, environment, artifacts."""
    return evidence.show_run_doc(call.ctx, run_id, detail, fields)
