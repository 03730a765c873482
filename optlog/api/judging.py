"""run diff, run invalidate: what differs between two runs, and taking runs out of the evidence.
A part of the `run` group (`optlog.api.runs`): imported only when one of these verbs is used."""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.text import fmt_num, table
from optlog.api.verb import Arg, Call, Opt, verb
from optlog.core import views as VW
from optlog.core.numfmt import fmt_ratio
from optlog.service import verdicts


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


@verb("run diff", _diff_human, read_only=True)
def run_diff(call: Call, *,
             a: Annotated[str, Arg(metavar="A", help="The first run id.")],
             b: Annotated[str, Arg(metavar="B", help="The second run id (ratios are b/a).")],
             ) -> dict[str, Any]:
    """Only what differs between two runs: labels, metrics, environment."""
    return verdicts.runs_diff(call.ctx, a, b)


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


@verb("run invalidate", _invalidate_human)
def run_invalidate(call: Call, *,
                   refs: Annotated[tuple[str, ...], Arg(metavar="ID...", help="Run ids (numbers) and/or launches "
                                                                              "(L3): all invalidated in one commit.")],
                   why: Annotated[str | None, Opt(metavar="T", help="The reason (required): e.g. FP4 GEMM returned "
                                                                    "zeros.")] = None,
                   ) -> dict[str, Any]:
    """Mark runs invalid (run ids and/or launches L3, one commit); verdicts that used them are re-evaluated."""
    return verdicts.invalidate_doc(call.ctx, refs, why)
