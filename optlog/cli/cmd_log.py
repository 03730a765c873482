"""log (the decision timeline from git) and sync (commit hand edits of hypothesis files)."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.main import emit, service_ctx


@click.command("log")
@click.option("--hypothesis", "hypothesis", metavar="ID", help="Only this hypothesis (and pivots from it).")
@click.option("--limit", "-n", type=int, metavar="N", help="Only the last N events.")
def log_cmd(hypothesis: str | None, limit: int | None) -> None:
    """The decision timeline from git, oldest first: events, reasons, runs, pivots."""
    from optlog.service import history

    ctx = service_ctx()
    res = history.log(ctx, hypothesis, limit)
    emit(res, _human_log)


def _human_log(r: dict[str, Any]) -> str:
    if r.get("notice"):
        return r["notice"]
    if not r["events"]:
        return "no decisions recorded yet"
    out = []
    for e in r["events"]:
        head = f"{e['at'][:16].replace('T', ' ')}  {e['sha'][:8]}  {e['subject']}"
        out.append(head)
        meta = [f"event {e['event']}"]
        if e["hypothesis"]:
            meta.append(f"hypothesis {e['hypothesis']}")
        if e["runs"]:
            meta.append("runs " + ",".join(str(x) for x in e["runs"]))
        if e["actor"]:
            meta.append(f"by {e['actor']}")
        out.append("    " + " · ".join(meta))
        if e["pivot"]:
            out.append(f"    ⇒ pivot: {e['pivot']['from']} → {e['pivot']['to']}")
        if e["hand_edit"]:
            out.append(f"    includes a hand edit of {', '.join(e['hand_edit'])}")
        body = e["body"].strip()
        if body:
            for line in body.splitlines():
                out.append(f"    │ {line}" if line.strip() else "    │")
    return "\n".join(out)


@click.command("sync")
def sync_cmd() -> None:
    """Validate hand-edited hypothesis files and commit them as edits."""
    from optlog.service import history

    ctx = service_ctx()
    res = history.sync_files(ctx)

    def human(r: dict[str, Any]) -> str:
        if r.get("notice"):
            return r["notice"]
        if not r["committed"]:
            return f"{r['hypotheses']} hypothesis files valid; nothing to commit"
        return "\n".join(f"committed {c['sha'][:8]} {c['subject']}" for c in r["committed"])

    emit(res, human)
