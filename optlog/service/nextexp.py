"""`optlog next [HYP]`: the experiment that would tell rival hypotheses apart (issue 36).

Loads the hypotheses and the counting evidence, judges every prediction (core.verdict, the same
results `verdict` writes, nothing is written to the hypothesis files), asks core.discriminate for
each pair's decision and candidates, and writes the best candidate of each undecided pair as a run
spec `runs/next-<hyp>.yaml` derived from the launch that produced the evidence: its spec text as
committed (`launches/L<id>/spec.yaml`, its `--set` values folded into `params`), the axis set to
the reference and new levels, the repeats the measured noise needs, `order: cycles` (every cycle
visits every point, so the verdict pairs them), and a comment per level with each hypothesis's
predicted outcome. Nothing is launched: `optlog run launch runs/next-<hyp>.yaml` is the user's call.
The spec file is not committed either; the launch commits what it ran.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, cast

from optlog.core import costing as CO
from optlog.core import discriminate as D
from optlog.core import modelfacts as MF
from optlog.core import proposal as P
from optlog.core import verdict as V
from optlog.core.numfmt import fmt_duration, fmt_ratio
from optlog.core.timeutil import parse_iso
from optlog.errors import BadInput, OptlogError, not_found, param, plain
from optlog.needs import Index, Reads
from optlog.runs.spec import load_spec, plan, record_sets
from optlog.service import documents, evidence, hypotheses, launch_record
from optlog.service.verdicts import load_evidence, metric_names
from optlog.store.runrows import environments
from optlog.yamlio import dump, parse_text, write_atomic
from optlog.core import jsondoc

# the metrics the roofline's work estimate reads (core.diagnosis.estimate_work), beside the predictions'
WORK_METRICS = {"output_throughput", "input_throughput", "total_output_tokens", "total_input_tokens",
                "duration_s", "srv_n_decode_delta", "srv_tokens_predicted_delta", "mean_inflight", "completed",
                *MF.NUMERIC_FACTS, *(MF.FACT_PREFIX + f for f in MF.NUMERIC_FACTS)}


def analyse(ctx: Reads, hid: str | None = None, *, write: bool = True) -> documents.NextDoc:
    """The `next` document: every pair (or those of `hid`), best candidate first, specs written."""
    docs = hypotheses.all_docs(ctx)
    if hid is not None and hid not in docs:
        raise not_found("hypothesis", hid, list(docs))
    preds = [p for d in docs.values() for p in d.predictions]
    ev = load_evidence(ctx, metric_names(preds) | WORK_METRICS)
    ceilings = ctx.config.ceilings()
    results = V.evaluate(preds, ev, ceilings) if preds else {}
    hyps = {d.id: D.Hyp(d.id, d.title, d.statement, d.effective_status(), d.parent, list(d.rivals),
                        list(d.predictions), {p.id: results[p.id] for p in d.predictions if p.id in results})
            for d in docs.values()}
    measured = sorted({r for res in results.values() for r in res.get("runs", [])})
    with ctx.db.read() as s:
        res = P.resources_of(environments(s, measured))
    pairs = D.analyse(hyps, ev.runs, ceilings, hid, res, _memory_needs(ctx, measured))
    out = []
    for e in pairs:
        cands: list[D.Candidate] = e.pop("candidates")
        e["candidates"] = [c.as_dict() for c in cands]
        e["resources"] = res.as_dict()
        if cands:
            best = cands[0]
            e["best"] = 0
            e["spec"], e["spec_note"] = (None, "not written (--no-write)")
            if write:
                e["spec"], e["spec_note"], cost = _write_spec(ctx, e["hypothesis"], e["other"], best, ev)
                e["candidates"][0] = best.as_dict()  # what the checks changed in it (an axis not raised)
                if cost is not None:
                    e["cost"] = cost
        out.append(e)
    if hid is None and not out:
        why = "no hypothesis has a rival or a pivot parent that is still undecided"
    else:
        why = None
    return cast(documents.NextDoc, {"hypothesis": hid, "pairs": out, **({"note": why} if why else {})})


def _launch_of(best: D.Candidate, ev: Any) -> int | None:
    launches = Counter(ev.runs[r].launch for r in best.runs if r in ev.runs and ev.runs[r].launch is not None)
    return launches.most_common(1)[0][0] if launches else None


def _write_spec(ctx: Reads, hid: str, other: str, best: D.Candidate,
                ev: Any) -> tuple[str | None, str, dict[str, Any] | None]:
    """Write `runs/next-<hid>.yaml` from the launch the candidate's evidence came from, checked
    against what it edits (core.proposal) and costed (core.costing); (path, note, cost). What sizing
    the candidate's levels to the machine left out or capped (`best.sized`) is in its header."""
    lid = _launch_of(best, ev)
    if lid is None and best.source == "quiet":  # re-run the loaded cells (core.discriminate.quiet_candidates)
        return None, ("the evidence was recorded, not launched: no launch to derive a spec from; re-run "
                      f"{D.cell_text(best.rerun.get('cells') or [])} with {best.repeats} repeats on a quiet machine "
                      f"(run launch with {param('when_quiet', str(best.rerun.get('when_quiet')))} waits for one)"), None
    if lid is None:
        return None, ("the evidence was recorded, not launched: no launch to derive a spec from; run "
                      f"{best.axis or 'the same points'} = {', '.join(map(str, best.reference + best.levels))} "
                      f"with {best.repeats} repeats, interleaved, on the same server, bench and workload"), None
    try:
        d = launch_record.find(ctx, lid)
    except OptlogError as e:
        return None, f"launch L{lid}: {e}", None
    text = (d / "spec.yaml").read_text(encoding="utf-8")
    data = parse_text(text, str(d / "spec.yaml"))
    try:
        rec = jsondoc.loads((d / "points.json").read_text(encoding="utf-8"))
    except ValueError:
        rec = {}
    params = dict(data.get("params") or {})
    for k, v in record_sets(rec.get("sets") or []):
        if not k.startswith("matrix.") and k not in ("repeats", "order", "order_seed"):
            params[k] = v
    if params:
        data["params"] = params
    notes = [f"derived from launch L{lid} ({launch_record.DIR}/{d.name})"]
    if best.source == "quiet":  # every point of that launch again; the cells that were loaded are said
        notes.append(f"re-runs every point of launch L{lid}; the loaded cells that decide the outcome: "
                     f"{D.cell_text(best.rerun.get('cells') or [])}; launch it on a quiet machine "
                     f"(the Launch line waits for one up to {best.rerun.get('when_quiet')} s)")
    axis = best.axis
    if axis and not P.reads(data, axis):
        # refused: a matrix axis no command reads would only relabel the same runs
        return None, (f"not written: the commands of launch L{lid} do not read {axis} (no {{{{ {axis} }}}} in the "
                      f"server or bench command), so varying it would change nothing that runs; make them use "
                      f"{{{{ {axis} }}}} and run {axis} = {', '.join(map(str, best.reference + best.levels))}"), None
    levels = list(dict.fromkeys([*best.reference, *best.levels]))
    matrix = dict(data.get("matrix") or {})
    include = list(data.get("include") or [])
    if axis and axis in matrix:
        matrix[axis] = levels
    elif axis and any(axis in inc for inc in include):
        keep = [inc for inc in include if inc.get(axis) in best.reference]
        # the new entries copy the tested entry nearest to them (a measured level other than the
        # reference: tp4pp2 for tp2pp4), whose other values fit them best
        model = next((inc for inc in reversed(include) if axis in inc and inc.get(axis) not in best.reference),
                     keep[-1] if keep else include[-1])
        include = keep + [{**model, axis: lv} for lv in best.levels]
        others = sorted(k for k in model if k != axis)
        if others:
            notes.append(f"the new {axis} entries copy {', '.join(others)} from {axis}={model.get(axis)}: check them")
    elif axis:
        params.pop(axis, None)
        data["params"] = params
        matrix[axis] = levels
    for k, vals in list(best.also.items()):  # an axis that would cap the new levels (concurrency beside slots)
        if not P.reads(data, k):  # only a label: raising it would be a false note (issue 45)
            notes.append(f"{k} not raised: no server or bench placeholder reads it (the workload check below "
                         "says whether the bench fills the batch)")
            best.also.pop(k)
            best.why = best.why.replace(D.raised_text(k, vals), f"{k} not raised (no command reads it)")
            continue
        if k in matrix or not any(k in inc for inc in include):
            matrix[k] = vals
            params.pop(k, None)
        else:
            include = [{**inc, k: vals[0]} for inc in include]
    # another axis with several levels of which the evidence used one (the verdict set the others apart
    # as not comparable: the issue's `threads: [1, 2]` kept, doubling the runs): kept at that level
    used = [ev.runs[r].labels for r in best.runs if r in ev.runs]
    for k, vals in list(matrix.items()):
        if k in (axis, *best.also) or not isinstance(vals, list) or len(vals) < 2 or not used:
            continue
        seen = {repr(lab.get(k)) for lab in used}
        one = used[0].get(k)
        if len(seen) == 1 and one is not None and any(repr(v) == repr(one) or str(v) == str(one) for v in vals):
            matrix[k] = [next(v for v in vals if repr(v) == repr(one) or str(v) == str(one))]
            notes.append(f"{k} kept at {one}: the runs the verdict used had only {k}={one} (runs at its other "
                         f"levels are set apart as not comparable)")
    if matrix:
        data["matrix"] = matrix
    if include:
        data["include"] = include
    data["name"] = f"next-{hid}"
    data["repeats"] = best.repeats
    data["order"] = "cycles"
    data.pop("order_seed", None)
    rel = f"runs/next-{hid}.yaml"
    path = ctx.ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    batch = axis if axis and D.axis_kind(axis, levels) == "batch" else None
    points, checks, fixed = _checked(path, rel, data, [a for a in [axis, *best.also] if a and P.reads(data, a)], batch)
    notes += checks
    measured = _measured(ctx, lid, ev)
    cost = CO.estimate([CO.Planned(p.labels, P.flag_value(p.bench, P.PROMPT_FLAGS)) for p in points],
                       measured, axis) if points is not None else None
    if points is not None and cost is not None and "prompts" in fixed:
        notes.append(_design_note(points, measured, axis, batch, cost))
    head = [f"# optlog next: the experiment that would tell {hid} from {other} ({best.source}).",
            f"# {best.why.replace(D.quiet_how(best.rerun.get('when_quiet') or D.QUIET_WAIT_S), '(the Launch line below waits for one)')}",
            f"# {notes[0]}; {best.repeats} repeats, order: cycles (paired). Launch: optlog run launch runs/next-{hid}.yaml"
            + (f" --when-quiet {best.rerun.get('when_quiet')}" if best.source == "quiet" else "")]
    if cost is not None:
        head.append(f"# cost: {cost.text()}")
    head += [f"# note: {n}" for n in [*notes[1:], *best.sized]]
    for h, rows in best.predicted.items():
        head.append(f"# {h} predicts: " + "; ".join(f"{axis}={r['level']}: {r['outcome']}" for r in rows))
    # a file is read by no face: a parameter a note names reads as its name (the Launch line is the command)
    write_atomic(path, plain("\n".join(head)) + "\n" + dump(data))
    return rel, "; ".join(notes), (cost.as_dict() | {"text": cost.text()}) if cost is not None else None


