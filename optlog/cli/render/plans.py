"""How the CLI shows the documents of `optlog.api.plans`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.render.text import glyph, table
from optlog.core import plans as P
from optlog.core.numfmt import fmt_pct, fmt_score, fmt_written, plural
from optlog.core.plans import calibration_line, calibration_rows, change_text


# what the table and the reasons read: a list cut to fewer keys (--fields) is shown one line a plan
_TABLE_KEYS = ("rank", "id", "score", "gain", "measured_gain", "effort", "confidence", "status", "needs_status",
               "title", "score_reason", "reason")


def _list_human(d: dict[str, Any]) -> str:
    if not d["plans"]:
        return "no plans"
    rows = []
    for p in d["plans"]:
        needs = " ".join(f"{glyph(n['status'])}{n['id']}{'=falsified' if n['expects'] == 'falsified' else ''}"
                         + ("(post-hoc)" if n.get("post_hoc") else "") for n in p["needs_status"]) or "-"
        measured = f" → {fmt_pct(p['measured_gain'])}" if p["measured_gain"] is not None else ""
        rows.append([p["rank"] if p["rank"] is not None else "-", f"{p['id']:02d}", fmt_score(p['score']),
                     P.gain_cell(p['measured_effect'], *p['gain']) + measured, p["effort"], fmt_written(p['confidence']), p["status"], needs,
                     p["title"][:60]])
    out = [table(rows, ["rank", "id", "score", "gain", "eff", "conf", "status", "needs", "title"])]
    out.append("why (every plan):")
    for p in d["plans"]:
        out.append(f"  {p['id']:02d}: {p['score_reason']}; {p['reason']}"
                   + (f"; {p['measured']}" if p.get("measured") else ""))
    out.append(calibration_line(d["calibration"]))
    out += [f"  {x}" for x in calibration_rows(d["calibration"])]
    return "\n".join(out)


def _plan_list_human(d: dict[str, Any]) -> str:
    if all(k in p for p in d["plans"] for k in _TABLE_KEYS):
        return _list_human(d)
    return "\n".join(f"{p.get('rank')} {p.get('id')} {p.get('title')}" for p in d["plans"])


def _show_human(p: dict[str, Any]) -> str:
    out = [f"plan {p['id']:02d}: {p['title']}",
           f"rank {p['rank'] if p['rank'] is not None else '-'}  score {fmt_score(p['score'])}  gain {P.gain_cell(p['measured_effect'], *p['gain'])}  "
           f"effort {p['effort']}  confidence {fmt_written(p['confidence'])}  status {p['status']}"
           + (f"  measured {fmt_pct(p['measured_gain'])}" if p["measured_gain"] is not None else ""),
           f"why: {p['score_reason']}; {p['reason']}"]
    if p.get("measured"):
        out.append(p["measured"])
    if p.get("change"):
        out.append(f"change: {change_text(p['change'])}")
    for n in p["needs_status"]:
        out.append(f"  needs {n['id']} {n['expects']} (now {n['status']}"
                   + (f", {n['post_hoc']})" if n.get("post_hoc") else ")"))
    if p.get("rationale"):
        out.append(f"rationale: {p['rationale']}")
    for i, s in enumerate(p.get("steps") or [], 1):
        out.append(f"  {i}. {s}")
    for r in p.get("risks") or []:
        out.append(f"  risk: {r}")
    if p.get("validation"):
        out.append(f"validation: {p['validation']}")
    out.append(f"file: {p['file']}")
    return "\n".join(out)


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "plan add": lambda r: f"added plan {r['id']:02d} (rank {r['rank']}, score {fmt_score(r['score'])}): {r['reason']}",
    "plan list": _plan_list_human,
    "plan show": _show_human,
    "plan set": _show_human,
    "plan edit": _show_human,
    "plan rm": lambda r: f"removed plan {r['id']:02d} ({r['title']}); {r['file']} deleted"
      + (f" in commit {r['commit'][:10]}" if r.get("commit") else ""),
    "plan render": lambda r: f"{plural(len(r['files']), 'file')} up to date; nothing to commit" if not r["commit"] else
      f"rendered {len(r['changed'])} changed of {plural(len(r['files']), 'file')}; commit {r['commit'][:10]}",
    "plan import": lambda r: f"imported {plural(len(r['imported']), 'plan')}, skipped {len(r['skipped'])} already present",
    "report": lambda r: f"wrote {r['file']}" + (f" and {plural(len(r['plots']), 'plot')}" if r["plots"] else "")
      + (f"; removed {plural(len(r['deleted']), 'stale plot')}" if r.get("deleted") else "")
      + (f"; commit {r['commit'][:10]}" if r.get("commit") else ""),
}
