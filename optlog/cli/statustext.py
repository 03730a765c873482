"""`status`'s text for a person, with no verb module loaded: the text of the full path
(`optlog.cli.render.workspace`) and of the CLI's front door (`optlog.cli.fast`: the first `status`
after a change, worked out on plain SQL, issue 47) are this one function.

Its `next` calls are said as the command a person types (`command_line`): how a verb spells each
argument (a positional and its placeholder, or an option's flag) is the verb's declaration, which
`optlog.cli.render.text.call_shape` reads from the registry (importing the verb's module: the
service layer, SQLAlchemy). `CALL_SHAPES` holds those shapes for the calls `status` suggests
(`core.statusdoc.next_calls`), so the front door needs no registry;
tests/cli/test_first_read_plain.py checks the table against the registry.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from optlog.core import prereg as PH
from optlog.core.numfmt import fmt_num
from optlog.core.statuses import STATUS_GLYPH, reader_text

# an argument as a verb spells it: ("pos", None, PLACEHOLDER) or ("opt", "--flag", PLACEHOLDER)
Shape = dict[str, tuple[str, str | None, str]]

CALL_SHAPES: dict[str, Shape] = {  # the calls core.statusdoc.next_calls makes, by their argument names
    "run_wait": {"ref": ("pos", None, "REF")},
    "run_logs": {"ref": ("pos", None, "REF")},
    "verdict": {"id": ("pos", None, "ID")},
    "hypothesis_add": {"title": ("pos", None, "TITLE"), "parent": ("opt", "--parent", "ID")},
    "next": {"id": ("pos", None, "ID")},
    "plan_add": {"title": ("pos", None, "TITLE"), "gain": ("opt", "--gain", "LOW-HIGH%"),
                 "effort": ("opt", "--effort", "EFFORT"), "confidence": ("opt", "--confidence", "F"),
                 "needs": ("opt", "--needs", "HYP[=FALSIFIED")},
    "prediction_add": {"hypothesis": ("pos", None, "HYP"), "expect": ("opt", "--expect", "EXPR")},
    "todo_set": {"id": ("pos", None, "ID"), "status": ("opt", "--status", "STATUS")},
}


def render_call(call: str, shape: Shape, arguments: dict[str, Any]) -> str:
    """A suggested call as the command a person types, its arguments spelt by `shape`. A value of
    "…" is a placeholder, said as the parameter's name (TITLE); a list repeats its option; a value
    is quoted only where a shell needs it."""
    pos: list[str] = []
    opts: list[str] = []
    for k, val in arguments.items():
        kind, flag, placeholder = shape[k]
        vals = list(val) if isinstance(val, (list, tuple)) else [val]

        def said(x: Any) -> str:
            if x == "…":
                return placeholder
            return shlex.quote(fmt_num(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x))

        if kind == "pos":
            pos += [said(x) for x in vals]
            continue
        for x in vals:
            opts += [flag or ""] if x is True else [flag or "", said(x)]
    return " ".join(["optlog", *call.split("_"), *pos, *opts])


def known_call(call: str, arguments: dict[str, Any]) -> str:
    """`render_call` from `CALL_SHAPES` (KeyError for a call or argument it does not hold)."""
    return render_call(call, {k: CALL_SHAPES[call][k] for k in arguments}, arguments)


def status_human(r: dict[str, Any], command_line: Callable[[str, dict[str, Any]], str] = known_call) -> str:
    out = [f"workspace {r['workspace']}"]
    if r.get("notice"):
        out.append(f"note: {r['notice']}")
    out.append(f"\nopen hypotheses ({r['hypotheses']['open_total']} of {r['hypotheses']['total']}):")
    for h in r["hypotheses"]["open"]:
        preds = ", ".join(f"{p['id']} {p['status']}" + (f" ({PH.SAID[p['preregistration']]})" if p.get("preregistration") else "")
                          for p in h["predictions"]) or "no predictions"
        out.append(f"  {STATUS_GLYPH.get(h['status'], ' ')} {h['id']} [{h['status']}] {h['title']} — {preds}")
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