def _design_note(points: list[P.PointView], measured: list[CO.Measured], axis: str | None, batch: str | None,
                 cost: CO.Cost) -> str:
    """Why one workload at every level, and what it costs against one that followed the axis (each
    point sending what fills its own batch, `ROUNDS` per slot): that one would make the levels' runs
    differ in their workload, and the verdict set them apart as not comparable."""
    own = CO.estimate([CO.Planned(p.labels, (max(x for x in (w.batch, w.slots, 1.0) if x is not None) * P.ROUNDS))
                       for p in points for w in [P.workload_of(p, batch)]], measured, axis)
    text = (f"one workload at every level, by design: runs that differ only in {axis or 'the axis'} compare as they "
            f"are (a request count that followed {axis or 'the axis'} would differ between the levels, and the "
            "verdict would set their runs apart as not comparable)")
    if cost.seconds is None or own.seconds is None or own.seconds <= 0:
        return text + "; its cost against that: unknown (no run measured to time it)"
    return (text + f"; it costs about {fmt_duration(cost.seconds)} against {fmt_duration(own.seconds)} for a request "
            f"count that followed {axis or 'the axis'} ({fmt_ratio(cost.seconds / own.seconds, 2)}x)")


def _views(path: Any, rel: str) -> list[P.PointView]:
    return [P.PointView(p.labels, list((p.rendered.get("server") or {}).get("argv") or []),
                        list(p.rendered["bench"]["argv"])) for p in plan(load_spec(path, rel), {})]


