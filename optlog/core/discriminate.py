"""`optlog next`: the experiment that would tell rival hypotheses apart (issue 36), pure.

A hypothesis and each of its rivals (or the parent it pivoted from) are a *pair*. For a pair this
module says

1. whether the evidence so far discriminates them: each prediction's outcome side by side, level by
   level where both judge the same comparison; decided when one is falsified and the other confirmed;
2. if not, **candidates**: untested levels or axes where their predictions differ by more than the
   noise measured so far, from three sources, in this order of trust:
   - *claims*: predictions on the same comparison whose claimed regions are apart (`region_of`):
     a level neither has judged yet, or a judged level that stayed unclear for noise, with the
     repeats that noise needs;
   - *scaling*: scaling claims (`k(LABEL)`, `slope(LABEL)`) on the same label and metric with
     regions apart: the range of LABEL over which the fitted lines part by more than the noise;
   - *roofline*: hypotheses that name a bound (memory, compute, latency, communication) predict how
     a throughput moves along an axis their selectors vary: a batch-like axis (concurrency, slots)
     multiplies the work per weight read, so a memory- or latency-bound point speeds up with it and a
     compute-bound one does not; a tensor-parallel split divides each GPU's GEMMs, so a compute-bound
     point follows the split and a communication-bound one moves the other way. Where work counts
     are known (core.diagnosis.estimate_work), the batch at which the arithmetic intensity reaches
     the ridge point caps the levels (beyond it both rivals predict the compute roof);
3. what is missing when nothing can discriminate them (a label never varied, a metric never
   measured, work counts unknown).

The service (service.nextexp) loads the hypotheses, judges their predictions on the evidence and
writes the best candidate as a run spec derived from the launch that produced the evidence.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from statistics import stdev
from typing import Any

from optlog.core import bounds as B
from optlog.core import comparable as C
from optlog.core import expr as E
from optlog.core import labels as L
from optlog.core import proposal as P
from optlog.core.diagnosis import estimate_work
from optlog.core.numfmt import fmt_verdict
from optlog.core.units import higher_is_better
from optlog.core.family import ancestors, pairs, refines, relations  # noqa: F401  (this module's family reading)
from optlog.core.statuses import told_apart
from optlog.errors import param
from optlog.core.verdict import RunRow, comparison_key, hypothesis_status, invert, quiet_text, region_of

# ---------------------------------------------------------------- vocabularies (one place)

# What a hypothesis names as its bound, read from its id, title and statement (first match wins), and
# what each bound predicts along an axis: one table (core.bounds) the diagnosis reads too.
BOUND_WORDS = B.BOUND_WORDS
# Labels that set how many tokens one forward pass processes (the work per weight read).
BATCH_AXES = frozenset({"concurrency", "max_concurrency", "parallel", "slots", "n_parallel", "batch", "batch_size",
                        "max_num_seqs", "max_batch_size", "bs"})
SPLIT_RE = re.compile(r"^tp(\d+)(?:[-_]?pp(\d+))?$", re.I)
SPLIT_AXES = frozenset({"tp", "tp_size", "tensor_parallel", "tensor_parallel_size"})
# Exponent of a throughput along an axis for each bound: throughput ∝ axis^k (a time is ∝ axis^-k).
# batch: tokens per pass; split: GPUs one layer's GEMMs are divided over (per-GPU GEMM size ∝ 1/tp).
EXPONENT: dict[str, dict[str, float]] = B.EXPONENT
WHY = B.WHY
T95 = 2.0  # ~ the two-sided 95 % t quantile for a handful of repeats
MAX_REPEATS = 30


def named_bound(hid: str, title: str, statement: str) -> str | None:
    """The bound a hypothesis names (core.bounds: memory, compute, pipe, latency, host, communication), or None."""
    text = f"{hid} {title}".lower()
    for words_in in (text, f"{text} {statement}".lower()):
        for bound, words in BOUND_WORDS:
            if any(w in words_in for w in words):
                return bound
    return None


# ---------------------------------------------------------------- inputs


@dataclass
class Hyp:
    """One hypothesis as this module reads it: its predictions and their results (core.verdict)."""

    id: str
    title: str = ""
    statement: str = ""
    status: str = "open"
    parent: str | None = None
    rivals: list[str] = field(default_factory=list)
    preds: list[Any] = field(default_factory=list)  # core.hypothesis.Prediction
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # prediction id -> verdict result

    @property
    def bound(self) -> str | None:
        return named_bound(self.id, self.title, self.statement)

    def judged_status(self) -> str:
        return hypothesis_status([r["status"] for r in self.results.values()], False) if self.results else self.status


# ---------------------------------------------------------------- side by side


def _level_text(level: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in level.items()) or "all"


def _same_comparison(p: Any, q: Any) -> bool:
    kp, kq = comparison_key(p), comparison_key(q)
    return kp[:3] == kq[:3] or (kp[0], kp[2], kp[1]) == kq[:3]


def side_by_side(h: Hyp, o: Hyp) -> list[dict[str, Any]]:
    """Each prediction's outcome per level, the two hypotheses' predictions on one comparison in one row."""
    rows: list[dict[str, Any]] = []
    used: set[str] = set()
    for p in h.preds:
        rp = h.results.get(p.id, {})
        partners = [q for q in o.preds if _same_comparison(p, q)]
        levels: dict[str, dict[str, str]] = {}
        for lv in rp.get("levels", []):
            levels.setdefault(_level_text(lv["level"]), {})[h.id] = lv["outcome"]
        for q in partners:
            used.add(q.id)
            for lv in o.results.get(q.id, {}).get("levels", []):
                levels.setdefault(_level_text(lv["level"]), {})[o.id] = lv["outcome"]
        rows.append({"comparison": _comparison_text(p), h.id: {"prediction": p.id, "expect": p.expect,
                                                                "status": rp.get("status", "untested")},
                     **({o.id: [{"prediction": q.id, "expect": q.expect,
                                 "status": o.results.get(q.id, {}).get("status", "untested")} for q in partners]}
                        if partners else {}),
                     "levels": [{"level": k, **v} for k, v in sorted(levels.items())]})
    for q in o.preds:
        if q.id not in used:
            rq = o.results.get(q.id, {})
            rows.append({"comparison": _comparison_text(q), o.id: [{"prediction": q.id, "expect": q.expect,
                                                                    "status": rq.get("status", "untested")}],
                         "levels": [{"level": _level_text(lv["level"]), o.id: lv["outcome"]}
                                    for lv in rq.get("levels", [])]})
    return rows


def _comparison_text(p: Any) -> str:
    sel = lambda d: ",".join(f"{k}={v}" for k, v in d.items())  # noqa: E731
    txt = f"{p.metric or '?'}: {sel(p.a)}" + (f" vs {sel(p.b)}" if p.b else "")
    return txt + (f" per {p.per}" if p.per else "") + (f" where {p.where}" if p.where else "")


def decision(h: Hyp, o: Hyp) -> tuple[str, str]:
    """(state, why): discriminated | partly | neither (both falsified) | not yet."""
    sh, so = h.judged_status(), o.judged_status()
    if {sh, so} == {"falsified", "confirmed"}:
        win = h if sh == "confirmed" else o
        return "discriminated", f"{win.id} confirmed, {(o if win is h else h).id} falsified"
    if sh == so == "falsified":
        return "neither", f"both falsified: neither story survives ({h.id}, {o.id}); pivot to a new one"
    if "falsified" in (sh, so):
        alive, dead = (h, o) if so == "falsified" else (o, h)
        return "partly", (f"{dead.id} falsified, but {alive.id} is {alive.judged_status()}: "
                          "the evidence rules one story out without confirming the other")
    return "not yet", f"{h.id} is {sh}, {o.id} is {so}: the evidence so far does not tell them apart"


# ---------------------------------------------------------------- noise


def _log_sd(values: list[float]) -> float | None:
    vs = [math.log(v) for v in values if v > 0]
    return stdev(vs) if len(vs) >= 2 else None


def noise_of(results: list[dict[str, Any]]) -> tuple[float | None, int]:
    """The relative noise (sd of log values of one group at one level, pooled by max) measured so far
    in these results, and the most repeats any side had. None: no level had 2+ runs a side."""
    sds: list[float] = []
    reps = 0
    for res in results:
        for lv in res.get("levels", []):
            if isinstance(lv.get("fit"), dict) or lv.get("design") == "fit":
                # a fit's values span the fitted label: their spread is the trend, not noise (a first
                # look of one run at parallel 1 and one at 2 read as sd 0.38 and asked 75 runs); its
                # noise is the scatter about the line, known from 3 runs on
                sd = _fit_sd(lv.get("fit"))
                if sd is not None:
                    sds.append(sd)
                continue
            for vals in (lv.get("values") or {}).values():
                reps = max(reps, len(vals))
                sd = _log_sd(list(vals))
                if sd is not None:
                    sds.append(sd)
    return (max(sds) if sds else None), reps


def _fit_sd(fit: Any) -> float | None:
    """The scatter of a fit's points about its line, as an sd of log values (n - 2 degrees of
    freedom); None below 3 points or for points it cannot read."""
    if not isinstance(fit, dict):
        return None
    pts = fit.get("points") or []
    try:
        k, b = float(fit["k"]), float(fit["intercept"])
        log = fit.get("axes", "log-log") == "log-log"
        res = []
        for x, y in pts:
            x, y = float(x), float(y)
            line = math.exp(b + k * math.log(x)) if log else b + k * x
            if x <= 0 or y <= 0 or line <= 0:
                return None
            res.append(math.log(y / line))
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    if len(res) < 3:
        return None
    return math.sqrt(sum(r * r for r in res) / (len(res) - 2))


def repeats_for(gap_log: float, sd: float | None) -> int:
    """Repeats a side so that a 95 % interval of a log ratio (two groups of n) is narrower than the gap
    between the rivals' predictions: T95·sd·√(2/n) < gap/2. Unknown noise: 5 (enough for an interval)."""
    if sd is None or sd <= 0:
        return 5
    if gap_log <= 0:
        return MAX_REPEATS
    n = math.ceil(2 * (2 * T95 * sd / gap_log) ** 2)
    return max(3, min(MAX_REPEATS, n))


