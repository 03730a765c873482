"""hypothesis add|list|show|set|edit (alias: hyp)."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent
from optlog.cli.options import detail_option, fields_option, paging
from optlog.api.text import glyph
from optlog.core import views as VW
from optlog.core.statuses import HYP_STATUSES
from optlog.service import hypotheses

_ACK = "the id, status, title and parent"


@click.group("hypothesis")
def hypothesis() -> None:
    """Hypotheses: what you believe, with predictions that can prove it wrong."""


@hypothesis.command("add")
@click.argument("title")
@click.option("--id", "hid", metavar="ID", help="Id (default: from the title).")
@click.option("--statement", default="", help="What is claimed, precisely.")
@click.option("--rationale", default="", help="Why you believe it.")
@click.option("--parent", metavar="ID", help="The hypothesis this one pivots from.")
@click.option("--rival", "rivals", multiple=True, metavar="ID", help="A competing explanation (repeatable).")
@detail_option(_ACK)
@agent(args={"title": "A short title: what you believe, e.g. 'Decode is communication-bound at TP8'."})
@verb(lambda r: f"added hypothesis {r['id']}" + (f" (child of {r['parent']})" if r["parent"] else ""))
def hyp_add(call: Call, title: str, hid: str | None, statement: str, rationale: str, parent: str | None,
            rivals: tuple[str, ...], detail: bool) -> Any:
    """Add a hypothesis (committed to git)."""
    return hypotheses.add_doc(call.ctx, title, hid=hid, statement=statement, rationale=rationale, parent=parent,
                              rivals=rivals, detail=detail)


def _human_list(d: dict[str, Any]) -> str:
    if not d["hypotheses"]:
        return "no hypotheses"
    out = []
    for h in d["hypotheses"]:
        preds = len(h.get("predictions", []))
        par = f" ← {h['parent']}" if h.get("parent") else ""
        out.append(f"{glyph(h['status'])} {h['id']:<28} {h['status']:<12} {preds} pred  {h['title']}{par}")
    return "\n".join(out)


@hypothesis.command("list")
@click.option("--status", type=click.Choice(HYP_STATUSES), help="Only hypotheses with this status.")
@paging(agent_limit=20)
@fields_option(agent_fields="id,title,status,parent")
@agent(read_only=True, output="hypothesis_list")
@verb(_human_list)
def hyp_list(call: Call, status: str | None, limit: int | None, offset: int, order: str, fields: str | None) -> Any:
    """List hypotheses."""
    return hypotheses.list_doc(call.ctx, status, limit, offset, order, fields)


@hypothesis.command("show")
@click.argument("hid", metavar="ID")
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="Everything (evidence values, history, notes, runs), or the statement, predictions and "
                   "the last three verdicts.")
@agent(read_only=True, defaults={"detail": False}, args={"hid": "The hypothesis id."}, output="hypothesis_show")
@verb(lambda h: _human_show(h))
def hyp_show(call: Call, hid: str, detail: bool) -> Any:
    """Show a hypothesis with its predictions and verdict history."""
    return hypotheses.show_doc(call.ctx, hid, detail)


def _human_show(h: dict[str, Any]) -> str:
    out = [f"{glyph(h['status'])} {h['id']}: {h['title']}", f"status: {h['status']}"]
    if h.get("disagreement"):
        out.append(f"note: {h['disagreement']}")
    if h.get("statement"):
        out.append(f"statement: {h['statement']}")
    if h.get("rationale"):
        out.append(f"rationale: {h['rationale']}")
    out += [f"{k}: {v}" for k, v in VW.relations(h)]  # the dashboard's detail says the same (core.views)
    out.append("predictions:" if h["predictions"] else "predictions: none")
    for p in h["predictions"]:
        extra = f" [{p['metric']}]" if p.get("metric") else ""
        out.append(f"  {glyph(p['status'])} {p['id']} v{p['version']} {p['status']}: {p['expect']}{extra}")
    if h["verdicts"]:
        out.append("verdicts:")
        for v in h["verdicts"]:
            out.append(f"  {v['at'][:19]} {v['status']} ({v['kind']}, by {v['by']}): {v['summary']}")
    if h.get("notes"):
        out.append("notes:")
        for n in h["notes"]:
            out.append(f"  - {n['text']}" + (f" <{n['link']}>" if n["link"] else ""))
    if h.get("runs"):
        out.append(f"linked runs: {', '.join(str(r['id']) for r in h['runs'])}")
    return "\n".join(out)


@hypothesis.command("set")
@click.argument("hid", metavar="ID")
@click.option("--status", required=True, type=click.Choice(HYP_STATUSES), help="The status to set.")
@click.option("--why", metavar="T", help="The reason (required).")
@detail_option(_ACK)
@agent(args={"hid": "The hypothesis id."})
@verb(lambda r: f"{r['id']} → {r['status']} (override)")
def hyp_set(call: Call, hid: str, status: str, why: str | None, detail: bool) -> Any:
    """Set a status by hand (an override, kept beside the automatic verdict)."""
    return hypotheses.set_doc(call.ctx, hid, status, why or "", detail)


@hypothesis.command("edit")
@click.argument("hid", metavar="ID")
@click.option("--title", help="A new title.")
@click.option("--statement", help="A new statement: what is claimed, precisely.")
@click.option("--rationale", help="A new rationale: why you believe it.")
@click.option("--rival", "rivals", multiple=True, metavar="ID", help="Add a rival (repeatable).")
@detail_option(_ACK)
@agent(args={"hid": "The hypothesis id."})
@verb(lambda r: f"edited {r['id']}")
def hyp_edit(call: Call, hid: str, title: str | None, statement: str | None, rationale: str | None,
             rivals: tuple[str, ...], detail: bool) -> Any:
    """Edit title, statement, rationale or rivals (committed as an edit)."""
    return hypotheses.edit_doc(call.ctx, hid, title=title, statement=statement, rationale=rationale,
                               add_rivals=rivals, detail=detail)
