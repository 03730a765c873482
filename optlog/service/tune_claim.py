"""`optlog tune --claim PCT`: the study's own claim, "tuning gains ≥ PCT % over the default settings",
registered before the search and judged by the verdicts like any other prediction (docs/tune.md).

Why a module of its own: the claim is the notebook's side of a study (a hypothesis, a prediction,
evidence, plans), `service.tune` the optimiser's; keeping them apart keeps each small and keeps
Optuna inside `service.tune` (this module only calls the study object it is handed).

- **Before the search** a hypothesis (or the `--hypothesis` given) gets the prediction
  `a >= b * (1 + PCT/100)` (`a <= b / (1 + PCT/100)` for a minimised objective) over the objective,
  with `a` = the runs labelled `study=S, claim=tuned` and `b` = `study=S, claim=default`. No such run
  exists yet: the claim is pre-registered, and every trial's run is attached to the hypothesis.
- **After the search and the re-measure** the best configuration and the default configuration (the
  spec's `params:` values: the configuration with no search applied) are measured again, interleaved
  (W D W D …), `--remeasure N` times each, with those labels. Fresh runs rather than the re-measure's:
  the labels must say at launch what a run is (a label added afterwards would be a label the run did
  not have when it ran), and the winner is chosen on the re-measure's readings, so judging it on the
  same readings would flatter it (the winner's curse once more).
- **The verdict** is `service.verdicts.evaluate` on the hypothesis: the same noise-aware statistics,
  committed into the hypothesis file. The gain (ratio of the two groups' means, as the verdict
  reports it) becomes the measured gain of every plan that needs the hypothesis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from optlog.core import plans as P
from optlog.core import tune as T
from optlog.core.hypothesis import slugify
from optlog.core.numfmt import fmt_signed, fmt_written
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, param
from optlog.needs import Index, Writes
from optlog.runs.launcher import Driver
from optlog.runs.spec import plan, typed_sets
from optlog.service import hypotheses, plans, predictions, verdicts
from optlog.service.launch import open_launch
from optlog.store.runrows import labels_metrics, statuses

ATTR = "claim"  # the study's user attribute holding the claim's record
TUNED, DEFAULT = "tuned", "default"  # the `claim` label of the two groups


def default_config(ls: Any, a: Any, space: list[T.SearchParam]) -> dict[str, Any]:
    """The configuration with no search applied: each searched parameter's `params:` value (or its
    `--set`), conditions honoured. Raises BadInput for what a claim cannot be made with."""
    if a.claim is not None and not 0 <= float(a.claim) <= P.GAIN_MAX:
        raise BadInput(f"{param('claim')} is a gain in percent from 0 to {fmt_written(P.GAIN_MAX)} (10 = 'tuning gains ≥ 10 %')",
                       field="claim")
    if len(a.objectives) != 1:
        raise BadInput(f"{param('claim')} needs one objective ({param('maximize')} or {param('minimize')}): with several there is no one best "
                       "to compare with the default settings", field="claim")
    if a.remeasure == 0:
        raise BadInput(f"{param('claim')} is judged on repeats of the best and the default settings: not with {param('remeasure')} 0",
                       field="claim")
    values = {**ls.spec.params, **typed_sets(a.sets)}
    missing = [p.name for p in space if p.name not in values]
    if missing:
        raise ls.bad(f"{param('claim')} compares the best with the default settings, the spec's params: values; "
                     f"give the searched {'parameter' if len(missing) == 1 else 'parameters'} {', '.join(missing)} a value in params:", "search", missing[0])
    return T.active_params(space, lambda p: values[p.name])


def _expect(pct: float, direction: str) -> str:
    k = 1 + pct / 100.0
    # an expression optlog parses, not text for a person: six digits, so the bound is the claim's
    return (f"a >= b * {k:.6g}"  # machine format
            if direction == "maximize" else f"a <= b * {1 / k:.6g}")  # machine format


def _hypothesis_id(docs: Mapping[str, Any], study: str) -> str:
    base = ("tune-" + slugify(study, 50)).rstrip("-")
    hid, n = base, 2
    while hid in docs:
        hid, n = f"{base}-{n}", n + 1
    return hid


def register(ctx: Writes, a: Any, ls: Any, space: list[T.SearchParam], study: Any, name: str) -> dict[str, Any] | None:
    """Register the claim before the search (once per study); `a.hypothesis` then names its
    hypothesis, so every trial's run is its evidence. Returns the claim's record (None: no claim)."""
    rec = study.user_attrs.get(ATTR)
    if rec:
        if a.claim is not None and float(a.claim) != rec["pct"]:
            raise BadInput(f"study {name!r} registered the claim 'gains ≥ {fmt_written(rec['pct'])} %' (hypothesis "
                           f"{rec['hypothesis']}); a claim is not changed after it was made: give another {param('study')}",
                           field="claim", code="study_mismatch")
        if a.hypothesis is not None and a.hypothesis != rec["hypothesis"]:
            raise BadInput(f"study {name!r} tests its claim in hypothesis {rec['hypothesis']}, not {a.hypothesis}",
                           field="hypothesis", code="study_mismatch")
        a.hypothesis = rec["hypothesis"]
        return dict(rec)
    if a.claim is None:
        return None
    if study.get_trials(deepcopy=False):
        raise BadInput(f"study {name!r} has trials already: a claim is registered before the search, so that "
                       f"no trial can have shaped it; give a new {param('study')}", field="claim", code="study_mismatch")
    metric, direction = a.objectives[0]
    pct = float(a.claim)
    default = default_config(ls, a, space)
    hid = a.hypothesis
    if hid is None:
        docs = hypotheses.sync(ctx)
        hid = _hypothesis_id(docs, name)
        hypotheses.add(ctx, f"Tuning {name} gains ≥ {fmt_written(pct)} % {metric} over the default settings", hid=hid,
                       statement=f"optlog tune study {name} ({ls.file}): the best configuration the search finds has "
                                 f"{'at least' if direction == 'maximize' else 'at most'} the default settings' "
                                 f"{metric} {'×' if direction == 'maximize' else '÷'} {fmt_written(1 + pct / 100)} "
                                 f"(default: {', '.join(f'{k}={v}' for k, v in default.items())}).",
                       rationale="Registered by optlog tune --claim before the search; judged on the best and the "
                                 "default configuration re-measured interleaved after it.")
    expect = _expect(pct, direction)
    pred = predictions.add(ctx, hid, expect, metric=metric, a={"study": name, "claim": TUNED},
                           b={"study": name, "claim": DEFAULT})
    rec = {"pct": pct, "metric": metric, "direction": direction, "hypothesis": hid, "prediction": pred["id"],
           "expect": expect, "default": default, "registered_at": now_iso()}
    study.set_user_attr(ATTR, rec)
    a.hypothesis = hid
    return rec


def _medians(ctx: Index, run_ids: list[int], metric: str) -> float | None:
    with ctx.db.read() as s:
        ok = [i for i, st in statuses(s, run_ids) if st == "succeeded"]
        _labels, metrics = labels_metrics(s, ok)
    return T.median([metrics[i][metric] for i in ok if metric in metrics.get(i, {})])


def judge(ctx: Writes, a: Any, ls: Any, study: Any, name: str, best: list[dict[str, Any]], rounds: int,
          on_event: Callable[[dict[str, Any]], None] | None) -> dict[str, Any] | None:
    """Measure the best against the default settings (interleaved, `rounds` each), judge the
    hypothesis, feed the gain to the plans that need it. Once per best: a study run again with the
    same best measures nothing more. Returns the claim's record."""
    rec = study.user_attrs.get(ATTR)
    if not rec or not best or rounds < 1:
        return rec
    w = best[0]
    if rec.get("tuned") == w["number"] and rec.get("rounds") == rounds and rec.get("status") not in (None, "cancelled"):
        return rec  # judged already for this best (a claim phase cut short is measured again)
    sets = typed_sets(a.sets)
    points, roles = [], []
    for r in range(rounds):
        for role, params in ((TUNED, w["params"]), (DEFAULT, rec["default"])):
            p = plan(ls, sets, a.server_url, trial=params)[0]
            p.repeat = r
            p.values["repeat"] = r
            p.labels.update({"repeat": r, "study": name, "phase": "claim", "claim": role,
                             **({"trial": w["number"]} if role == TUNED else {})})
            points.append(p)
            roles.append(role)
    st = open_launch(ctx, ls, points, sets=a.sets, server_url=a.server_url, hypothesis=rec["hypothesis"],
                     allow_concurrent=False)
    if on_event is not None:
        on_event({"kind": "log", "text": f"tune {name}: the claim: trial {w['number']} against the default settings "
                                         f"× {rounds}, interleaved"})
    res = Driver(ctx, st["launch"], on_event=on_event, doc=st["doc"]).run()
    runs: dict[str, list[int]] = {TUNED: [], DEFAULT: []}
    for d, role in zip(st["doc"]["points"], roles):
        runs[role].append(d["run_id"])
    rec = {**rec, "tuned": w["number"], "tuned_params": w["params"], "rounds": rounds, "launch": st["launch"],
           "status": res["status"], "runs": runs,
           "medians": {k: _medians(ctx, v, rec["metric"]) for k, v in runs.items()}}
    rec.update(_verdict(ctx, rec))
    rec["plans"] = _feed_plans(ctx, rec, name)
    study.set_user_attr(ATTR, rec)
    return rec