def _region_gap(r1: E.Region, r2: E.Region) -> float:
    """How far apart two regions of a positive ratio are, in log units (0 when they overlap)."""
    if E.regions_overlap(r1, r2):
        return 0.0
    lo, hi = (r1.hi, r2.lo) if r1.hi <= r2.lo else (r2.hi, r1.lo)
    if lo <= 0 or hi <= 0 or math.isinf(lo) or math.isinf(hi):
        return math.log(2)  # an open or non-positive edge: take a factor of 2 as the smallest gap
    return math.log(hi / lo) or 0.05  # touching edges: a 5 % gap


# ---------------------------------------------------------------- candidates


@dataclass
class Candidate:
    """One experiment that would discriminate: vary `axis` over `levels` (with `reference` levels the
    prediction compares against), `repeats` a point, and what each hypothesis predicts there."""

    source: str  # claims | scaling | roofline | repeats
    axis: str | None
    levels: list[Any]
    reference: list[Any]
    repeats: int
    predicted: dict[str, list[dict[str, Any]]]  # hypothesis -> [{level, outcome}]
    separation: float  # predicted gap over the noise (larger discriminates better)
    why: str
    metric: str | None = None
    runs: list[int] = field(default_factory=list)  # the runs whose launch the spec derives from
    fixed: dict[str, Any] = field(default_factory=dict)  # labels the new points keep (the other selectors)
    also: dict[str, list[Any]] = field(default_factory=dict)  # other axes the new points must move with it
    # source `quiet`: the runs measured under load that decide the outcome, their cells (the labels
    # their predictions vary), and the launches they came from: re-run those first, on a quiet machine
    rerun: dict[str, Any] = field(default_factory=dict)
    # what sizing `levels` to the machine capped or left out (core.proposal: CPUs, memory), as said in
    # the pair's notes: the written spec's header says it beside the levels it explains
    sized: list[str] = field(default_factory=list)


    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "axis": self.axis, "levels": self.levels, "reference": self.reference,
                "repeats": self.repeats, "metric": self.metric, "predicted": self.predicted,
                "separation": round(self.separation, 2), "why": self.why,
                **({"also": self.also} if self.also else {}), **({"rerun": self.rerun} if self.rerun else {})}


