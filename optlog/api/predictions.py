"""prediction add|edit|list|show (alias: predict, whose first word defaults to add), verdict, compare:
the claims of a hypothesis, their judgement against the evidence, and the side-by-side table a
claim is judged on."""

from __future__ import annotations

from typing import Annotated, Any, cast

from optlog.api.params import Limit, Offset, Order, pairs
from optlog.api.verb import AgentDefault, Arg, Call, Opt, Pairs, group, verb
from optlog.core.statuses import PRED_STATUSES
from optlog.errors import BadInput, param
from optlog.service import compare as comparing
from optlog.service import documents, predictions, verdicts
from optlog.service.envelope import listing

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


@verb("prediction add", description=LANGUAGE)
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
    p = predictions.add(call.ctx, hid, expect, metric=metric, a=pairs(a, "a"), b=pairs(b, "b"), where=where, per=per,
                        margin=margin, new_metric=new_metric)
    return cast(documents.Prediction, p) if detail else predictions.ack(p)


@verb("prediction edit",
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
    p = predictions.edit(call.ctx, pid, expect=expect, metric=metric, a=pairs(a, "a") if a else None,
                         b=pairs(b, "b") if b else None, where=where, per=per, margin=margin)
    return cast(documents.Prediction, p) if detail else predictions.ack(p)


@verb("prediction list", read_only=True)
def pred_list(call: Call, *,
              hid: Annotated[str | None, Arg(metavar="[HYP]", help="Only the predictions of this hypothesis (default: all).")] = None,
              status: Annotated[str | None, Opt(choices=PRED_STATUSES, help="Only predictions with this status.")] = None,
              limit: Limit = None,
              offset: Offset = 0,
              order: Order = "oldest",
              ) -> documents.PredictionList:
    """List predictions (of one hypothesis, or all)."""
    return cast(documents.PredictionList,
                listing("predictions", predictions.list_(call.ctx, hid, status), limit, offset, order))


@verb("prediction show", read_only=True)
def pred_show(call: Call, *,
              pid: PredId,
              detail: Annotated[bool, AgentDefault(False), Opt("--detail/--brief", show_default=True,
                                help="Every verdict with its levels, or the last three verdicts without the per-level "
                                     "values.")] = True,
              ) -> dict[str, Any]:
    """Show a prediction with the verdicts that judged it."""
    p = predictions.show(call.ctx, pid)
    return p if detail else predictions.brief(p)


@verb("verdict", exit=lambda d, a: 1 if a["check"] and verdicts.any_bad(d) else 0)
def verdict(call: Call, *,
            hid: Annotated[str | None, Arg(metavar="[ID]", help="The hypothesis to judge (default: all).")] = None,
            all_: Annotated[bool, Opt("--all", help="Every hypothesis (the default when no ID is given).")] = False,
            check: Annotated[bool, Opt(help="Exit 1 if any evaluated prediction is falsified or inconclusive.")] = False,
            detail: Annotated[bool, AgentDefault(False), Opt("--detail/--brief", show_default=True,
                              help="Every level with its values, runs and tests, or one line per prediction.")] = True,
            ) -> documents.VerdictDoc:
    """Judge predictions against the evidence; write and commit the verdicts (idempotent)."""
    if hid and all_:
        raise BadInput(f"give a hypothesis ID or {param('all_')}, not both", field="all_")
    res = verdicts.evaluate(call.ctx, hid, all=all_ or not hid)
    return cast(documents.VerdictDoc, res) if detail else verdicts.brief(res)


@verb("compare", read_only=True)
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