def _verdict(ctx: Writes, rec: dict[str, Any]) -> dict[str, Any]:
    """The hypothesis judged by the verdicts; the prediction's status, summary and gain."""
    out = verdicts.evaluate(ctx, rec["hypothesis"])
    (h,) = out["results"]
    pred: dict[str, Any] = next((p for p in h["predictions"] if p.get("id") == rec["prediction"]), {})
    ratios = [lv["ratio"] for lv in pred.get("levels") or [] if lv.get("ratio")]
    gain = None
    if ratios:
        r = float(ratios[0])
        gain = round(((r if rec["direction"] == "maximize" else 1 / r) - 1) * 100, 3)
    return {"verdict": pred.get("status"), "explanation": pred.get("explanation"),
            "hypothesis_status": h["status"], "gain_pct": gain}


def _feed_plans(ctx: Writes, rec: dict[str, Any], name: str) -> list[int]:
    """The gain as the measured gain of every plan that needs the claim's hypothesis."""
    gain = rec.get("gain_pct")
    if gain is None:
        return []
    views, _docs = plans.evaluated(ctx)
    fed = []
    for v in views:
        if v["status"] == P.REMOVED or not any(P.parse_need(n, field="needs")[0] == rec["hypothesis"]
                                                    for n in v.get("needs") or []):
            continue
        try:
            plans.set_(ctx, v["id"], measured_gain=gain,
                       why=f"optlog tune {name}: trial {rec['tuned']} against the default settings, "
                           f"{rec['rounds']} runs each ({rec['hypothesis']} {rec['verdict']})")
        except BadInput as e:
            ctx.notice(f"plan {v['id']}: the measured gain {fmt_signed(gain)}% was not recorded: {e}")
            continue
        fed.append(v["id"])
    return fed


def public(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The claim as `tune show` gives it."""
    if not rec:
        return None
    keys = ("pct", "metric", "direction", "hypothesis", "prediction", "expect", "default", "tuned", "tuned_params",
            "rounds", "launch", "runs", "medians", "verdict", "explanation", "hypothesis_status", "gain_pct", "plans")
    return {k: rec.get(k) for k in keys}
