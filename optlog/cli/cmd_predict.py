"""prediction add|edit|list|show (alias: predict), verdict, compare."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent
from optlog.cli.options import KeyValue, pairs, paging
from optlog.api.text import fmt_num, glyph, table
from optlog.core import posthoc as PH
from optlog.core import views as VW
from optlog.core.numfmt import fmt_ratio, fmt_share, fmt_sig, fmt_written
from optlog.core.statuses import PRED_STATUSES
from optlog.service import compare, predictions, verdicts

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


@click.group("prediction")
def prediction() -> None:
    """Predictions: machine-checkable, pre-registered claims of a hypothesis."""


class _PredictAlias(click.Group):
    """`optlog predict HYP --expect …` is `optlog prediction add HYP --expect …` (DESIGN §7); the
    older `optlog predict add|edit|list|show …` spellings still reach the group's subcommands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["add", *args]
        return super().parse_args(ctx, args)


_SPEC_HELP = {
    "expect": "The expression: `a > b`, `a >= b * 1.1`, `a / b in [0.3, 0.6]`, `a < 0.05 * peak_tflops`, "
              "`a.tensor_active < 20 and a.gpu_util > 90`.",
    "metric": "The default metric (what bare `a` and `b` mean).",
    "a": "A label selecting group a (repeatable): --a config=tp4pp2.",
    "b": "A label selecting group b (repeatable): --b config=tp8.",
    "where": "A condition over labels: `concurrency <= 256`, `dataset != sharegpt`.",
    "per": "Judge at every level of this label (e.g. concurrency).",
    "margin": "The margin (fraction, default 0.05) of the margin rule, for fewer than 3 repeats a side.",
}


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


@prediction.command("add")
@click.argument("hid", metavar="HYP")
@click.option("--expect", required=True, metavar="EXPR", help=_SPEC_HELP["expect"])
@click.option("--metric", metavar="M", help=_SPEC_HELP["metric"])
@click.option("--a", "a", multiple=True, type=KeyValue("--a"), help=_SPEC_HELP["a"])
@click.option("--b", "b", multiple=True, type=KeyValue("--b"), help=_SPEC_HELP["b"])
@click.option("--where", metavar="COND", help=_SPEC_HELP["where"])
@click.option("--per", metavar="LABEL", help=_SPEC_HELP["per"])
@click.option("--margin", type=float, default=None, metavar="F", help=_SPEC_HELP["margin"])
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="The whole prediction, or its id, version, status and the warnings.")
@agent(args={"hid": "The hypothesis id the prediction belongs to."}, description=LANGUAGE, defaults={"detail": False})
@verb(lambda p: f"added prediction {p['id']}: {p['expect']}")
def pred_add(call: Call, hid: str, expect: str, metric: str | None, a: tuple[tuple[str, Any], ...],
             b: tuple[tuple[str, Any], ...], where: str | None, per: str | None, margin: float | None,
             detail: bool) -> Any:
    """Add a prediction to hypothesis HYP (committed to git)."""
    return predictions.add_doc(call.ctx, hid, expect, metric=metric, a=pairs(a), b=pairs(b), where=where, per=per,
                               margin=margin, detail=detail)


