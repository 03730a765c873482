"""run record|list|show, plus the commands other modules add (launch, import, diff, invalidate…).

Modules listed in EXTENSIONS each define `register(group)`; a missing module is simply skipped.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from optlog.cli.main import emit, service_ctx
from optlog.cli.render import fmt_num, kv, table

EXTENSIONS = (
    "optlog.cli.cmd_run_launch",   # launch, wait, logs, cancel
    "optlog.cli.cmd_run_import",   # import (peer result files)
    "optlog.cli.cmd_run_judge",    # diff, invalidate
)


@click.group("run")
def run() -> None:
    """Benchmark runs: recorded, imported or launched; the evidence verdicts read."""


@run.command("record")
@click.option("--label", "labels", multiple=True, metavar="K=V", help="A label (repeatable): config=tp8, concurrency=256 …")
@click.option("--metric", "metrics", multiple=True, metavar="NAME=VALUE", help="A metric (repeatable).")
@click.option("--hypothesis", metavar="ID", help="Attach as evidence to this hypothesis.")
@click.option("--note", metavar="T")
def run_record(labels: tuple[str, ...], metrics: tuple[str, ...], hypothesis: str | None, note: str | None) -> None:
    """Store a run done elsewhere."""
    from optlog.service import evidence

    ctx = service_ctx()
    r = evidence.record(ctx, labels, metrics, hypothesis, note)
    emit(r, lambda r: f"recorded run {r['id']}")


def _list_human(d: dict[str, Any]) -> str:
    rows = d["runs"]
    if not rows:
        return "no runs"
    keys: list[str] = []
    for r in rows:
        for k in r["metrics"]:
            if k not in keys and len(keys) < 3 and not k.startswith("raw."):
                keys.append(k)
    body = [
        [r["id"], r["status"] + (" (invalid)" if r["invalidated"] else ""), kv(r["labels"])] +
        [fmt_num(r["metrics"].get(k)) for k in keys]
        for r in rows
    ]
    return table(body, ["id", "status", "labels", *keys])


@run.command("list")
@click.option("--status", metavar="S")
@click.option("--hypothesis", metavar="ID")
@click.option("--label", "labels", multiple=True, metavar="K=V", help="Only runs with this label (repeatable).")
@click.option("--limit", type=int, default=None)
@click.option("--offset", type=int, default=0)
def run_list(status: str | None, hypothesis: str | None, labels: tuple[str, ...], limit: int | None, offset: int) -> None:
    """List runs with their labels and metrics."""
    from optlog.service import evidence

    ctx = service_ctx()
    rows = evidence.list_runs(ctx, status=status, hypothesis=hypothesis, label=labels, limit=limit, offset=offset)
    emit({"runs": rows}, _list_human)


def _show_human(r: dict[str, Any]) -> str:
    out = [f"run {r['id']}: {r['status']}" + (f" — INVALIDATED: {r['invalid_reason']}" if r["invalidated"] else "")]
    if r.get("name"):
        out.append(f"name: {r['name']}")
    out.append(f"labels: {kv(r['labels']) or '-'}")
    if r.get("hypothesis"):
        out.append(f"hypothesis: {r['hypothesis']}")
    if r.get("exit_code") is not None:
        out.append(f"exit code: {r['exit_code']}")
    if r.get("error"):
        out.append(f"error: {r['error']}" + (f" (cause: {r['cause']})" if r.get("cause") else ""))
    if r["metrics"]:
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
def run_show(run_id: str) -> None:
    """Show one run: labels, metrics, telemetry, environment, artifacts."""
    from optlog.service import evidence

    ctx = service_ctx()
    emit(evidence.show_run(ctx, run_id), _show_human)


for _mod in EXTENSIONS:
    try:
        importlib.import_module(_mod).register(run)
    except ModuleNotFoundError as _e:
        if _e.name != _mod:
            raise
