"""log (the decision timeline from git) and sync (commit hand edits of hypothesis files)."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent
from optlog.service import history
from optlog.service.envelope import ORDERS


def _human_log(r: dict[str, Any]) -> str:
    if r.get("notice") and not r["events"]:
        return r["notice"]
    if not r["events"]:
        return "no decisions recorded yet"
    out = []
    for e in r["events"]:
        head = f"{str(e['at'])[:16].replace('T', ' ')}  {e['sha'][:8]}  {e['subject']}"
        out.append(head)
        meta = [f"event {e['event']}"]
        if e.get("hypothesis"):
            meta.append(f"hypothesis {e['hypothesis']}")
        if e.get("runs"):
            meta.append("runs " + ",".join(str(x) for x in e["runs"]))
        if e.get("actor"):
            meta.append(f"by {e['actor']}")
        out.append("    " + " · ".join(meta))
        if e.get("pivot"):
            out.append(f"    ⇒ pivot: {e['pivot']['from']} → {e['pivot']['to']}")
        if e.get("hand_edit"):
            out.append(f"    includes a hand edit of {', '.join(e['hand_edit'])}")
        body = (e.get("body") or "").strip()
        if body:
            for line in body.splitlines():
                out.append(f"    │ {line}" if line.strip() else "    │")
    if r.get("notice"):  # a shallow clone: the timeline above is cut
        out.append(r["notice"])
    return "\n".join(out)


@click.command("log")
@click.option("--hypothesis", "hypothesis", metavar="ID", help="Only this hypothesis (and pivots from it).")
@click.option("--limit", "-n", type=int, metavar="N", help="Only the last N events.")
@click.option("--offset", type=int, default=0, help="Skip this many of the newest events first (the previous page's next_offset).")
@click.option("--since", metavar="TIME", help="Only events at or after TIME (ISO 8601, e.g. 2026-12-01T08:00).")
@click.option("--order", type=click.Choice(ORDERS), default="oldest", show_default=True,
              help="oldest first (the CLI's default) or newest first (an agent's).")
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="Every event with its commit message body, or one line each.")
@agent(read_only=True, defaults={"limit": 5, "order": "newest", "detail": False})
@verb(_human_log)
def log_cmd(call: Call, hypothesis: str | None, limit: int | None, offset: int, since: str | None, order: str,
            detail: bool) -> Any:
    """The decision timeline from git, oldest first: events, reasons, runs, pivots."""
    return history.log_doc(call.ctx, hypothesis, limit=limit, offset=offset, since=since, order=order, detail=detail)


def _sync_human(r: dict[str, Any]) -> str:
    if r.get("notice"):
        return r["notice"]
    if not r["committed"]:
        return f"{r['hypotheses']} hypothesis files valid; nothing to commit"
    return "\n".join(f"committed {c['sha'][:8]} {c['subject']}" for c in r["committed"])


@click.command("sync")
@verb(_sync_human)
def sync_cmd(call: Call) -> Any:
    """Validate hand-edited hypothesis files and commit them as edits."""
    return history.sync_files(call.ctx)
