"""hypothesis add|list|show|set|edit (alias: hyp)."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.main import emit, service_ctx
from optlog.cli.render import glyph


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
def hyp_add(title: str, hid: str | None, statement: str, rationale: str, parent: str | None, rivals: tuple[str, ...]) -> None:
    """Add a hypothesis (committed to git)."""
    from optlog.service import hypotheses

    ctx = service_ctx()
    doc = hypotheses.add(ctx, title, hid=hid, statement=statement, rationale=rationale, parent=parent, rivals=rivals)
    res = hypotheses.show(ctx, doc.id)
    emit(res, lambda r: f"added hypothesis {r['id']}" + (f" (child of {r['parent']})" if r["parent"] else ""))


@hypothesis.command("list")
@click.option("--status", metavar="S", help="Only hypotheses with this status.")
def hyp_list(status: str | None) -> None:
    """List hypotheses."""
    from optlog.service import hypotheses

    ctx = service_ctx()
    rows = hypotheses.list_(ctx, status)

    def human(d: dict[str, Any]) -> str:
        if not d["hypotheses"]:
            return "no hypotheses"
        out = []
        for h in d["hypotheses"]:
            preds = len(h["predictions"])
            par = f" ← {h['parent']}" if h["parent"] else ""
            out.append(f"{glyph(h['status'])} {h['id']:<28} {h['status']:<12} {preds} pred  {h['title']}{par}")
        return "\n".join(out)

    emit({"hypotheses": rows}, human)


@hypothesis.command("show")
@click.argument("hid", metavar="ID")
def hyp_show(hid: str) -> None:
    """Show a hypothesis with its predictions and verdict history."""
    from optlog.service import hypotheses

    ctx = service_ctx()
    emit(hypotheses.show(ctx, hid), _human_show)


def _human_show(h: dict[str, Any]) -> str:
    out = [f"{glyph(h['status'])} {h['id']}: {h['title']}", f"status: {h['status']}"]
    if h.get("disagreement"):
        out.append(f"note: {h['disagreement']}")
    if h["statement"]:
        out.append(f"statement: {h['statement']}")
    if h["rationale"]:
        out.append(f"rationale: {h['rationale']}")
    if h["parent"]:
        out.append(f"parent: {h['parent']}")
    if h["children"]:
        out.append(f"children: {', '.join(h['children'])}")
    if h["rivals"]:
        out.append(f"rivals: {', '.join(h['rivals'])}")
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
@click.option("--status", required=True, metavar="S", help="open|testing|confirmed|falsified|inconclusive|superseded")
@click.option("--why", metavar="T", help="The reason (required).")
def hyp_set(hid: str, status: str, why: str | None) -> None:
    """Set a status by hand (an override, kept beside the automatic verdict)."""
    from optlog.service import hypotheses

    ctx = service_ctx()
    hypotheses.set_status(ctx, hid, status, why or "")
    emit(hypotheses.show(ctx, hid), lambda r: f"{r['id']} → {r['status']} (override)")


@hypothesis.command("edit")
@click.argument("hid", metavar="ID")
@click.option("--title")
@click.option("--statement")
@click.option("--rationale")
@click.option("--rival", "rivals", multiple=True, metavar="ID", help="Add a rival (repeatable).")
def hyp_edit(hid: str, title: str | None, statement: str | None, rationale: str | None, rivals: tuple[str, ...]) -> None:
    """Edit title, statement, rationale or rivals (committed as an edit)."""
    from optlog.service import hypotheses

    ctx = service_ctx()
    hypotheses.edit(ctx, hid, title=title, statement=statement, rationale=rationale, add_rivals=rivals)
    emit(hypotheses.show(ctx, hid), lambda r: f"edited {r['id']}")