def _checked(path: Any, rel: str, data: dict[str, Any], axes: list[str],
             batch: str | None) -> tuple[list[P.PointView] | None, list[str], set[str]]:
    """Write the spec, plan it (templates rendered) and check that it does what it says: every axis
    reaches a command, every point's bench fills its batch. A workload that cannot is fixed in the
    bench command (said in the notes); what cannot be fixed is said. (points, notes, what was fixed:
    `prompts`, `concurrency`)."""
    notes: list[str] = []
    fixed: set[str] = set()
    write_atomic(path, dump(data))
    try:
        points = _views(path, rel)
    except BadInput as e:
        return None, [f"check it before launching: {e}"], fixed
    probs = P.workload_problems(points, batch)
    bench = data.get("bench") or {}
    cmd = bench.get("cmd")
    # the same workload at every point (the largest need), not one that follows the axis: the runs'
    # workload labels (a bench's num_prompts, concurrency) then stay equal, and the levels comparable
    for kind, flags in (("prompts", P.PROMPT_FLAGS), ("concurrency", P.CLIENT_CONCURRENCY_FLAGS)):
        mine = [x for x in probs if x.kind == kind]
        if not mine:
            continue
        val = str(math.ceil(max(x.need for x in mine)))
        new, old = P.rewrite_flag(cmd, flags, val)
        if old is None:
            notes.append(f"{mine[0].text()}: the bench command has no {flags[0]} to raise; check it before launching")
            continue
        cmd = new
        fixed.add(kind)
        what = f"{P.ROUNDS} requests per slot of the largest batch" if kind == "prompts" else "the largest batch"
        notes.append(f"the bench command changed: its {flags[0]} was {old}, now {val} at every point ({what}; "
                     f"{mine[0].text()})")
    if cmd is not bench.get("cmd"):
        data["bench"] = {**bench, "cmd": cmd}
        write_atomic(path, dump(data))
        try:
            points = _views(path, rel)
        except BadInput as e:
            return None, notes + [f"check it before launching: {e}"], fixed
    notes += [f"check it before launching: {x.text()}" for x in P.workload_problems(points, batch)]
    notes += [f"check it before launching: {x}" for x in P.axis_problems(data, axes, points)]
    return points, notes, fixed


