"""Verdicts: evaluate predictions against the evidence, write the result into the hypothesis file,
commit it; invalidate a run and re-judge what rested on it; diff two runs.

Idempotent: a verdict is written only when its content (everything but `at`, `by` and `cause`) or
the statuses differ from the latest one in the file, so running `verdict` again without new evidence
changes no byte and makes no commit.

Invalidation (`run invalidate ID --why T`) is a committed decision even when no verdict rested on the
run: it is appended to `runs/invalidated.yaml` (run id, reason, who, when, the run's labels) and
committed (`Optlog-Event: invalidate`, `Optlog-Run: ID`); then every hypothesis whose latest verdict
used the run is re-evaluated and its new verdict committed with the reason.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from optlog.core import comparable as C
from optlog.core import due as DUE
from optlog.core import expr as E
from optlog.core import labels as L
from optlog.core import loadshare as LS
from optlog.core import posthoc as PH
from optlog.core import statusdoc as SD
from optlog.core import verdict as V
from optlog.core.duestate import KEPT
from optlog.core.hypothesis import HypothesisDoc, Prediction, Verdict
from optlog.core.ids import parse_ref
from optlog.core.timeutil import now_iso
from optlog.core.verdict import run_matches
from optlog.errors import BadInput, NotFound, no_space, not_found, out_of_space, param
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.needs import Index, Reads, Writes
from optlog.paths import Workspace
from optlog.service import evidence, hypotheses, runfiles
from optlog.service import documents
from optlog.service.diagnoses import describe, reads_diagnosis, refresh
from optlog.service.evidence import live_hypotheses
from optlog.store import launchrows, readcache, runrows, statusrows
from optlog.store.runsync import set_sync_stamp
from optlog.store.db import decision_lock
from optlog.store.lock import workspace_lock
from optlog.store.runrows import add_links, counting_evidence, linked_runs, runs_of_launch, saved_id
from optlog.yamlio import dump, parse_text, read_text, write_atomic

if TYPE_CHECKING:
    from optlog.core.verdict import Evidence

VOLATILE = ("at", "by", "cause", "run_uids")  # run_uids: derived from `runs` (see service.runfiles)
_all = all  # `evaluate` has a parameter named all
INVALIDATED_FILE = "runs/invalidated.yaml"


# ---------------------------------------------------------------- evidence


def load_evidence(ctx: Index, metric_names: set[str]) -> Evidence:
    """Runs that count (succeeded, not invalidated) with their labels and the named metrics."""

    return counting_evidence(ctx.db, metric_names | set(LS.COMPARED))  # load: said when groups differ


metric_names = _metric_names = DUE.metric_names  # public: service.nextexp loads the same metrics


def evaluate_predictions(ctx: Reads, preds: list[Prediction], ev: Any = None) -> dict[str, dict[str, Any]]:
    if ev is None:
        ev = load_evidence(ctx, _metric_names(preds))
    return V.evaluate(preds, ev, ctx.config.ceilings())


def due(ctx: Reads, docs: Mapping[str, HypothesisDoc]) -> dict[str, str]:
    """The hypotheses whose verdict is due, each with why: their predictions would now rest on other
    evidence than their latest verdict used. Decided from what changed, never from timestamps (issue
    42: a verdict written while the clock was a day ahead looked newer than every run after it): the
    engine's evidence fingerprint of each prediction (`core.verdict.fingerprint`: its candidate runs,
    their labels and values, the prediction as written, the ceilings) against the one its latest
    verdict recorded. So exactly what `verdict` would judge again: a hypothesis with evidence and no
    verdict, or one whose fingerprint moved. Never due: a hypothesis with a manual status, without
    predictions, or whose verdict rests on runs this database lacks (`verdict` keeps that one as it
    is). Reads the counting runs once; no statistics.

    What it finds is kept (`store.statusrows.due_memo`, issue 47) under the evidence counter (which
    every write that may change the evidence bumps: `store.db.Database.write`), the ceilings, and
    for each hypothesis a digest of what its judgement reads from the file (its predictions, its
    manual status, its latest verdict): the next call works out only the hypotheses whose digest
    moved, and reads no runs when none did (a todo written, a hypothesis's text edited, a `git
    pull` that changed no prediction or verdict)."""
    hs = {h: d for h, d in docs.items() if d.predictions and not d.override}
    if not hs:
        return {}
    ceil = ctx.config.ceilings()
    ceil_key = _digest(ceil)
    readcache.note_ceilings(ctx.ws, ceil_key, ceil)  # for the first `status` on plain SQL (store.plainread)
    digests = {h: _due_digest(d) for h, d in hs.items()}
    with ctx.db.connect() as c:
        gen, memo, journal = statusrows.due_memo(c)
    out, work, states, current = SD.due_known(digests, gen, memo, journal, ceil_key, lambda: _views(hs),
                                              lambda ids: _counting_runs(ctx, ids))
    if current:
        return out
    if work:
        out.update(_due(ctx, {h: hs[h] for h in work}, ceil, states))
    if gen is not None:
        statusrows.set_due_memo(ctx.db, SD.due_memo_doc(gen, ceil_key, digests, out, states))
    return {h: out[h] for h in hs if h in out}


def _views(hs: dict[str, HypothesisDoc]) -> dict[str, Any]:
    """Each hypothesis as `core.duestate.carry_over` reads it: its predictions' and its latest
    verdict's JSON dumps (the index holds the same dumps)."""
    return {h: ([p.model_dump(mode="json") for p in d.predictions],
                d.verdicts[-1].model_dump(mode="json") if d.verdicts else None) for h, d in hs.items()}


def _counting_runs(ctx: Index, ids: list[int]) -> list[tuple[int, str, dict[str, str]]]:
    with ctx.db.connect() as c:
        return statusrows.counting_runs(c, ids)


def _digest(x: Any) -> str:
    return SD.digest(x)


def _due_digest(d: HypothesisDoc) -> str:
    """What `_due` reads of a hypothesis: its predictions as written, its manual status, its latest
    verdict (with the runs it used): `core.statusdoc.due_digest` of their JSON dumps (the index's
    document holds the same dumps: the first read after a change on plain SQL digests those)."""
    return SD.due_digest([p.model_dump(mode="json") for p in d.predictions],
                         d.override.model_dump(mode="json", by_alias=True) if d.override else None,
                         d.verdicts[-1].model_dump(mode="json") if d.verdicts else None)


def _due(ctx: Index, hs: dict[str, HypothesisDoc], ceil: Any, states: dict[str, Any]) -> dict[str, str]:
    """`due` worked out for `hs` from the evidence (core.due.judge); `states` gets what the
    judgement found of each (`core.duestate.KEPT` for a verdict resting on runs this database lacks)."""
    preds = [p for d in hs.values() for p in d.predictions]
    ev = load_evidence(ctx, _metric_names(preds))
    kept = runfiles.missing_runs(ctx, {h: d.verdicts[-1] for h, d in hs.items() if d.verdicts})
    states.update({h: KEPT for h in kept if h in hs})
    return DUE.judge({h: (d.predictions, d.verdicts[-1].predictions if d.verdicts else None)
                      for h, d in hs.items() if h not in kept}, ev, ceil, states)


def _live(ctx: Index, hids: list[str]) -> set[str]:
    """Hypotheses with a queued or running run (their status is `testing`)."""

    return live_hypotheses(ctx) & set(hids)


# the wording of a judgement: its texts say the structured fields below in words (and in a number
# style that may change, issues 43/44), so they never decide whether a judgement changed
WORDING = frozenset({"summary", "explanation", "reason", "drift", "load_differs", "warnings"})


def _strip(d: dict[str, Any]) -> dict[str, Any]:
    """A verdict record as compared to the last one: the judgement, not its wording. Without when
    and by whom, without each prediction's evidence fingerprint (a cache key: a judgement with the
    same runs, values and outcomes is the same verdict, whatever else the hash covered when it was
    written), and without the texts (`WORDING`, at any depth): statuses, runs, each level's outcome,
    estimate, interval and threshold, and the quiet runs' judgement are compared, so a record written
    in an older number style is not recorded again."""
    out = {k: _judgement(v) for k, v in d.items() if k not in VOLATILE and k not in WORDING}
    if isinstance(out.get("predictions"), list):
        out["predictions"] = [{k: v for k, v in p.items() if k != "evidence"} if isinstance(p, dict) else p
                              for p in out["predictions"]]
    return out


def _judgement(v: Any) -> Any:
    """`v` without its texts (`WORDING`), at any depth."""
    if isinstance(v, dict):
        return {k: _judgement(x) for k, x in v.items() if k not in WORDING}
    if isinstance(v, list):
        return [_judgement(x) for x in v]
    return v


def _summary(status: str, preds: list[dict[str, Any]], rests: list[str] | None = None) -> str:
    """One line for the hypothesis; led by the post-hoc predictions its status rests on (core.posthoc)."""
    if not preds:
        return f"{status}: no predictions"
    if len(preds) == 1:
        return preds[0]["explanation"]
    lead = PH.hypothesis_words(status, rests or []) or status
    return f"{lead}: " + " | ".join(f"{p['id']} {p['explanation']}" for p in preds)


def _marked(preds: list[Prediction], res: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The engine's results with each prediction's pre-registration mark (core.posthoc) in its
    record and explanation: the engine judges, this says how the claim was written."""
    return {p.id: PH.decorate(res[p.id], p.post_hoc) for p in preds if p.id in res}


# ---------------------------------------------------------------- evaluate


def evaluate(ctx: Writes, hid: str | None = None, all: bool = False, *, hids: list[str] | None = None,  # noqa: A002
             event: str = "verdict", cause: str | None = None, trailers: dict[str, str] | None = None) -> dict[str, Any]:
    """Judge the predictions of one hypothesis (`hid`), of `hids`, or of all (`all`, or nothing given).

    Judged and committed under the decision lock (`store.db.decision_lock`): no evidence changes
    between reading it and committing the judgement, and a second verdict running at the same time
    waits, then finds nothing new to commit (idempotent under concurrency).

    The lock is taken only to write: a first pass judges without it and writes nothing; when it
    finds nothing to commit (the usual case: no new evidence) its answer stands, as of the moment
    it read; otherwise everything is judged again under the lock and committed (a write transaction
    for every verdict cost more than judging 10,000 runs).

    Returns `{"results": [...], "warnings": [...], "committed": N}` (DESIGN §7 verdict --json)."""
    judged: dict[str, dict[str, Any]] = {}  # the first pass's results: reused where the evidence is the same
    try:
        return _evaluate(ctx, hid, hids=hids, event=event, cause=cause, trailers=trailers, dry=True, judged=judged)
    except _MustWrite:
        pass
    with decision_lock(ctx.ws, ctx.db):
        return _evaluate(ctx, hid, hids=hids, event=event, cause=cause, trailers=trailers, dry=False, judged=judged)


class _MustWrite(Exception):
    """A read-only pass of `_evaluate` met something to write: judge again under the decision lock."""


def _evaluate(ctx: Writes, hid: str | None, *, hids: list[str] | None, event: str, cause: str | None,
              trailers: dict[str, str] | None, dry: bool, judged: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Judge and commit (`dry`: judge only, raising `_MustWrite` at the first thing to write).
    `judged`: results of an earlier pass by prediction id, filled by this one; the engine reuses a
    result only where its evidence fingerprint is unchanged (core.verdict.evaluate)."""
    docs = hypotheses.sync(ctx)
    if event == "verdict":
        # one diagnosis from known ceilings: stored ones made with other ceilings are redone first

        redone = refresh(ctx, write=not dry)
        if redone and dry:
            raise _MustWrite
        if redone:
            ctx.notice(describe(redone))
            cause = cause or describe(redone)
    if hid is not None:
        if hid not in docs:
            raise not_found("hypothesis", hid, docs, field="hid")
        targets = [hid]
    elif hids is not None:
        targets = [h for h in hids if h in docs]
    else:
        targets = sorted(docs, key=lambda h: (docs[h].created or "", h))
    preds = [p for h in targets for p in docs[h].predictions]
    ceil = ctx.config.ceilings()
    ev = load_evidence(ctx, _metric_names(preds)) if preds else None
    cached: dict[str, dict[str, Any]] = dict(judged)  # the file's own records first, below
    for h in targets:
        if docs[h].verdicts:
            for rec in docs[h].verdicts[-1].predictions:
                cached[rec.get("id", "")] = rec
    # a verdict whose runs are not in this database is kept, never re-judged into `untested`
    kept = runfiles.missing_runs(ctx, {h: docs[h].verdicts[-1] for h in targets if docs[h].verdicts})
    preds = [p for h in targets if h not in kept for p in docs[h].predictions]
    res = _marked(preds, V.evaluate(preds, ev, ceil, cached)) if preds and ev is not None else {}
    judged.update(res)
    uids = ev.uids if ev is not None else {}
    live = _live(ctx, targets)

    results: list[dict[str, Any]] = []
    all_warnings: list[str] = []
    seen_pairs: set[tuple[str, ...]] = set()
    committed = 0
    links: dict[str, set[int]] = {}
    evidence_runs: set[int] = set()
    decisions: list[hypotheses.Decision] = []  # committed together after the loop (one commit)
    bases: dict[str, set[int]] = {}
    for h in targets:
        doc = docs[h]
        if h in kept:
            results.append(_kept(doc, kept[h]))
            continue
        pres = [res[p.id] for p in doc.predictions]
        auto = V.hypothesis_status([p["status"] for p in pres], h in live)
        rests = PH.rests_on(auto, pres)
        warnings: list[str] = []
        for rid in hypotheses.rivals_of(docs, h):
            for p, q in V.rival_overlaps(doc.predictions, docs[rid].predictions, ceil):
                msg = V.rival_message(p, q, rid, ceil)
                warnings.append(msg)
                pair = tuple(sorted((p.id, q.id)))
                if pair not in seen_pairs:
                    seen_pairs.add(pair)
                    all_warnings.append(msg)
        runs = sorted({r for p in pres for r in p["runs"]})
        entry: dict[str, Any] = {"at": now_iso(), "by": ctx.actor, "status": auto,
                                 "summary": _summary(auto, pres, rests), "predictions": pres, "runs": runs}
        if rests:
            entry["post_hoc"] = rests  # the status rests on predictions written after their runs
        if runs:
            entry["run_uids"] = [uids.get(r, "") for r in runs]
        # the evidence this verdict rests on: every run its predictions could use
        basis: set[int] = set().union(*(V.candidate_runs(p, ev) for p in doc.predictions)) if ev is not None else set()
        evidence_runs.update(basis)
        if warnings:
            entry["warnings"] = warnings
        if cause:
            entry["cause"] = cause
        last = doc.verdicts[-1].model_dump(mode="json") if doc.verdicts else None
        same_preds = _all(p.status == r["status"] for p, r in zip(doc.predictions, pres))
        nothing_yet = last is None and _all(p["status"] == "untested" for p in pres)
        unchanged = (last is not None and _strip(last) == _strip(entry) and same_preds and doc.auto_status == auto) \
            or (nothing_yet and doc.auto_status in (None, auto))
        if not unchanged and dry:
            raise _MustWrite
        if not unchanged:
            statuses = {r["id"]: r["status"] for r in pres}

            def change(d: HypothesisDoc, entry: dict[str, Any] = entry, statuses: dict[str, str] = statuses,
                       auto: str = auto) -> None:
                for p in d.predictions:
                    if p.id in statuses:
                        p.status = statuses[p.id]  # type: ignore[assignment]
                d.auto_status = auto  # type: ignore[assignment]
                if not (d.verdicts and _strip(d.verdicts[-1].model_dump(mode="json")) == _strip(entry)):
                    d.verdicts.append(Verdict.model_validate(entry))  # never the same judgement twice in a row
                d.status = d.override.status if d.override else auto  # type: ignore[assignment]

            subject = f"optlog: {h} → {auto}"
            if cause:
                subject = f"optlog: {cause.split(':')[0]}: {h} → {auto}"
            tr = {TR.STATUS: auto, **({TR.RUN: ",".join(map(str, runs))} if runs else {}), **(trailers or {})}
            decisions.append(hypotheses.Decision(h, change, subject, entry["summary"], tr))
            bases[h] = basis
        if runs:
            links[h] = set(runs)
        out = {
            "hypothesis": h,
            "status": doc.effective_status(),
            "auto_status": auto,
            "override": doc.override.model_dump(mode="json") if doc.override else None,
            "changed": False,
            "summary": entry["summary"],
            "post_hoc": rests,
            "predictions": [_public(p) for p in pres],
            "warnings": warnings,
        }
        _disagreement(out, doc, auto)
        results.append(out)
    if decisions:
        def export(hids: list[str]) -> list[Path]:
            return runfiles.export(ctx, set().union(*(bases[x] for x in hids)), uids)

        made = hypotheses.mutate_many(ctx, decisions, event=event, subject=partial(_batch_subject, cause),
                                      body=cause or "", also=export)
        with ctx.db.connect() as c:  # what this verdict has seen of launches (status: what ended badly after it)
            seen = statusrows.launches_seen(c)
        set_sync_stamp(ctx.db, statusrows.LAUNCHES_SEEN_KEY, seen)
        for out in results:
            if out["hypothesis"] in made:
                doc, out["changed"] = made[out["hypothesis"]]
                out["status"] = doc.effective_status()
                out["override"] = doc.override.model_dump(mode="json") if doc.override else None
                _disagreement(out, doc, out["auto_status"])
                committed += int(out["changed"])
    _link_runs(ctx, links, dry)
    # runs an unchanged verdict rests on that have no committed evidence yet (a workspace from before
    # evidence travelled, or a commit that failed): committed now, on their own
    if dry:
        if (ev is not None and runfiles.unexported(ctx, evidence_runs, ev.uids)) or runfiles.pending(ctx):
            raise _MustWrite
    elif (ev is not None and runfiles.export(ctx, evidence_runs, ev.uids)) or runfiles.pending(ctx):
        committed += int(runfiles.commit_pending(ctx) is not None)
    if kept:
        ctx.notice("kept " + "; ".join(f"{h}'s verdict (runs {', '.join(map(str, gone))} are not in this database)"
                                       for h, gone in kept.items())
                   + ": their evidence was never committed, so it is not re-judged here")
    for w in all_warnings:
        ctx.notice(w)
    return {"results": results, "warnings": all_warnings, "committed": committed}


def _disagreement(out: dict[str, Any], doc: HypothesisDoc, auto: str) -> None:
    """Say it in the result when a manual status disagrees with the automatic verdict."""
    out.pop("disagreement", None)
    if doc.override and doc.override.status != auto:
        out["disagreement"] = (f"manual status {doc.override.status} (by {doc.override.by}: {doc.override.why}) "
                               f"disagrees with the automatic verdict {auto}")


def _batch_subject(cause: str | None, decided: list[hypotheses.Decision], width: int = 120) -> str:
    """The subject of one commit of several verdicts: how many, and the first of them that fit
    (`optlog: 3 verdicts: a → confirmed, b → falsified, c → open`); each is its own event in `log`."""
    lead = f"optlog: {cause.split(':')[0]}: " if cause else "optlog: "
    lead += f"{len(decided)} verdicts: "
    said: list[str] = []
    for i, d in enumerate(decided):
        item = f"{d.hid} → {d.trailers.get(TR.STATUS, '?')}"
        rest = len(decided) - i - 1
        tail = f", and {rest} more" if rest else ""
        if said and len(lead + ", ".join([*said, item]) + tail) > width:
            return lead + ", ".join(said) + f", and {len(decided) - i} more"
        said.append(item)
    return lead + ", ".join(said)


def _kept(doc: HypothesisDoc, gone: list[Any]) -> dict[str, Any]:
    """The result for a hypothesis whose last verdict is kept because its runs are elsewhere."""
    last = doc.verdicts[-1]
    why = (f"kept the verdict of {last.at} by {last.by}: runs {', '.join(map(str, gone))} are not in this "
           f"database (made in another clone and never committed as evidence)")
    out: dict[str, Any] = {
        "hypothesis": doc.id, "status": doc.effective_status(), "auto_status": doc.auto_status,
        "override": doc.override.model_dump(mode="json") if doc.override else None, "changed": False,
        "summary": last.summary, "post_hoc": list(getattr(last, "post_hoc", None) or []),
        "predictions": list(last.predictions), "warnings": [], "kept": why,
    }
    return out


def _public(p: dict[str, Any]) -> dict[str, Any]:
    out = dict(p)
    out["levels"] = [{"level": lv["level"], "a": lv.get("a"), "b": lv.get("b"), "ratio": lv.get("ratio"),
                      "n": lv.get("n", {}), "values": lv.get("values", {}), "quantity": lv.get("quantity"),
                      "statistic": lv.get("statistic"), "estimate": lv.get("estimate"), "ci": lv.get("ci"),
                      "threshold": lv.get("threshold"), "p": lv.get("p"),
                      "outcome": lv.get("outcome"), "reason": lv.get("reason"), "method": lv.get("method"),
                      "runs": lv.get("runs", {}), **({"tests": lv["tests"]} if "tests" in lv else {}),
                      **({"geo": lv["geo"]} if lv.get("geo") else {}),
                      # how it was estimated (DESIGN §5): region, design, pairs, confidence, a fit, drift
                      **{k: lv[k] for k in ("region", "design", "confidence", "pairs", "paired_by", "fit", "drift")
                         if lv.get(k) is not None}}
                     for lv in p["levels"]]
    return out


def _link_runs(ctx: Index, links: dict[str, set[int]], dry: bool = False) -> None:
    """EvidenceLink rows (kind "verdict") for the runs verdicts used; written only when missing
    (`dry`: `_MustWrite` when some are)."""
    if not links:
        return

    with ctx.db.connect() as c:
        have = linked_runs(c, sorted(links))
    missing = [(h, r) for h, rs in links.items() for r in sorted(rs) if (h, r) not in have]
    if not missing:
        return
    if dry:
        raise _MustWrite
    now = now_iso()
    with ctx.db.write() as s:
        add_links(s, missing, "verdict", now)


def any_bad(result: dict[str, Any] | documents.VerdictDoc) -> bool:
    """For `verdict --check`: any evaluated prediction falsified or inconclusive."""
    return any(p["status"] in ("falsified", "inconclusive") for r in result["results"] for p in r["predictions"])


# ---------------------------------------------------------------- invalidation


def invalidate(ctx: Writes, run_id: int | str, why: str) -> dict[str, Any]:
    """Invalidate one run (the single-run document of DESIGN §7); see `invalidate_many`."""
    res = invalidate_many(ctx, [str(run_id)], why)
    rid = res["runs"][0] if res["runs"] else res["already"][0]
    out = {k: v for k, v in res.items() if k not in ("runs", "already")}
    if not res["changed"]:
        out["reason"] = res["reasons"].get(rid)
    out.pop("reasons", None)
    return {"run": rid, **out}


def _resolve_runs(ctx: Index, refs: list[str]) -> list[Any]:
    """Run rows for run ids and launches (`L3`): every reference checked before anything changes."""
    if not refs:
        raise BadInput("name the runs to invalidate: run ids and/or launches (L3)", field="refs")
    rows: dict[int, Any] = {}
    for ref in refs:
        kind, n = parse_ref(ref, "refs")
        if kind == "run":
            r = evidence.get_run(ctx, n, "refs")
            rows[r.id] = r
            continue
        with ctx.db.read() as s:
            if launchrows.launch(s, n) is None:
                raise NotFound(f"no launch {n}", field="refs")
            for r in runs_of_launch(s, n):
                rows[saved_id(r)] = r
    return [rows[k] for k in sorted(rows)]


def invalidate_many(ctx: Writes, refs: list[str], why: str) -> dict[str, Any]:
    """Invalidate runs (ids and launches `L3`) in one decision: one commit of the register
    (`Optlog-Run: 4,5,6`), then one re-judgement of every hypothesis that rested on any of them."""
    if not why or not why.strip():
        raise BadInput(f"say why the run is invalid: {param('why')} TEXT", field="why")
    why = why.strip()
    # under the decision lock from the first read to the re-judgement: no verdict judges between
    # the flag and its commit, and two invalidations of one run record it once
    with decision_lock(ctx.ws, ctx.db):
        return _invalidate_many(ctx, refs, why)


def _invalidate_many(ctx: Writes, refs: list[str], why: str) -> dict[str, Any]:
    rows = _resolve_runs(ctx, [str(x) for x in refs])
    already = [r for r in rows if r.invalidated]
    todo = [r for r in rows if not r.invalidated]
    for r in already:
        ctx.notice(f"run {r.id} is already invalidated ({r.invalid_reason}); nothing changed")
    base = {"runs": [r.id for r in todo], "already": [r.id for r in already],
            "reasons": {r.id: r.invalid_reason for r in already}, "invalidated": True}
    if not todo:
        return {**base, "changed": False, "results": []}
    docs = hypotheses.sync(ctx)
    shown = {r.id: evidence.show_run(ctx, r.id) for r in todo}
    ids = set(shown)
    # the verdicts that used the runs, and any whose groups they fall in (skipped levels, not comparable)
    affected = sorted(h for h, d in docs.items()
                      if d.verdicts and ids & set(d.verdicts[-1].model_dump().get("runs") or []))
    rejudge = sorted(set(affected) | {h for h, d in docs.items() if d.verdicts and any(
        run_matches(p, run["labels"]) for p in d.predictions for run in shown.values())})
    at = now_iso()
    with ctx.db.write() as s:
        for r in todo:
            row = runrows.run(s, r.id)
            assert row is not None
            row.invalidated, row.invalid_reason = True, why
            s.add(row)
    # the register of invalidations: a committed decision even when no verdict used the runs

    path = ctx.ws.root / INVALIDATED_FILE
    id_list = ",".join(str(r.id) for r in todo)
    with workspace_lock(ctx.ws), _put_back_on_failure(ctx.ws, [path, *(runfiles.path_for(ctx.ws, r.uid) for r in todo)]):
        data: dict[str, Any] = {}
        if path.is_file():
            data = parse_text(read_text(path, INVALIDATED_FILE), INVALIDATED_FILE) or {}
        entries = list(data.get("invalidated") or [])
        for r in todo:
            used = sorted(h for h in affected if r.id in (docs[h].verdicts[-1].model_dump().get("runs") or []))
            entries.append({"run": r.id, "why": why, "by": ctx.actor, "at": at, "labels": shown[r.id]["labels"],
                            "affected": used})
        write_atomic(path, "# Runs invalidated with `optlog run invalidate` (the database keeps the flag).\n"
                     + dump({"invalidated": entries}))
        subject = f"optlog: invalidate run {id_list}" if len(todo) == 1 else f"optlog: invalidate {len(todo)} runs ({id_list})"
        # each run's file travels with git too: a clone re-judges the same
        run_files = [runfiles.mark_invalidated(ctx, r.id) for r in todo]
        history.record(ctx, [path, *run_files], subject, why,
                       {TR.EVENT: "invalidate", TR.RUN: id_list,
                        **({TR.HYPOTHESIS: ",".join(affected)} if affected else {})})
    res: dict[str, Any] = {"results": [], "committed": 0, "warnings": []}
    if rejudge:
        what = f"run {id_list}" if len(todo) == 1 else f"runs {id_list}"
        res = evaluate(ctx, hids=rejudge, event="invalidate", cause=f"{what} invalidated: {why}",
                       trailers={TR.RUN: id_list})
    before = {h: docs[h].auto_status for h in rejudge}
    rejudged = [{"hypothesis": x["hypothesis"], "from": before.get(x["hypothesis"]), "to": x["auto_status"]}
                for x in res["results"] if x["changed"]]
    return {**base, "changed": True, "reason": why, "affected": affected, "rejudged": rejudged,
            "status_changes": [c for c in rejudged if c["from"] != c["to"]], "results": res["results"]}


@contextmanager
def _put_back_on_failure(ws: Workspace, paths: list[Path]) -> Iterator[None]:
    """Files as they were before the block if it fails (the register and the runs' evidence files
    of an invalidation whose commit failed: the database's flag is rolled back with them, so
    nothing is left that looks decided); a full disk is said as such, with what was put back."""
    before = {p: p.read_bytes() if p.is_file() else None for p in paths}
    try:
        yield
    except BaseException as e:
        for p, data in before.items():
            try:
                if data is None:
                    p.unlink(missing_ok=True)
                elif not p.is_file() or p.read_bytes() != data:
                    write_atomic(p, data.decode("utf-8"))
            except OSError:
                pass
        if isinstance(e, Exception) and out_of_space(e, ws.root):
            raise no_space(ws.root, f"{', '.join(ws.rel(p) for p in paths)} put back as they were; nothing "
                           "was flagged or committed") from None
        raise


# ---------------------------------------------------------------- diff


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                out.update(_flatten(v, key))
            else:
                out[key] = v
    return out


def runs_diff(ctx: Reads, a: int | str, b: int | str) -> dict[str, Any]:
    """Only what differs between two runs: labels, metrics (with the ratio b/a), environment."""

    ra, rb = evidence.show_run(ctx, a, field="a"), evidence.show_run(ctx, b, field="b")
    labels = {}
    for k in sorted(set(ra["labels"]) | set(rb["labels"])):
        va, vb = ra["labels"].get(k), rb["labels"].get(k)
        if va is None or vb is None or L.canonical(va) != L.canonical(vb):
            labels[k] = {"a": va, "b": vb}
    metrics = {}
    for k in sorted(set(ra["metrics"]) | set(rb["metrics"])):
        va, vb = ra["metrics"].get(k), rb["metrics"].get(k)
        if va != vb:
            metrics[k] = {"a": va, "b": vb, "ratio": (vb / va) if va and vb is not None else None}
    ea, eb = _flatten(ra.get("environment") or {}), _flatten(rb.get("environment") or {})
    env = {k: {"a": ea.get(k), "b": eb.get(k)} for k in sorted(set(ea) | set(eb)) if ea.get(k) != eb.get(k)}
    # what each was rendered with (runs.record): the values and commands, and the keys that make
    # the two not comparable unless a selector or --per names them (core.comparable)
    rec_a, rec_b = (_flatten({k: (r.get("raw") or {}).get(k) for k in ("values", "commands")}) for r in (ra, rb))
    rendered = {k: {"a": rec_a.get(k), "b": rec_b.get(k)} for k in sorted(set(rec_a) | set(rec_b))
                if rec_a.get(k) != rec_b.get(k)}
    names = [C.effective({k: L.canonical(v) for k, v in r["labels"].items()}, (r.get("raw") or {}).get("config"))
             for r in (ra, rb)]
    differ = C.differing_keys(names)
    other = {}
    for k in ("status", "invalidated", "source", "host"):
        if ra.get(k) != rb.get(k):
            other[k] = {"a": ra.get(k), "b": rb.get(k)}
    return {"a": ra["id"], "b": rb["id"], "labels": labels, "metrics": metrics, "environment": env, "other": other,
            "rendered": rendered, "comparable": not differ,
            "not_comparable": [{"key": k, "a": names[0].get(k), "b": names[1].get(k)} for k in differ],
            "same": {"labels": len(set(ra["labels"]) & set(rb["labels"])) - sum(1 for k in labels if k in ra["labels"] and k in rb["labels"]),
                     "metrics": len(set(ra["metrics"]) & set(rb["metrics"])) - sum(1 for k in metrics if k in ra["metrics"] and k in rb["metrics"]),
                     "environment": len(set(ea) & set(eb)) - sum(1 for k in env if k in ea and k in eb)}}


def rediagnose(ctx: Writes, cause: str) -> dict[str, Any]:
    """`refresh`, then re-judge the hypotheses with verdicts whose predictions read a diagnosis metric."""

    changes = refresh(ctx)
    out: dict[str, Any] = {"rediagnosed": changes, "results": []}
    if not changes:
        return out
    ctx.notice(describe(changes))
    docs = hypotheses.sync(ctx)
    hids = sorted(h for h, d in docs.items() if d.verdicts and any(reads_diagnosis(p) for p in d.predictions))
    if hids:
        res = evaluate(ctx, hids=hids, event="rediagnose", cause=f"{cause}; {describe(changes)}")
        out["results"] = res["results"]
    return out


# ---------------------------------------------------------------- the verbs' documents (every face)


def brief(res: dict[str, Any]) -> documents.VerdictDoc:
    """One line per prediction (an agent's default): ids, statuses and the explanation."""
    return cast(documents.VerdictDoc, {
        "results": [{"hypothesis": r["hypothesis"], "status": r["status"], "auto_status": r["auto_status"],
                     "changed": r["changed"], **({"disagreement": r["disagreement"]} if r.get("disagreement") else {}),
                     **({"post_hoc": r["post_hoc"]} if r.get("post_hoc") else {}),
                     "predictions": [{"id": p["id"], "status": p["status"], "line": p.get("explanation"),
                                      **({"post_hoc": p["post_hoc"]} if p.get("post_hoc") else {})}
                                     for p in r["predictions"]]}
                    for r in res["results"]],
        "warnings": res["warnings"][:5],
        "warnings_total": len(res["warnings"]),
        "committed": res["committed"],
    })