def _numbers(vals: list[Any]) -> list[float] | None:
    nums = [L.as_number(v) for v in vals]
    return [float(n) for n in nums if n is not None] if all(n is not None for n in nums) else None


def _extend(tested: list[float], count: int = 2) -> list[float]:
    """New levels past the tested ones: doubling the largest (what a sweep would try next)."""
    top = max(tested)
    out = []
    for i in range(1, count + 1):
        v = top * 2 ** i
        out.append(int(v) if float(v).is_integer() else v)
    return out


def _tested_levels(results: list[dict[str, Any]], label: str) -> list[Any]:
    seen: list[Any] = []
    for res in results:
        for lv in res.get("levels", []):
            v = lv["level"].get(label)
            if v is not None and v not in seen:
                seen.append(v)
    return seen


def _runs_of(results: list[dict[str, Any]]) -> list[int]:
    return sorted({rid for res in results for rid in res.get("runs", [])})


def fit_batch(axis: str, levels: list[Any], measured: list[float], res: P.Resources,
              memory: dict[int, P.MemoryNeed] | None, run_ids: list[int]) -> tuple[list[Any], str | None]:
    """A batch axis's new levels that fit the target's memory (core.proposal.fit_memory), from the
    memory need of the runs the candidate derives from; other axes, or no memory needs given: as they are."""
    if memory is None or axis_kind(axis, levels) != "batch" or not levels:
        return list(levels), None
    return P.fit_memory(axis, levels, measured, res, P.combine([memory[r] for r in run_ids if r in memory]))


