"""How the CLI shows the documents of `optlog.api.judging`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.render.text import fmt_num, table
from optlog.core import views as VW
from optlog.core.numfmt import fmt_ratio


def _diff_human(d: dict[str, Any]) -> str:
    out = [f"run {d['a']} vs run {d['b']}"]
    if not VW.diff_differs(d):
        return out[0] + ": no differences"

    def v(x: Any) -> str:
        return "(none)" if x is None else (fmt_num(x) if isinstance(x, float) else str(x))

    if d.get("not_comparable"):
        out.append("not comparable: differ in " + ", ".join(x["key"] for x in d["not_comparable"]))
    for title, key in VW.DIFF_SECTIONS:  # the dashboard's diff shows the same sections (core.views)
        if d.get(key):
            out.append(f"{title}:")
            out.append(table([[f"  {k}", v(x['a']), v(x['b'])] for k, x in d[key].items()],
                             ["  name", f"run {d['a']}", f"run {d['b']}"]))
    if d["metrics"]:
        out.append("metrics:")
        out.append(table([[f"  {k}", v(x["a"]), v(x["b"]), fmt_ratio(x['ratio'])]
                          for k, x in d["metrics"].items()], ["  metric", f"run {d['a']}", f"run {d['b']}", "b/a"]))
    return "\n".join(out)


def _invalidate_human(r: dict[str, Any]) -> str:
    ids = [r["run"]] if "run" in r else r["runs"]
    if not r["changed"]:
        return f"run {', '.join(map(str, ids or r.get('already', [])))} was already invalidated"
    out = [f"invalidated run{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}: {r['reason']}"]
    if r.get("already"):
        out.append(f"already invalidated: {', '.join(map(str, r['already']))}")
    if not r["affected"]:
        out.append("no verdict used " + ("them" if len(ids) > 1 else "it"))
    for c in r["rejudged"]:
        out.append(f"  re-judged {c['hypothesis']}: {c['from']} → {c['to']}")
    return "\n".join(out)


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "run diff": _diff_human,
    "run invalidate": _invalidate_human,
}
