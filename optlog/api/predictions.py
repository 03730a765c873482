"""prediction add|edit|list|show (alias: predict, whose first word defaults to add), verdict, compare:
the claims of a hypothesis, their judgement against the evidence, and the side-by-side table a
claim is judged on."""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.params import Limit, Offset, Order, pairs
from optlog.api.text import fmt_num, glyph, table
from optlog.api.verb import AgentDefault, Arg, Call, Opt, Pairs, group, verb
from optlog.core import posthoc as PH
from optlog.core import views as VW
from optlog.core.numfmt import fmt_ratio, fmt_share, fmt_sig, fmt_written
from optlog.core.statuses import PRED_STATUSES
from optlog.service import compare as comparing
from optlog.service import documents, predictions, verdicts

LANGUAGE = """\
The prediction language (a real grammar, never eval'ed). Groups a and b are runs selected by label
(a=["config=tp4pp2"], b=["config=tp8"]); bare `a`/`b` mean their `metric`; `a.NAME` is another
metric of group a; ceilings from optlog.yaml (peak_tflops, mem_bw_gbps) are names too. Examples:
  expect="a > b"                     a beats b by more than the margin (default 5 %)
  expect="a >= b * 1.1"              at least 10 % better
  expect="a / b in [0.3, 0.6]"       the ratio lies in a range
  expect="a < 0.05 * peak_tflops"    against a ceiling
  expect="a.tensor_active < 20 and a.gpu_util > 90"   several metrics of one group
where="concurrency <= 256" filters runs by label (and, or, !=, in); per="concurrency" judges at every
level. One rule: the tested quantity's interval (95 %, Bonferroni over levels) inside the claimed
region holds, outside fails, across its edge is unclear. Paired per cycle of an interleaved launch
(or per `block` label); else a bootstrap from 5 repeats a side, Welch on logs from 3, the margin below.
Scaling: expect="k(input_len) in [0.9, 1.1]" (exponent, log-log), "slope(input_len) > 10" (linear)."""

group("prediction", "Predictions: machine-checkable, pre-registered claims of a hypothesis.")
# `optlog predict HYP --expect …` is `optlog prediction add HYP --expect …` (DESIGN §7); the older
# `optlog predict add|edit|list|show …` spellings still reach the group's verbs
group("predict", "Add a prediction: `optlog predict HYP --expect EXPR …` is `optlog prediction add`.",
      same_as="prediction", default="add")

# the parts of a prediction, as add and edit take them
Expect = Annotated[str, Opt(metavar="EXPR", help="The expression: `a > b`, `a >= b * 1.1`, `a / b in [0.3, 0.6]`, "
                                                  "`a < 0.05 * peak_tflops`, `a.tensor_active < 20 and a.gpu_util > 90`.")]
Metric = Annotated[str | None, Opt(metavar="M", help="The default metric (what bare `a` and `b` mean).")]
Selectors = tuple[tuple[str, Any], ...]
_WHERE = "A condition over labels: `concurrency <= 256`, `dataset != sharegpt`."
Per = Annotated[str | None, Opt(metavar="LABEL", help="Judge at every level of this label (e.g. concurrency).")]
Margin = Annotated[float | None, Opt(metavar="F", help="The margin (fraction, default 0.05) of the margin rule, "
                                                       "for fewer than 3 repeats a side.")]
PredDetail = Annotated[bool, AgentDefault(False), Opt("--detail/--brief", show_default=True,
                                                     help="The whole prediction, or its id, version, status and "
                                                          "the warnings.")]
PredId = Annotated[str, Arg(metavar="ID", help="The prediction id (hypothesis/p1).")]


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


@verb("prediction add", lambda p: f"added prediction {p['id']}: {p['expect']}", description=LANGUAGE)
def pred_add(call: Call, *,
             hid: Annotated[str, Arg(metavar="HYP", help="The hypothesis id the prediction belongs to.")],
             expect: Expect,
             metric: Metric = None,
             a: Annotated[Selectors, Pairs(), Opt(help="A label selecting group a (repeatable): --a config=tp4pp2.")] = (),
             b: Annotated[Selectors, Pairs(), Opt(help="A label selecting group b (repeatable): --b config=tp8.")] = (),
             where: Annotated[str | None, Opt(metavar="COND", help=_WHERE)] = None,
             per: Per = None,
             margin: Margin = None,
             detail: PredDetail = True,
             new_metric: Annotated[bool, Opt(help="The metric is new: no run has it yet, though one has a "
                                                  "close name (else refused as a typo).")] = False,
             ) -> documents.Prediction | documents.PredictionAck:
    """Add a prediction to hypothesis HYP (committed to git)."""
    return predictions.add_doc(call.ctx, hid, expect, metric=metric, a=pairs(a, "a"), b=pairs(b, "b"), where=where, per=per,
                               margin=margin, detail=detail, new_metric=new_metric)


@verb("prediction edit", lambda p: f"edited {p['id']}: now v{p['version']}" + (" (edited after evidence)" if p["new_version"] else ""),
      description=LANGUAGE)