@prediction.command("edit")
@click.argument("pid", metavar="ID")
@click.option("--expect", metavar="EXPR", help=_SPEC_HELP["expect"])
@click.option("--metric", metavar="M", help=_SPEC_HELP["metric"])
@click.option("--a", "a", multiple=True, type=KeyValue("--a"), help="Replace group a's selectors.")
@click.option("--b", "b", multiple=True, type=KeyValue("--b"), help="Replace group b's selectors.")
@click.option("--where", metavar="COND", help=_SPEC_HELP["where"] + " Empty clears it.")
@click.option("--per", metavar="LABEL", help=_SPEC_HELP["per"])
@click.option("--margin", type=float, default=None, metavar="F", help=_SPEC_HELP["margin"])
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="The whole prediction, or its id, version, status and the warnings.")
@agent(args={"pid": "The prediction id (hypothesis/p1)."}, description=LANGUAGE, defaults={"detail": False})
@verb(lambda p: f"edited {p['id']}: now v{p['version']}" + (" (edited after evidence)" if p["new_version"] else ""))
def pred_edit(call: Call, pid: str, expect: str | None, metric: str | None, a: tuple[tuple[str, Any], ...],
              b: tuple[tuple[str, Any], ...], where: str | None, per: str | None, margin: float | None,
              detail: bool) -> Any:
    """Edit a prediction; once evidence exists this makes a new version (pre-registration)."""
    return predictions.edit_doc(call.ctx, pid, expect=expect, metric=metric, a=pairs(a) if a else None,
                                b=pairs(b) if b else None, where=where, per=per, margin=margin, detail=detail)


@prediction.command("list")
@click.argument("hid", metavar="[HYP]", required=False)
@click.option("--status", type=click.Choice(PRED_STATUSES), help="Only predictions with this status.")
@paging(agent_limit=20)
@agent(read_only=True, args={"hid": "Only the predictions of this hypothesis (default: all)."})
@verb(lambda d: "\n".join(_pred_human(p) for p in d["predictions"]) or "no predictions")
def pred_list(call: Call, hid: str | None, status: str | None, limit: int | None, offset: int, order: str) -> Any:
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


@prediction.command("show")
@click.argument("pid", metavar="ID")
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="Every verdict with its levels, or the last three verdicts without the per-level values.")
@agent(read_only=True, defaults={"detail": False}, args={"pid": "The prediction id (hypothesis/p1)."})
@verb(_show_human)
def pred_show(call: Call, pid: str, detail: bool) -> Any:
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
        ci = (f"[{fmt_sig(lv['ci'][0], 3)}, {fmt_sig(lv['ci'][1], 3)}]"
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


@click.command("verdict")
@click.argument("hid", metavar="[ID]", required=False)
@click.option("--all", "all_", is_flag=True, help="Every hypothesis (the default when no ID is given).")
@click.option("--check", is_flag=True, help="Exit 1 if any evaluated prediction is falsified or inconclusive.")
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="Every level with its values, runs and tests, or one line per prediction.")
@agent(defaults={"detail": False}, args={"hid": "The hypothesis to judge (default: all)."}, output="verdict")
@verb(_verdict_human, exit=lambda d, a: 1 if a["check"] and verdicts.any_bad(d) else 0)
def verdict_cmd(call: Call, hid: str | None, all_: bool, check: bool, detail: bool) -> Any:
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


@click.command("compare")
@click.option("--metric", required=True, metavar="M", help="The metric to compare.")
@click.option("--by", required=True, metavar="LABEL", help="One column per value of this label.")
@click.option("--per", metavar="LABEL", help="One row per value of this label.")
@click.option("--where", metavar="COND", help="A condition over labels.")
@click.option("--baseline", metavar="VALUE", help="The --by value ratios are taken against (default: the first).")
@click.option("--fit", type=click.Choice(["k", "slope"]), default=None,
              help="Fit the metric against the numeric --by label in each row: k = exponent on log-log axes, "
                   "slope = on linear axes (what a scaling claim `k(LABEL)` judges).")
@agent(read_only=True)
@verb(_compare_human)
def compare_cmd(call: Call, metric: str, by: str, per: str | None, where: str | None, baseline: str | None,
                fit: str | None) -> Any:
    """Side-by-side table of a metric: a row per level, a column per group, ratios to the baseline."""
    return compare.compare(call.ctx, metric, by, per, where, baseline, fit=fit)


predict = _PredictAlias("predict", commands=prediction.commands,
                        help="Add a prediction: `optlog predict HYP --expect EXPR …` is `optlog prediction add`.")