def _commands(r: Any) -> tuple[list[str], list[str]]:
    """A run's rendered server and bench argv, as it recorded them."""
    cmds = (r.raw or {}).get("commands") or {}
    return ([str(a) for a in (cmds.get("server") or {}).get("argv") or []],
            [str(a) for a in (cmds.get("bench") or {}).get("argv") or []])


def _memory_needs(ctx: Index, ids: list[int]) -> dict[int, P.MemoryNeed]:
    """Each run's memory need (core.proposal.need_of): its model facts (labels win over the `model_*`
    metrics optlog read), the context a slot keeps (its commands), the GPUs one instance spans."""
    out: dict[int, P.MemoryNeed] = {}
    for r, labels, metrics in evidence.runs_with_labels(ctx, ids):
        facts, _ = MF.effective(labels, metrics)
        server, bench = _commands(r)
        span = [n for k, v in labels.items() if k.lower() in P.GPU_AXES and (n := P.gpus_of(v))]
        slots = next((float(v) for k, v in labels.items() if k.lower() in D.BATCH_AXES
                      and isinstance(v, (int, float)) and not isinstance(v, bool)), None)
        out[r.id] = P.need_of(facts, server, bench, slots, max(span) if span else 1)
    return out


def _measured(ctx: Index, lid: int, ev: Any) -> list[CO.Measured]:
    """The runs of launch `lid` already measured: labels, duration, the requests their bench sent."""
    return measured_of(evidence.runs_with_labels(ctx, [r for r, row in ev.runs.items() if row.launch == lid]))


def measured_of(rows: Any) -> list[CO.Measured]:
    """(run row, labels, metrics) rows as core.costing reads them: labels, duration (started to
    finished; a run without both is left out), the requests its bench sent (`--num-prompts`, …)."""
    out = []
    for r, labels, _ in rows:
        if not (r.started_at and r.finished_at):
            continue
        try:
            secs = (parse_iso(r.finished_at) - parse_iso(r.started_at)).total_seconds()
        except ValueError:
            continue
        out.append(CO.Measured(labels, secs, P.flag_value(_commands(r)[1], P.PROMPT_FLAGS)))
    return out
