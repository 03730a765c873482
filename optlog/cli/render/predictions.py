"""How the CLI shows the documents of `optlog.api.predictions`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.render.text import fmt_num, glyph, table
from optlog.core import metrics as M
from optlog.core import posthoc as PH
from optlog.core import views as VW
from optlog.core.numfmt import fmt_ratio, fmt_share, fmt_sig, fmt_written


def _pred_human(p: dict[str, Any]) -> str:
    sel = lambda d: VW.kv(d) or "-"  # noqa: E731
    out = [f"{glyph(p['status'])} {p['id']} v{p['version']} {p['status']}: {p['expect']}"]
    out.append(f"  metric: {p.get('metric') or '-'}   a: {sel(p.get('a') or {})}   b: {sel(p.get('b') or {})}"
               + (f"   per: {p['per']}" if p.get("per") else "") + (f"   where: {p['where']}" if p.get("where") else "")
               + f"   margin: {fmt_written(p.get('margin', 0.05))}")
    if p.get("post_hoc"):
        out.append(f"  {PH.words(p['post_hoc'])} (at {p['post_hoc'].get('at') or '?'}): its verdicts say so")
    if p.get("edited_after_evidence"):
        out.append(f"  edited after evidence existed (earlier: {', '.join('v' + str(h['version']) for h in p.get('history', []))})")
    return "\n".join(out)


def _show_human(p: dict[str, Any]) -> str:
    out = [_pred_human(p)]
    for v in p["verdicts"]:
        out.append(f"  {v['at'][:19]} v{v['version']} {v['status']} (by {v['by']}): {v['explanation']}")
    lv = p.get("last_verdict")
    if lv and lv.get("levels"):
        out.append(_levels_table(lv))
    return "\n".join(out)


def _levels_table(p: dict[str, Any]) -> str:
    """Per level: the group means, then the tested quantity with its estimate and interval (one
    statistic, named), the p-value, the outcome and why."""
    rows = []
    for lv in p["levels"]:
        lvl = VW.kv(lv["level"]) or "(all)"
        n = "+".join(str(x) for x in (lv.get("n") or {}).values())
        conf = lv.get("confidence")
        ci = (f"[{fmt_num(lv['ci'][0])}, {fmt_num(lv['ci'][1])}]"  # the estimate cell's style
              + (f" ({fmt_share(conf, places=1)})" if conf and abs(conf - 0.95) > 1e-9 else "")) if lv.get("ci") else ""
        stat = lv.get("statistic") or ""
        tested = (lv.get("quantity") or "") + (" (geo. mean)" if "geometric" in stat else "")
        geo = lv.get("geo") or {}  # a geometric estimate: the group centres it is of, not the means
        a, b = ((f"{fmt_num(geo[g])} (geo.)" if g in geo else fmt_num(lv.get(g))) for g in ("a", "b"))
        rows.append(["    " + lvl, a, b, n, tested,
                     fmt_num(lv.get("estimate")), ci,
                     (lv.get("design") or "") + (f" ({lv['pairs']})" if lv.get("pairs") else ""), lv["outcome"],
                     lv.get("reason") or ""])
    return table(rows, ["    level", "a", "b", "n", "tested", "estimate", "CI", "design", "outcome", "why"])


def _verdict_human(d: dict[str, Any]) -> str:
    if not d["results"]:
        return "no hypotheses"
    out = []
    for r in d["results"]:
        out.append(VW.verdict_head(r))  # the dashboard's verdict notification says the same
        if r.get("post_hoc"):
            out.append(f"  note: {PH.hypothesis_words(r['auto_status'], r['post_hoc'])} (written after their runs)")
        if r.get("disagreement"):
            out.append(f"  note: {r['disagreement']}")
        for p in r["predictions"]:
            out.append(f"  {glyph(p['status'])} {p['id']} {p.get('explanation') or p.get('line')}")
            if p.get("levels"):
                out.append(_levels_table(p))
            for s in p.get("skipped", []):
                lvl = VW.kv(s["level"])
                out.append(f"    skipped {lvl}: {s['reason']}")
            for nc in p.get("not_comparable", [])[:10]:
                out.append(f"    not comparable: run {nc['run']} ({nc['group']}): {nc['reason']}")
    for w in d["warnings"]:
        out.append(f"warning: {w}")
    return "\n".join(out)


def _compare_human(d: dict[str, Any]) -> str:
    gs = d["groups"]
    others = [g for g in gs if g != d["baseline"]]
    keys = ([d["per"]] if d["per"] else []) + d["split_by"]
    header = [", ".join(keys)] + gs + [f"{g}/{d['baseline']}" for g in others]
    rows = []
    for r in d["rows"]:
        lvl = ", ".join(f"{k}={v}" for k, v in r["level"].items()) or "(all)"
        cells = []
        for g in gs:
            if g not in r["values"]:
                cells.append("–")
                continue
            iqr = r["spread"].get(g)
            cells.append(fmt_num(r["values"][g]) + f" (n={r['n'][g]}"
                         + (f", IQR {fmt_num(iqr[0])}–{fmt_num(iqr[1])})" if iqr else ")")
                         + (" loaded" if g in r.get("loaded", {}) else ""))
        rows.append([lvl] + cells + [fmt_ratio(r['ratios'].get(g), 2)
                                     for g in others])
    fits = [r.get("fit") for r in d["rows"]]
    if any(fits):
        header.append(f"fit {d.get('fit')} ({'log-log' if d.get('fit') == 'k' else 'linear'})")
        for row, f in zip(rows, fits):
            row.append("–" if not f else f"{fmt_sig(f['k'], 3)}"
                       + (f" [{fmt_sig(f['ci'][0], 3)}, {fmt_sig(f['ci'][1], 3)}]" if f.get("ci") else "")
                       + f" (n={f['n']})")
    # the metric's unit and which way is better, from the metrics registry: `median_ttft_ms (ms; lower
    # is better)`
    said = [u for u in (M.unit(d["metric"]),) if u] + ([f"{b} is better"] if (b := M.better(d["metric"])) else [])
    name = f"{d['metric']} ({'; '.join(said)})" if said else d["metric"]
    out = f"median {name} by {d['by']} (n runs; IQR from 3)\n" + table(rows, header)
    for r in d["rows"]:
        for nc in r.get("not_comparable", []):
            lvl = ", ".join(f"{k}={v}" for k, v in r["level"].items())
            out += (f"\nnot comparable{' at ' + lvl if lvl else ''}, {d['by']}={nc['group']} "
                    f"(differ in {', '.join(nc['keys'])}): "
                    + "; ".join(" ".join(f"{k}={v or '(none)'}" for k, v in x["names"].items())
                                + f" {fmt_num(x['value'])} (n={x['n']}{', loaded' if x.get('loaded') else ''})"
                                for x in nc["variants"]))
    return out


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "prediction add": lambda p: f"added prediction {p['id']}: {p['expect']}",
    "prediction edit": lambda p: f"edited {p['id']}: now v{p['version']}" + (" (edited after evidence)" if p["new_version"] else ""),
    "prediction list": lambda d: "\n".join(_pred_human(p) for p in d["predictions"]) or "no predictions",
    "prediction show": _show_human,
    "verdict": _verdict_human,
    "compare": _compare_human,
}
