"""init, status, note, tui, mcp (demo: cmd_demo.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent, state
from optlog.cli.options import paging
from optlog.api.text import glyph
from optlog.paths import DEFAULT_PLAN_PREFIX
from optlog.service import evidence, status
from optlog.service.context import Ctx


def _init_human(r: dict[str, Any]) -> str:
    verb = "adopted" if r["adopted"] else "initialised"
    made = ", ".join(r["created"]) or "nothing new"
    return f"{verb} optlog workspace in {r['workspace']} (created: {made})"


@click.command("init")
@click.argument("path", required=False)
@click.option("--plan-prefix", metavar="P", help=f"Plans render to P/P-NN.md (default {DEFAULT_PLAN_PREFIX}).")
@agent(args={"path": "The folder to make (or adopt) as a workspace; default: the server's folder."})
@verb(_init_human)
def init_cmd(call: Call, path: str | None, plan_prefix: str | None) -> Any:
    """Create (or adopt) a git repository as an optlog workspace."""
    from optlog.service.workspace import init  # deferred: optlog.config loads pydantic, which status/note never need

    target = path
    if target is None and call.chdir:
        target = call.chdir
    elif target is not None and call.chdir and not Path(target).is_absolute():
        target = str(Path(call.chdir) / target)
    return init(target, plan_prefix, on_notice=call.say)


def _status_human(r: dict[str, Any]) -> str:
    out = [f"workspace {r['workspace']}"]
    if r.get("notice"):
        out.append(f"note: {r['notice']}")
    out.append(f"\nopen hypotheses ({r['hypotheses']['open_total']} of {r['hypotheses']['total']}):")
    for h in r["hypotheses"]["open"]:
        preds = ", ".join(f"{p['id']} {p['status']}" + (" (post-hoc)" if p.get("post_hoc") else "")
                          for p in h["predictions"]) or "no predictions"
        out.append(f"  {glyph(h['status'])} {h['id']} [{h['status']}] {h['title']} — {preds}")
    out.append(f"\nlive runs: {r['live_runs_total']}   runs recorded: {r['runs_total']}")
    for run in r["live_runs"]:
        out.append(f"  #{run['id']} {run['status']} {run.get('name') or ''}")
    for la in r.get("launches", []):
        counts = ", ".join(f"{n} {s}" for s, n in la["runs"].items())
        out.append(f"  launch {la['ref']} {la['status']} ({counts})" + (f": {la['error']}" if la.get("error") else ""))
    for d in r.get("verdict_due", []):
        out.append(f"  verdict due: {d['id']} (evidence {d['evidence_at'][:19]})")
    out.append("\nlatest verdicts:")
    for v in r["latest_verdicts"][:5]:
        out.append(f"  {v['at'][:19]} {v['hypothesis']} → {v['status']}"
                   + (f", resting on post-hoc {', '.join(v['post_hoc'])}" if v.get("post_hoc") else "")
                   + f" ({v['kind']}, {v['by']}): {v['summary']}")
    if not r["latest_verdicts"]:
        out.append("  none yet")
    out.append(f"\ntodos ({r['todos_total']} pending or in progress):")
    for t in r["todos"]:
        out.append(f"  [{t['status']}] {t['id']} {t['content']}" + (f" ({t['priority']})" if t.get("priority") else ""))
    if r["next"]:
        out.append("\nnext: " + " · ".join(n["call"] + " " + " ".join(f"{k}={v}" for k, v in n["arguments"].items())
                                           for n in r["next"]))
    return "\n".join(out)


@click.command("status")
@agent(read_only=True, output="status")
@verb(_status_human)
def status_cmd(call: Call) -> Any:
    """A short digest: open hypotheses, live runs, latest verdicts, pending todos."""
    return status.status(call.ctx)


@click.group("note")
def note() -> None:
    """Evidence that is not a number: observations, bug reports, links."""


@note.command("add")
@click.argument("text")
@click.option("--hypothesis", "hypothesis", metavar="ID", help="The hypothesis this is evidence for.")
@agent(args={"text": "The observation, in a sentence or two."})
@click.option("--link", metavar="URL", help="A link (bug report, issue, dashboard).")
@click.option("--run", "run_id", type=int, metavar="ID", help="The run this note is about.")
@verb(lambda r: f"note {r['id']} recorded")
def note_add(call: Call, text: str, hypothesis: str | None, link: str | None, run_id: int | None) -> Any:
    """Record a note."""
    return evidence.add_note(call.ctx, text, hypothesis, link, run_id)


def _notes_human(d: dict[str, Any]) -> str:
    return "\n".join(
        f"{n['id']:>4} {n['created_at'][:16]} {n['hypothesis'] or '-':<20} {n['text']}" + (f" <{n['link']}>" if n["link"] else "")
        for n in d["notes"]
    ) or "no notes"


@note.command("list")
@click.option("--hypothesis", metavar="ID", help="Only notes on this hypothesis.")
@click.option("--since", metavar="TIME", help="Only notes at or after TIME (ISO 8601, e.g. 2026-12-01T08:00).")
@paging(agent_limit=20)
@agent(read_only=True)
@verb(_notes_human)
def note_list(call: Call, hypothesis: str | None, since: str | None, limit: int | None, offset: int, order: str) -> Any:
    """List notes."""
    return evidence.notes_doc(call.ctx, hypothesis, since, limit, offset, order)


def open_tui(chdir: str | None) -> None:
    from optlog.tui.app import run_tui  # deferred: Textual

    run_tui(Ctx.find(chdir))


@click.command("tui")
@agent(skip="interactive: a terminal dashboard")
def tui_cmd() -> None:
    """Open the dashboard (the same as bare `optlog` on a terminal)."""
    open_tui(state().chdir)