def claim_candidates(h: Hyp, o: Hyp, noise: float | None, res: P.Resources = P.Resources(),
                     memory: dict[int, P.MemoryNeed] | None = None) -> tuple[list[Candidate], list[str]]:
    """Predictions on one comparison whose claimed regions are apart: a level one side has not judged
    (or that stayed unclear for noise), with the repeats the noise needs."""
    out: list[Candidate] = []
    notes: list[str] = []
    for p in h.preds:
        rp = region_of(p, {})
        if rp is None:
            continue
        for q in o.preds:
            if not _same_comparison(p, q):
                continue
            rq = region_of(q, {})
            if rq is None or rq[0] != rp[0]:
                continue
            if rq[0] == "a/b" and comparison_key(p)[1:3] != comparison_key(q)[1:3]:
                rq = (rq[0], invert(rq[1]))  # the same ratio the other way round
            if E.regions_overlap(rp[1], rq[1]):
                notes.append(f"{p.id} ({rp[0]} {rp[1].text()}) and {q.id} ({rq[0]} {rq[1].text()}) claim "
                             "overlapping outcomes: no level of this comparison can tell them apart")
                continue
            if rp[0] != "a/b":
                continue  # scaling claims: scaling_candidates
            gap = _region_gap(rp[1], rq[1])
            res_p, res_q = h.results.get(p.id, {}), o.results.get(q.id, {})
            out_p = {_level_text(lv["level"]): lv["outcome"] for lv in res_p.get("levels", [])}
            out_q = {_level_text(lv["level"]): lv["outcome"] for lv in res_q.get("levels", [])}
            both = [k for k in out_p if k in out_q]
            split = [k for k in both if {out_p[k], out_q[k]} == {"holds", "fails"}]
            if split:
                continue  # judged apart already at these levels
            reps = repeats_for(gap, noise)
            unclear = [k for k in both if "unclear" in (out_p[k], out_q[k])]
            per = p.per
            if unclear:
                levels = [next(iter(lv["level"].values())) for lv in res_p.get("levels", [])
                          if _level_text(lv["level"]) in unclear and lv["level"]]
                out.append(Candidate(
                    "repeats", per, levels or [], [], reps,
                    {h.id: [{"level": k, "outcome": f"{rp[0]} {rp[1].text()}"} for k in unclear],
                     o.id: [{"level": k, "outcome": f"{rq[0]} {rq[1].text()}"} for k in unclear]},
                    gap / (noise or gap), f"at {', '.join(unclear)} the claims are apart (gap {fmt_verdict(gap)} in log "
                    f"ratio) but the measured noise (sd {_fmt(noise)}) left them unclear: {reps} repeats a side, "
                    "interleaved", p.metric, _runs_of([res_p, res_q]), _fixed(p)))
            tested = _tested_levels([res_p, res_q], per) if per else []
            nums = _numbers(tested) if tested else None
            if per and nums and len(both) == 0:
                lv, cut = P.fit_levels(per, _extend(nums, 1), res)
                lv, cut2 = fit_batch(per, lv, nums, res, memory, _runs_of([res_p, res_q]))
                sized = [c for c in (cut, cut2) if c]
                notes += sized
                if not lv:
                    continue
                out.append(Candidate(
                    "claims", per, lv, [], reps,
                    {h.id: [{"level": x, "outcome": f"{rp[0]} {rp[1].text()}"} for x in lv],
                     o.id: [{"level": x, "outcome": f"{rq[0]} {rq[1].text()}"} for x in lv]},
                    gap / (noise or gap), f"{p.id} and {q.id} have never been judged at one level together",
                    p.metric, _runs_of([res_p, res_q]), _fixed(p), sized=sized))
    return out, notes


def _fixed(p: Any) -> dict[str, Any]:
    return {k: v for k, v in p.a.items() if k in p.b and L.canonical(p.b[k]) == L.canonical(v)}


def _fmt(x: float | None) -> str:
    return "unknown" if x is None else fmt_verdict(x)


