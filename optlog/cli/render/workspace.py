"""How the CLI shows the documents of `optlog.api.workspace`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.render.text import command_line, glyph
from optlog.core import posthoc as PH
from optlog.core.statuses import reader_text


def _init_human(r: dict[str, Any]) -> str:
    how = "adopted" if r["adopted"] else "initialised"
    made = ", ".join(r["created"]) or "nothing new"
    return f"{how} optlog workspace in {r['workspace']} (created: {made})"


def _status_human(r: dict[str, Any]) -> str:
    out = [f"workspace {r['workspace']}"]
    if r.get("notice"):
        out.append(f"note: {r['notice']}")
    out.append(f"\nopen hypotheses ({r['hypotheses']['open_total']} of {r['hypotheses']['total']}):")
    for h in r["hypotheses"]["open"]:
        preds = ", ".join(f"{p['id']} {p['status']}" + (f" ({PH.SAID[p['preregistration']]})" if p.get("preregistration") else "")
                          for p in h["predictions"]) or "no predictions"
        out.append(f"  {glyph(h['status'])} {h['id']} [{h['status']}] {h['title']} — {preds}")
    out.append(f"\nlive runs: {r['live_runs_total']}   runs recorded: {r['runs_total']}")
    for run in r["live_runs"]:
        out.append(f"  #{run['id']} {run['status']} {run.get('name') or ''}")
    for la in r.get("launches", []):
        counts = ", ".join(f"{n} {s}" for s, n in la["runs"].items())
        out.append(f"  launch {la['ref']} {la['status']} ({counts})" + (f": {la['error']}" if la.get("error") else ""))
    for d in r.get("verdict_due", []):
        out.append(f"  verdict due: {d['id']} ({d.get('why') or 'its evidence changed'})")
    out.append("\nlatest verdicts:")
    for v in r["latest_verdicts"][:5]:
        out.append(f"  {v['at'][:19]} {v['hypothesis']} → {v['status']}"
                   + (f", resting on post-hoc {', '.join(v['post_hoc'])}" if v.get("post_hoc") else "")
                   + f" ({v['kind']}, {v['by']}): {reader_text(v['summary'], v['status'])}")
    if not r["latest_verdicts"]:
        out.append("  none yet")
    out.append(f"\ntodos ({r['todos_total']} pending or in progress):")
    for t in r["todos"]:
        out.append(f"  [{t['status']}] {t['id']} {t['content']}" + (f" ({t['priority']})" if t.get("priority") else ""))
    if r["next"]:
        out.append("\nnext:")  # each as the command a person types, with its reason (the JSON's `why`)
        out += [f"  {command_line(n['call'], n['arguments'])}" + (f"  # {n['why']}" if n.get("why") else "")
                for n in r["next"]]
    return "\n".join(out)


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "init": _init_human,
    "status": _status_human,
}
