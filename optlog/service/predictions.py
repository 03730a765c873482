"""Predictions: add, edit (a new version once evidence exists: pre-registration), list, show.

A prediction is written before its runs: a label or metric no run has yet is a warning (a notice),
not an error. Everything else is checked before anything is written (exit 2, nothing written).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, cast

from optlog.core import expr as E
from optlog.core import labels as L
from optlog.core import posthoc as PH
from optlog.core import verdict as V
from optlog.core.hypothesis import HypothesisDoc, PostHoc, Prediction, PredictionVersion
from optlog.core.text import check as check_text
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, close_matches, not_found, param
from optlog.gitlog import trailers as TR
from optlog.needs import Commits, Index, Reads, Writes
from optlog.service import hypotheses
from optlog.service import documents
from optlog.service.hypotheses import rivals_of
from optlog.service.verdicts import evaluate_predictions, load_evidence, metric_names as pred_metric_names
from optlog.store.db import decision_lock
from optlog.core import metrics as M
from optlog.store.runrows import label_keys, label_values, metric_names

PID_RE = re.compile(r"^(?P<hid>[a-z0-9][a-z0-9-]{0,62})\.p(?P<n>\d+)\Z")


def _expr_error(e: E.ExprError, field: str) -> BadInput:
    return BadInput(e.pretty(), column=e.column, field=field, code="bad_expression")


def check_spec(ctx: Reads, *, expect: str, metric: str | None, a: dict[str, Any], b: dict[str, Any],
               where: str | None, per: str | None, margin: float) -> Any:
    """Validate a prediction; returns the parsed expression. Raises BadInput (field, column)."""
    try:
        node = E.parse_expect(expect, ctx.config.ceilings())
    except E.ExprError as e:
        raise _expr_error(e, "expect") from None
    if metric is not None:
        L.check_key(metric, "metric")
    bare = [r for r in E.refs(node, groups_only=True) if r.metric is None]
    if bare and metric is None:
        raise BadInput(f"`{bare[0].name}` stands for the prediction's default metric: give {param('metric')} NAME "
                       f"(or write {bare[0].name}.NAME)", field="metric", column=bare[0].col)
    used = E.groups(node)
    if "b" in used and not b:
        raise BadInput(f"the expression uses group b: give {param('b')} K=V (which runs are b)", field="b")
    if used == {"a", "b"} and not a:
        raise BadInput(f"the expression compares a with b: give {param('a')} K=V (which runs are a)", field="a")
    if a and b and {k: L.canonical(v) for k, v in a.items()} == {k: L.canonical(v) for k, v in b.items()}:
        raise BadInput(f"{param('a')} and {param('b')} select the same runs", field="b")
    if where:
        try:
            E.parse_where(where)
        except E.ExprError as e:
            raise _expr_error(e, "where") from None
    if per is not None:
        L.check_key(per, "per")
    if margin is None or not (0 <= margin < 1):
        raise BadInput(f"{param('margin')} must be between 0 and 1 (a fraction: 0.05 = 5%), got {margin}", field="margin")
    return node


def _label_warnings(ctx: Index, metric: str | None, node: Any, a: dict[str, Any], b: dict[str, Any],
                    where: str | None, per: str | None, new_metric: bool = False) -> list[str]:
    """Labels, values and metrics no run has yet (predictions come before their runs), each with
    the workspace's nearest names. A metric no run has, when a run has a close one, is a typo far
    more often than a new metric: refused (exit 2) with the suggestion, unless `new_metric` says
    it is meant (issue 48: `output_througput` was committed beside `output_throughput` runs)."""
    if not ctx.db_exists():
        return []

    keys: set[str] = set(a) | set(b) | ({per} if per else set())
    if where:
        keys |= set(E.where_labels(E.parse_where(where)))
    mets = {m for r in E.refs(node, groups_only=True) if (m := r.metric or metric) is not None}
    out: list[str] = []
    with ctx.db.connect() as c:
        have = label_values(c, sorted(keys)) if keys else {}
        have_m = metric_names(c, sorted(mets)) if mets else set()
        all_m = (metric_names(c) | set(M.canonical())) if mets - have_m else set()
        all_k = label_keys(c) if keys - set(have) else set()

    def near(given: str, known: Any) -> str:
        close = close_matches(given, known)
        return f" (did you mean {', '.join(repr(n) for n in close)}?)" if close else ""

    for m in sorted(mets):
        if m not in have_m and not M.known(m):
            close = close_matches(m, all_m, cutoff=0.85)  # a slip of a letter or two, not a sibling metric
            if close and not new_metric:
                raise BadInput(f"no run has metric {m!r}; did you mean {', '.join(repr(n) for n in close)}? "
                               f"(a metric no run has yet: add {param('new_metric')})", field="metric",
                               extra={"did_you_mean": close})
    for g, sel in (("a", a), ("b", b)):
        for k, v in sel.items():
            if k not in have:
                out.append(f"no run has label {k!r} yet ({param(g, f'{k}={v}')}){near(k, all_k)}")
            elif L.canonical(v) not in have[k]:
                out.append(f"no run has {k}={v} yet ({param(g, f'{k}={v}')}){near(L.canonical(v), have[k])}")
    for k in sorted(keys - set(a) - set(b)):
        if k not in have:
            out.append(f"no run has label {k!r} yet{near(k, all_k)}")
    for m in sorted(mets):
        if m not in have_m:
            out.append(f"no run has metric {m!r} yet{near(m, all_m)}")
    return out


def _rival_warnings(ctx: Reads, docs: Mapping[str, HypothesisDoc], hid: str, preds: list[Prediction]) -> list[str]:
    out = []
    ceil = ctx.config.ceilings()
    for rid in rivals_of(docs, hid):
        for p, q in V.rival_overlaps(preds, docs[rid].predictions, ceil):
            out.append(V.rival_message(p, q, rid, ceil))
    return out


def post_hoc_mark(ctx: Reads, pred: Prediction, at: str) -> PostHoc | None:
    """The pre-registration mark for `pred` written now (core.posthoc): None when no run its groups
    select exists yet (pre-registered), else the runs that existed, by number and by uid."""
    if not ctx.db_exists():
        return None
    ev = load_evidence(ctx, pred_metric_names([pred]))
    ids = PH.seen_runs(pred, ev)
    if not ids:
        return None
    # post-hoc only when its outcome could be computed then; else only a baseline was known
    res = evaluate_predictions(ctx, [pred], ev).get(pred.id) or {}
    known: Literal["baseline-known"] | None = "baseline-known" if res.get("status") == "untested" else None
    return PostHoc(at=at, runs=ids, run_uids=[ev.uids.get(i, "") for i in ids], state=known)


def _post_hoc_notice(ctx: Commits, pid: str, mark: PostHoc | None) -> None:
    if mark is not None:
        why = ("some of its groups already had runs, its outcome could not be computed yet" if PH.state(mark) == PH.BASELINE_KNOWN
               else "its groups already had runs: its outcome could be computed")
        ctx.notice(f"{pid} is {PH.words(mark)} ({why}): every verdict on it says so; "
                   "a prediction written before its runs is what makes a verdict decisive")


def _selectors(sel: Mapping[str, Any] | None, field: str) -> dict[str, Any] | None:
    """A group's typed label selectors (`{"config": "tp8", "concurrency": 64}`, as a face gives them)
    as the prediction keeps them: each key a label name, each value checked by the text rule and
    typed as JSON shows a label value (256 and "256" are one value). None stays None (unchanged)."""
    if sel is None:
        return None
    return {L.check_key(str(k), field): L.typed(check_text(L.canonical(v), field, multiline=False))
            for k, v in sel.items()}


def add(ctx: Writes, hid: str, expect: str, *, metric: str | None = None, a: Mapping[str, Any] | None = None,
        b: Mapping[str, Any] | None = None, where: str | None = None, per: str | None = None,
        margin: float | None = None, new_metric: bool = False) -> dict[str, Any]:
    """Add a prediction to `hid`; `a`, `b`: the label selectors of the groups (typed values);
    `new_metric`: a metric no run has is meant, even when a run has a close one."""
    docs = hypotheses.sync(ctx)
    if hid not in docs:
        raise not_found("hypothesis", hid, docs, field="hid")
    sa, sb = _selectors(a, "a") or {}, _selectors(b, "b") or {}
    where = where.strip() if where and where.strip() else None
    m = 0.05 if margin is None else float(margin)
    node = check_spec(ctx, expect=expect, metric=metric, a=sa, b=sb, where=where, per=per, margin=m)
    warnings = _label_warnings(ctx, metric, node, sa, sb, where, per, new_metric=new_metric)
    made: dict[str, Prediction] = {}
    at = now_iso()

    def change(doc: HypothesisDoc) -> dict[str, str]:
        n = 1 + max((int(mm.group("n")) for p in doc.predictions if (mm := PID_RE.match(p.id))), default=0)
        pred = Prediction(id=f"{doc.id}.p{n}", expect=expect.strip(), metric=metric, a=sa, b=sb, where=where, per=per,
                          margin=m, created=at)
        # marked under the decision lock: no run lands between the mark and the commit
        pred.post_hoc = post_hoc_mark(ctx, pred, at)
        doc.predictions.append(pred)
        made["p"] = pred
        return {TR.PREDICTION: pred.id}

    def subject() -> str:
        mark = made["p"].post_hoc
        return f"optlog: {hid}: add prediction" + (f" ({PH.words(mark)})" if mark else "")

    with decision_lock(ctx.ws, ctx.db):
        hypotheses.mutate(ctx, hid, change, event="prediction-add", subject=subject, body=f"expect {expect.strip()}")
    pred = made["p"]
    _post_hoc_notice(ctx, pred.id, pred.post_hoc)
    docs = hypotheses.sync(ctx)
    warnings += _rival_warnings(ctx, docs, hid, [pred])
    for w in warnings:
        ctx.notice(w)
    out = _pred_out(pred, hid)
    out["warnings"] = warnings
    return out


def _split_pid(pid: str) -> tuple[str, str]:
    mm = PID_RE.match(pid)
    if not mm:
        raise BadInput(f"a prediction id looks like HYPOTHESIS.pN (e.g. comm-bound.p1), got {pid!r}", field="pid")
    return mm.group("hid"), pid


def _find(ctx: Reads, pid: str) -> tuple[HypothesisDoc, Prediction]:
    hid, _ = _split_pid(pid)
    docs = hypotheses.sync(ctx)
    doc = docs.get(hid)
    pred = next((p for p in doc.predictions if p.id == pid), None) if doc else None
    if doc is None or pred is None:
        raise not_found("prediction", pid, [p.id for d in docs.values() for p in d.predictions], field="pid")
    return doc, pred


def has_evidence(ctx: Reads, doc: HypothesisDoc, pred: Prediction) -> bool:
    """Evidence exists when a verdict judged the prediction on runs, or runs match it now."""
    for v in doc.verdicts:
        for p in v.predictions:
            if p.get("id") == pred.id and p.get("status") not in (None, "untested"):
                return True
    if not ctx.db_exists():
        return False

    res = evaluate_predictions(ctx, [pred])
    return res[pred.id]["status"] != "untested"


def edit(ctx: Writes, pid: str, *, expect: str | None = None, metric: str | None = None,
         a: Mapping[str, Any] | None = None, b: Mapping[str, Any] | None = None,
         where: str | None = None, per: str | None = None, margin: float | None = None) -> dict[str, Any]:
    """Change a prediction (None: unchanged; `a`, `b` replace a group's selectors when given and not
    empty). Before evidence exists it is edited in place; after, the old version is kept in its
    history and the prediction becomes version N+1, marked as edited after evidence."""

    doc, old = _find(ctx, pid)
    sa, sb = _selectors(a or None, "a"), _selectors(b or None, "b")
    new: dict[str, Any] = {
        "expect": expect.strip() if expect is not None else old.expect,
        "metric": (metric or None) if metric is not None else old.metric,
        "a": sa if sa is not None else dict(old.a),
        "b": sb if sb is not None else dict(old.b),
        "where": (where.strip() or None) if where is not None else old.where,
        "per": (per or None) if per is not None else old.per,
        "margin": float(margin) if margin is not None else old.margin,
    }
    check_spec(ctx, **new)
    if all(getattr(old, k) == v for k, v in new.items()):
        raise BadInput(f"nothing to change: give at least one of {param('expect')}, {param('metric')}, {param('a')}, {param('b')}, {param('where')}, {param('per')}, {param('margin')}",
                       field="pid")
    at = now_iso()
    out: dict[str, Prediction] = {}
    seen: dict[str, bool] = {}

    def change(d: HypothesisDoc) -> dict[str, str]:
        p = next(p for p in d.predictions if p.id == pid)
        # judged under the lock, on the file as it is now: a verdict committed since `_find` read it
        # is evidence too, so the old version is kept in the history
        evidence = seen["evidence"] = has_evidence(ctx, d, p)
        if evidence:
            p.history.append(PredictionVersion(version=p.version, expect=p.expect, metric=p.metric, a=p.a, b=p.b,
                                               where=p.where, per=p.per, margin=p.margin, created=p.created,
                                               replaced=at, post_hoc=p.post_hoc))
            p.version += 1
            p.edited_after_evidence = True
            p.created = at
        for k, v in new.items():
            setattr(p, k, v)
        # the mark is of the version written now: runs its groups select now (under the decision
        # lock, so no run lands between the mark and the commit)
        p.post_hoc = post_hoc_mark(ctx, p, at)
        p.status = "untested"
        out["p"] = p
        return {TR.PREDICTION: pid, TR.VERSION: str(p.version)}

    def subject() -> str:
        what = (f"v{old.version + 1}, edited after evidence existed" if seen.get("evidence")
                else f"v{old.version}, before any evidence")
        return f"optlog: edit prediction {pid} ({what})"

    with decision_lock(ctx.ws, ctx.db):
        hypotheses.mutate(ctx, doc.id, change, event="prediction-edit", subject=subject,
                          body=f"expect {new['expect']}" + (f"\nwas: {old.expect}" if old.expect != new["expect"] else ""))
    evidence = seen.get("evidence", False)
    mark = out["p"].post_hoc
    _post_hoc_notice(ctx, pid, mark)
    if evidence:
        ctx.notice(f"{pid} had evidence already: kept v{old.version} in its history; this is v{old.version + 1}, "
                   "and verdicts on it will say it was edited after the evidence was seen")
    res = _pred_out(out["p"], doc.id)
    res["new_version"] = evidence
    return res


def _pred_out(p: Prediction, hid: str) -> dict[str, Any]:
    d = p.model_dump(mode="json")
    d["hypothesis"] = hid
    d.setdefault("post_hoc", None)  # always in the document (the file leaves it out when None)
    d["preregistration"] = PH.state(d["post_hoc"])
    return d


def list_(ctx: Reads, hid: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
    """The predictions of hypothesis `hid` (None: all), with this status or any."""
    docs = hypotheses.sync(ctx)
    if hid is not None and hid not in docs:
        raise not_found("hypothesis", hid, docs, field="hid")
    out = []
    for d in sorted(docs.values(), key=lambda d: (d.created or "", d.id)):
        if hid is not None and d.id != hid:
            continue
        out += [_pred_out(p, d.id) for p in d.predictions]
    return [p for p in out if status is None or p["status"] == status]


def show(ctx: Reads, pid: str) -> dict[str, Any]:
    doc, pred = _find(ctx, pid)
    out = _pred_out(pred, doc.id)
    judged = [dict(p, at=v.at, by=v.by) for v in doc.verdicts for p in v.predictions if p.get("id") == pid]
    out["verdicts"] = [{"at": j["at"], "by": j["by"], "status": j.get("status"), "version": j.get("version"),
                        "explanation": j.get("explanation")} for j in judged]
    out["last_verdict"] = judged[-1] if judged else None
    return out


# ---------------------------------------------------------------- the verbs' documents (every face)


def ack(p: dict[str, Any]) -> documents.PredictionAck:
    """What a prediction write acknowledges with (an agent's default)."""
    return cast(documents.PredictionAck, {k: p[k] for k in ("id", "version", "status", "expect", "post_hoc",
                                                            "preregistration", "new_version", "warnings")
                                if k in p and (k not in ("post_hoc", "preregistration") or p.get("post_hoc"))})


def brief(doc: dict[str, Any]) -> dict[str, Any]:
    """`prediction show --brief`: the last three verdicts without the per-level values."""
    out = {k: v for k, v in doc.items() if k not in ("last_verdict", "history")}
    out["verdicts_total"] = len(out.get("verdicts", []))
    out["verdicts"] = [{k: v for k, v in x.items() if k != "levels"} for x in out.get("verdicts", [])[-3:]]
    return out