def scaling_candidates(h: Hyp, o: Hyp, runs: dict[int, RunRow], noise: float | None,
                       res: P.Resources = P.Resources(),
                       memory: dict[int, P.MemoryNeed] | None = None) -> tuple[list[Candidate], list[str]]:
    """Scaling claims on one label and metric whose exponent (slope) regions are apart: the range of
    the label over which their lines part by more than the noise, within what the machine has
    (core.proposal.fit_levels: no more threads than CPUs); (candidates, notes)."""
    out: list[Candidate] = []
    notes: list[str] = []
    for p in h.preds:
        rp = region_of(p, {})
        if rp is None or not rp[0].startswith(("k(", "slope(")):
            continue
        for q in o.preds:
            rq = region_of(q, {})
            if rq is None or rq[0] != rp[0] or E.regions_overlap(rp[1], rq[1]):
                continue
            label = rp[0].split("(", 1)[1].split(")", 1)[0]
            res_p, res_q = h.results.get(p.id, {}), o.results.get(q.id, {})
            pts = [L.as_number(runs[r].labels.get(label)) for r in _runs_of([res_p, res_q]) if r in runs]
            xs = sorted({float(x) for x in pts if x is not None and x > 0})
            if not xs:
                continue
            lo_k = min(rp[1].hi, rq[1].hi)  # the edges that face each other
            hi_k = max(rp[1].lo, rq[1].lo)
            dk = abs(hi_k - lo_k) if math.isfinite(hi_k - lo_k) else 0.5
            dk = dk or 0.05
            span_now = xs[-1] / xs[0] if xs[0] > 0 else 1.0
            need = 2 * T95 * (noise or 0.1)  # log separation the lines must reach
            span_need = math.exp(need / dk)
            levels: list[Any] = []
            top = xs[-1]
            while span_now * (top / xs[-1]) < span_need and len(levels) < 4:
                top *= 2
                levels.append(int(top) if top.is_integer() else top)
            if not levels:
                levels = _extend(xs, 1)
            levels, cut = P.fit_levels(label, levels, res)
            if cut:
                notes.append(cut + ("" if levels else f": no {label} past the {fmt_verdict(xs[-1])} measured"))
            levels, cut2 = fit_batch(label, levels, xs, res, memory, _runs_of([res_p, res_q]))
            if cut2:
                notes.append(cut2)
            if not levels:
                continue
            sized = [c for c in (cut, cut2) if c]
            ref = xs[0]
            pred = {}
            for hid, (_, reg) in ((h.id, rp), (o.id, rq)):
                pred[hid] = [{"level": x, "outcome": _scaled_text(reg, x / ref, rp[0].startswith("k("))} for x in levels]
            sep = dk * math.log(max(levels[-1], xs[-1]) / ref) / (noise or 0.1)
            out.append(Candidate("scaling", label, levels, [int(ref) if ref.is_integer() else ref], 3 if noise is None
                                 else max(3, repeats_for(dk * math.log(2), noise) // 2),
                                 pred, sep, f"{p.id} claims {rp[0]} {rp[1].text()}, {q.id} {rq[1].text()}: over "
                                 f"{label} {fmt_verdict(xs[0])}–{fmt_verdict(levels[-1])} their lines part by "
                                 f"{fmt_verdict(math.exp(dk * math.log(levels[-1] / ref)))}x, against a noise of "
                                 f"{_fmt(noise)} (sd of log)", p.metric, _runs_of([res_p, res_q]), dict(p.a),
                                 sized=sized))
    return out, notes


def _scaled_text(reg: E.Region, span: float, log: bool) -> str:
    if not log:
        return f"slope {reg.text()}"
    lo = span ** reg.lo if math.isfinite(reg.lo) else 0.0
    hi = span ** reg.hi if math.isfinite(reg.hi) else math.inf
    a, b = min(lo, hi), max(lo, hi)
    return f"{fmt_verdict(a)}x–{'∞' if math.isinf(b) else fmt_verdict(b)}x of the reference level"


# ---------------------------------------------------------------- roofline


def axis_kind(label: str, values: list[Any]) -> str | None:
    """batch | split | None: what varying `label` does to the work of one forward pass."""
    k = label.lower()
    if k in BATCH_AXES:
        return "batch"
    if k in SPLIT_AXES or (values and all(isinstance(v, str) and SPLIT_RE.match(v) for v in values)):
        return "split"
    return None


def split_of(v: Any) -> tuple[int, int] | None:
    """(tp, pp) of a split level: `tp4pp2` → (4, 2); a number → (n, 1)."""
    if isinstance(v, str):
        m = SPLIT_RE.match(v)
        if m:
            return int(m.group(1)), int(m.group(2) or 1)
    n = L.as_number(v)
    return (int(n), 1) if n and n > 0 else None


def _split_text(tp: int, pp: int) -> str:
    return f"tp{tp}" + (f"pp{pp}" if pp > 1 else "")


def ridge_batch(runs: list[RunRow], ceilings: dict[str, float], axis: str) -> tuple[float | None, str]:
    """The batch at which a run's arithmetic intensity reaches the ridge point (peak / bandwidth),
    from the work counts of the runs at the largest batch tested; None with a reason when unknown."""
    peak = ceilings.get("peak_tflops") or next((v for k, v in ceilings.items() if k.startswith("peak_tflops")), None)
    bw = ceilings.get("mem_bw_gbps")
    if not peak or not bw:
        return None, "no peak_tflops or mem_bw_gbps in optlog.yaml"
    best: tuple[float, float] | None = None
    for r in runs:
        x = L.as_number(r.labels.get(axis))
        est = estimate_work(r.labels, r.metrics)
        if x is None or est is None or est.bytes <= 0:
            continue
        if best is None or x > best[0]:
            best = (float(x), est.flops / est.bytes)
    if best is None:
        return None, "work counts unknown (no active_params model fact on the runs)"
    ridge = peak * 1e12 / (bw * 1e9)
    return best[0] * ridge / best[1], f"arithmetic intensity {fmt_verdict(best[1])} FLOP/B at {axis}={fmt_verdict(best[0])}, " \
        f"ridge {fmt_verdict(ridge)} FLOP/B"


def roofline_candidates(h: Hyp, o: Hyp, runs: dict[int, RunRow], ceilings: dict[str, float],
                        noise: float | None, machine: P.Resources = P.Resources(),
                        memory: dict[int, P.MemoryNeed] | None = None) -> tuple[list[Candidate], list[str]]:
    """Where the two hypotheses name different bounds, the axes their selectors vary on which the
    roofline predicts different exponents, and the new levels along them."""
    bh, bo = h.bound, o.bound
    notes: list[str] = []
    if not bh or not bo:
        missing = [x.id for x, b in ((h, bh), (o, bo)) if not b]
        notes.append(f"{', '.join(missing)} name{'s' if len(missing) == 1 else ''} no bound (memory, compute, "
                     "latency, communication): the roofline cannot predict for it")
        return [], notes
    if bh == bo:
        notes.append(f"both name the same bound ({bh}): the roofline predicts the same for both")
        return [], notes
    out: list[Candidate] = []
    axes_seen: set[str] = set()
    for p in h.preds + o.preds:
        res = (h.results.get(p.id) or o.results.get(p.id) or {})
        ids = [r for r in res.get("runs", []) if r in runs]
        varied = [k for k in p.a if k in p.b and L.canonical(p.a[k]) != L.canonical(p.b[k])]
        labels = varied + ([p.per] if p.per else [])
        for axis in labels:
            if axis in axes_seen:
                continue
            vals = [p.a[axis], p.b[axis]] if axis in varied else _tested_levels([res], axis)
            kind = axis_kind(axis, vals)
            if kind is None or not vals:
                continue
            axes_seen.add(axis)
            kh, ko = EXPONENT[kind][bh], EXPONENT[kind][bo]
            if kh == ko:
                notes.append(f"{axis}: {bh} and {bo} predict the same ({WHY[(kind, bh)]})")
                continue
            sign = 1.0 if higher_is_better(p.metric) else -1.0
            ref = p.b[axis] if axis in varied else vals[0]
            if kind == "batch" and axis not in varied and _numbers(vals):
                ref = max(vals, key=lambda v: float(L.as_number(v) or 0))  # the largest batch measured
            if kind == "batch":
                nums = _numbers(vals)
                if not nums:
                    continue
                levels: list[Any] = _extend(nums, 2)
                cap, how = ridge_batch([runs[i] for i in ids], ceilings, axis)
                note = f"; {how}"
                if cap is not None:
                    kept = [x for x in levels if x <= cap]
                    note += f": past {axis}={fmt_verdict(cap)} both predict the compute roof"
                    if not kept and cap > max(nums) * 1.2:  # room below the ridge, short of a doubling
                        kept = [int(cap)]
                    if not kept:
                        notes.append(f"{axis}: the largest {axis} measured ({fmt_verdict(max(nums))}) is at or past "
                                     f"the ridge ({fmt_verdict(cap)}; {how}): {bh} and {bo} both predict the "
                                     "compute roof there")
                        continue
                    levels = kept
                levels, cut = fit_batch(axis, levels, nums, machine, memory, ids)
                if cut:
                    notes.append(cut)
                sized = [cut] if cut else []
                if not levels:
                    continue
                span = lambda x: float(x) / float(L.as_number(ref) or 1.0)  # noqa: E731
                also = _other_batch(axis, [runs[i] for i in ids], levels)
                if also:
                    note += "; " + ", ".join(raised_text(k, v) for k, v in also.items())
            else:
                splits = [split_of(v) for v in vals]
                if any(s is None for s in splits):
                    continue
                tp_min = min(s[0] for s in splits if s)
                gpus = max(s[0] * s[1] for s in splits if s)
                levels = []
                tp = tp_min // 2
                while tp >= 1 and len(levels) < 2:
                    levels.append(_split_text(tp, max(1, gpus // tp)) if isinstance(vals[0], str) else tp)
                    tp //= 2
                levels, cut = P.fit_levels(axis, levels, machine)
                if cut:
                    notes.append(cut)
                sized = [cut] if cut else []
                if not levels:
                    continue
                r = split_of(ref)
                assert r is not None
                span = lambda x: (split_of(x) or (1, 1))[0] / r[0]  # noqa: E731
                note = f"; per-GPU GEMM size ∝ 1/tp ({gpus} GPUs)"
                also = {}
            pred = {}
            for hyp, k in ((h, kh), (o, ko)):
                pred[hyp.id] = [{"level": x, "outcome": _roof_text(p.metric, span(x), sign * k, axis, ref)}
                                for x in levels]
            # a negative exponent claims a direction, not a size: the gap is to "no change"
            gap = abs(max(kh, 0.0) - max(ko, 0.0)) * abs(math.log(span(levels[-1]))) if levels else 0.0
            sep = gap / (noise or 0.1)
            out.append(Candidate(
                "roofline", axis, levels, [ref], repeats_for(gap, noise), pred, sep,
                f"{h.id} names a {bh} bound ({WHY[(kind, bh)]}); {o.id} a {bo} bound ({WHY[(kind, bo)]}){note}",
                p.metric, ids, {k: v for k, v in p.a.items() if k != axis and k in p.b
                                and L.canonical(p.b[k]) == L.canonical(v)}, also, sized=sized))
    if not out and not notes:
        notes.append(f"no label their selectors vary is an axis the roofline reads (a batch such as concurrency or "
                     f"slots, a tensor-parallel split): vary one to tell {bh} from {bo}")
    return out, notes


def raised_text(k: str, vals: list[Any]) -> str:
    """How a candidate says it raises another batch-like axis with its own (`also`)."""
    return f"{k} raised to {vals[0]} so that it does not cap the batch"


def _other_batch(axis: str, runs: list[RunRow], levels: list[Any]) -> dict[str, list[Any]]:
    """Other batch-like labels of the runs (slots beside concurrency) that would cap the new batch:
    each raised to the largest new level, or the new points measure the old batch."""
    top = max(float(L.as_number(x) or 0) for x in levels)
    out: dict[str, list[Any]] = {}
    for k in sorted({k for r in runs for k in r.labels if k in BATCH_AXES and k != axis}):
        vals = [L.as_number(r.labels.get(k)) for r in runs]
        nums = [v for v in vals if v is not None]
        if nums and max(nums) < top:
            out[k] = [int(top) if top.is_integer() else top]
    return out


def _roof_text(metric: str | None, span: float, k: float, axis: str, ref: Any) -> str:
    """What a bound predicts at a level, relative to the reference level: a size for a positive or zero
    exponent, a direction for a negative one (communication: a smaller allreduce group is faster)."""
    if k < 0:
        return f"{metric} {'>' if span < 1 else '<'} 1x of {axis}={ref}"
    return f"{metric} ≈ {fmt_verdict(span ** k)}x of {axis}={ref}"


def missing(h: Hyp, o: Hyp, runs: dict[int, RunRow]) -> list[str]:
    """What optlog lacks to discriminate the pair: labels never varied, metrics never measured."""
    out: list[str] = []
    metrics = {m for r in runs.values() for m in r.metrics}
    for p in h.preds + o.preds:
        if p.metric and p.metric not in metrics:
            out.append(f"metric {p.metric} never measured ({p.id})")
    for p in h.preds + o.preds:
        res = h.results.get(p.id) or o.results.get(p.id) or {}
        if p.per and len(_tested_levels([res], p.per)) < 2:
            out.append(f"label {p.per} never varied ({p.id} splits by it)")
    return sorted(set(out))


QUIET_WAIT_S = 600  # the --when-quiet a re-run of loaded cells is proposed with


def cells_of(run_ids: list[int], all_ids: list[int], runs: dict[int, RunRow]) -> list[dict[str, Any]]:
    """The cells `run_ids` were measured in: their values of the labels that vary among `all_ids`
    (a prediction's runs: its groups, its levels, a fit's label), repeats and flags aside."""
    rows = [runs[i] for i in all_ids if i in runs]
    skip = C.ignored_keys() | C.flag_keys() | {L.CONCURRENT}
    keys = sorted(k for k in {k for r in rows for k in r.canon} - skip
                  if len({r.canon.get(k) for r in rows}) > 1)
    cells: list[dict[str, Any]] = []
    for i in run_ids:
        if i not in runs:
            continue
        c = {k: runs[i].labels.get(k) for k in keys if k in runs[i].labels}
        if c not in cells:
            cells.append(c)
    return sorted(cells, key=lambda c: [L.sort_key(c.get(k)) for k in keys])


def cell_text(cells: list[dict[str, Any]]) -> str:
    return "; ".join(", ".join(f"{k}={v}" for k, v in c.items()) or "every point" for c in cells)


def quiet_how(wait_s: float = QUIET_WAIT_S) -> str:
    """How a quiet candidate's text says to wait for a quiet machine: the launch verb's parameter,
    which each face spells (a written spec's header says its own Launch line instead)."""
    return f"(run launch with {param('when_quiet', str(wait_s))})"


def quiet_candidates(h: Hyp, o: Hyp, runs: dict[int, RunRow]) -> list[Candidate]:
    """Re-run the loaded cells first (issue 45) where runs measured under load decide an outcome: a
    prediction of the pair whose quiet runs alone (core.verdict's `quiet`) judge it differently, or
    are too few to judge it. One candidate for the pair, over every such prediction."""
    why: list[str] = []
    loaded: set[int] = set()
    cells: list[dict[str, Any]] = []
    repeats = 0
    for hyp in (h, o):
        for p in hyp.preds:
            res = hyp.results.get(p.id) or {}
            q = res.get("quiet")
            if not res.get("loaded_runs") or not q or not (q.get("thin") or q.get("differs")):
                continue
            ids = list(res["loaded_runs"])
            loaded.update(ids)
            for c in cells_of(ids, list(res.get("runs") or []), runs):
                if c not in cells:
                    cells.append(c)
            per_cell = [sum(1 for i in ids if i in runs and all(runs[i].labels.get(k) == v for k, v in c.items()))
                        for c in cells_of(ids, list(res.get("runs") or []), runs)]
            repeats = max(repeats, *per_cell, 3)
            why.append(f"{p.id} is {res.get('status')} with {len(ids)} of its {len(res.get('runs') or [])} runs "
                       f"measured under load; {quiet_text(q)}")
    if not loaded:
        return []
    launches = sorted({n for i in loaded if i in runs and (n := runs[i].launch) is not None})
    text = "; ".join(why) + f": re-run the loaded cells ({cell_text(cells)}) on a quiet machine first {quiet_how()}"
    return [Candidate("quiet", None, [], [], min(repeats, MAX_REPEATS), {}, 0.0, text,
                      runs=sorted(loaded),
                      rerun={"runs": sorted(loaded), "cells": cells, "launches": [f"L{n}" for n in launches],
                             "when_quiet": QUIET_WAIT_S})]


def analyse(hyps: dict[str, Hyp], runs: dict[int, RunRow], ceilings: dict[str, float],
            only: str | None = None, resources: P.Resources = P.Resources(),
            memory: dict[int, P.MemoryNeed] | None = None) -> list[dict[str, Any]]:
    """Every pair: side by side, the decision, the candidates (best first) or what is missing. No
    candidate asks for more than `resources` (the target's CPUs and GPUs) nor, with `memory` (each run's
    memory need), a batch its memory cannot hold."""
    out: list[dict[str, Any]] = []
    for h, o, rel in pairs(hyps, only):
        state, why = decision(h, o)
        entry: dict[str, Any] = {"hypothesis": h.id, "other": o.id, "relation": rel,
                                 "statuses": {h.id: h.judged_status(), o.id: o.judged_status()},
                                 "bounds": {h.id: h.bound, o.id: o.bound},
                                 "state": state, "why": why, "side_by_side": side_by_side(h, o)}
        cands: list[Candidate] = []
        notes: list[str] = []
        if state in ("not yet", "partly"):
            noise = None
            try:
                noise, _ = noise_of([*h.results.values(), *o.results.values()])
                c1, n1 = claim_candidates(h, o, noise, resources, memory)
                c2, n2 = scaling_candidates(h, o, runs, noise, resources, memory)
                c3, n3 = roofline_candidates(h, o, runs, ceilings, noise, resources, memory)
                cands = c1 + c2 + c3
                notes = n1 + n2 + n3
            except (ArithmeticError, ValueError) as e:  # one pair's numbers never stop the others (issue 42)
                notes = [f"no candidate computed: the runs' values are beyond what a double can compute with "
                         f"({type(e).__name__}: {e})"]
            entry["noise"] = None if noise is None or not math.isfinite(noise) else round(noise, 4)
            cands.sort(key=lambda c: -c.separation)
            if not cands and not quiet_candidates(h, o, runs):
                entry["missing"] = missing(h, o, runs) + notes
                entry["why"] += "; nothing optlog knows can discriminate them"
        # runs measured under load that decide an outcome (even a decided one): re-run them first
        cands = quiet_candidates(h, o, runs) + cands
        entry["candidates"] = cands
        entry["notes"] = notes
        out.append(entry)
    return out