def pred_edit(call: Call, *,
              pid: PredId,
              expect: Expect | None = None,
              metric: Metric = None,
              a: Annotated[Selectors, Pairs(), Opt(help="Replace group a's selectors.")] = (),
              b: Annotated[Selectors, Pairs(), Opt(help="Replace group b's selectors.")] = (),
              where: Annotated[str | None, Opt(metavar="COND", help=_WHERE + " Empty clears it.")] = None,
              per: Per = None,
              margin: Margin = None,
              detail: PredDetail = True,
              ) -> documents.Prediction | documents.PredictionAck:
    """Edit a prediction; once evidence exists this makes a new version (pre-registration)."""
    return predictions.edit_doc(call.ctx, pid, expect=expect, metric=metric, a=pairs(a, "a") if a else None,
                                b=pairs(b, "b") if b else None, where=where, per=per, margin=margin, detail=detail)


@verb("prediction list", lambda d: "\n".join(_pred_human(p) for p in d["predictions"]) or "no predictions", read_only=True)
def pred_list(call: Call, *,
              hid: Annotated[str | None, Arg(metavar="[HYP]", help="Only the predictions of this hypothesis (default: all).")] = None,
              status: Annotated[str | None, Opt(choices=PRED_STATUSES, help="Only predictions with this status.")] = None,
              limit: Limit = None,
              offset: Offset = 0,
              order: Order = "oldest",
              ) -> documents.PredictionList:
    """List predictions (of one hypothesis, or all)."""
    return predictions.list_doc(call.ctx, hid, status, limit, offset, order)


def _show_human(p: dict[str, Any]) -> str:
    out = [_pred_human(p)]
    for v in p["verdicts"]:
        out.append(f"  {v['at'][:19]} v{v['version']} {v['status']} (by {v['by']}): {v['explanation']}")
    lv = p.get("last_verdict")
    if lv and lv.get("levels"):
        out.append(_levels_table(lv))
    return "\n".join(out)


@verb("prediction show", _show_human, read_only=True)
def pred_show(call: Call, *,
              pid: PredId,
              detail: Annotated[bool, AgentDefault(False), Opt("--detail/--brief", show_default=True,
                                help="Every verdict with its levels, or the last three verdicts without the per-level "
                                     "values.")] = True,
              ) -> dict[str, Any]:
    """Show a prediction with the verdicts that judged it."""
    return predictions.show_doc(call.ctx, pid, detail)


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


@verb("verdict", _verdict_human, exit=lambda d, a: 1 if a["check"] and verdicts.any_bad(d) else 0, output="verdict")
def verdict(call: Call, *,
            hid: Annotated[str | None, Arg(metavar="[ID]", help="The hypothesis to judge (default: all).")] = None,
            all_: Annotated[bool, Opt("--all", help="Every hypothesis (the default when no ID is given).")] = False,
            check: Annotated[bool, Opt(help="Exit 1 if any evaluated prediction is falsified or inconclusive.")] = False,
            detail: Annotated[bool, AgentDefault(False), Opt("--detail/--brief", show_default=True,
                              help="Every level with its values, runs and tests, or one line per prediction.")] = True,
            ) -> documents.VerdictDoc:
    """Judge predictions against the evidence; write and commit the verdicts (idempotent)."""
    return verdicts.verdict_doc(call.ctx, hid, all=all_, detail=detail)


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
    out = f"median {d['metric']} by {d['by']} (n runs; IQR from 3)\n" + table(rows, header)
    for r in d["rows"]:
        for nc in r.get("not_comparable", []):
            lvl = ", ".join(f"{k}={v}" for k, v in r["level"].items())
            out += (f"\nnot comparable{' at ' + lvl if lvl else ''}, {d['by']}={nc['group']} "
                    f"(differ in {', '.join(nc['keys'])}): "
                    + "; ".join(" ".join(f"{k}={v or '(none)'}" for k, v in x["names"].items())
                                + f" {fmt_num(x['value'])} (n={x['n']}{', loaded' if x.get('loaded') else ''})"
                                for x in nc["variants"]))
    return out


@verb("compare", _compare_human, read_only=True)
def compare(call: Call, *,
            metric: Annotated[str, Opt(metavar="M", help="The metric to compare.")],
            by: Annotated[str, Opt(metavar="LABEL", help="One column per value of this label.")],
            per: Annotated[str | None, Opt(metavar="LABEL", help="One row per value of this label.")] = None,
            where: Annotated[str | None, Opt(metavar="COND", help="A condition over labels.")] = None,
            baseline: Annotated[str | None, Opt(metavar="VALUE",
                                                help="The --by value ratios are taken against (default: the first).")] = None,
            fit: Annotated[str | None, Opt(choices=("k", "slope"),
                                           help="Fit the metric against the numeric --by label in each row: k = exponent "
                                                "on log-log axes, slope = on linear axes (what a scaling claim `k(LABEL)` "
                                                "judges).")] = None,
            ) -> dict[str, Any]:
    """Side-by-side table of a metric: a row per level, a column per group, ratios to the baseline."""
    return comparing.compare(call.ctx, metric, by, per, where, baseline, fit=fit)
