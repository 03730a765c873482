"""How the CLI shows the documents of `optlog.api.hypotheses`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.render.text import glyph
from optlog.core import views as VW
from optlog.core.statuses import reader_text


def _human_list(d: dict[str, Any]) -> str:
    if not d["hypotheses"]:
        return "no hypotheses"
    out = []
    for h in d["hypotheses"]:
        preds = len(h.get("predictions", []))
        par = f" ← {h['parent']}" if h.get("parent") else ""
        out.append(f"{glyph(h['status'])} {h['id']:<28} {h['status']:<12} {preds} pred  {h['title']}{par}")
    return "\n".join(out)


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
            out.append(f"  {v['at'][:19]} {v['status']} ({v['kind']}, by {v['by']}): {reader_text(v['summary'], v['status'])}")
    if h.get("notes"):
        out.append("notes:")
        for n in h["notes"]:
            out.append(f"  - {n['text']}" + (f" <{n['link']}>" if n["link"] else ""))
    if h.get("runs"):
        out.append(f"linked runs: {', '.join(str(r['id']) for r in h['runs'])}")
    return "\n".join(out)


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "hypothesis add": lambda r: f"added hypothesis {r['id']}" + (f" (child of {r['parent']})" if r["parent"] else ""),
    "hypothesis list": _human_list,
    "hypothesis show": _human_show,
    "hypothesis set": lambda r: f"{r['id']} → {r['status']} (override)",
    "hypothesis edit": lambda r: f"edited {r['id']}",
}
