"""The verdict engine (DESIGN §5): groups, comparability, per-level outcomes, statuses, explanations.

Pure: takes predictions and run data (labels + metrics), returns plain dictionaries. The service
layer loads runs from the database and writes results into the hypothesis files.

Groups. A run belongs to group a when it has every `--a` label (typed: 256 == "256") and matches
`--where`; likewise b. `--per LABEL` splits the groups into levels; a level present in one group only
is skipped (and said). Without `--per` there is one level.

Comparability. Inside a level, the labels outside the selectors and `--per` must agree. Workload
labels (dataset, input/output lengths, prompt count, request rate), the model and software versions
must agree across both groups; other labels (configuration details such as `tp`, `pp`) must agree
within each group — they may differ between the groups, since that is what is being compared.
`repeat` and `seed` are ignored. The reference value of a label is the one most runs share (preferring
one both groups have); runs that differ are listed as not comparable, never pooled. A level left with
only incomparable evidence on a side is `unclear` with that reason.

Statistics per level and comparison (see optlog.core.stats): ≥ 5 repeats a side, Mann–Whitney U with
Holm across levels (ranges: bootstrap CI of the ratio); 3–4, Welch's t on logs with a minimum effect
of the margin; fewer, the margin rules. A group against a constant uses a one-sample t-test on logs
(Holm across levels from 5 repeats): with 5 values a Wilcoxon test can never reach p < 0.05.
Compound expressions combine per-comparison outcomes with three-valued logic.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from optlog.core import comparable as C
from optlog.core import estimators as ES
from optlog.core import expr as E
from optlog.core import labels as L
from optlog.core import loadshare as LS
from optlog.core import metrics as M
from optlog.core import units as U
from optlog.core.posthoc import ranges
from optlog.core.numfmt import (fmt_amount, fmt_interval, fmt_share, fmt_value, fmt_verdict, fmt_whole, fmt_written,
                                 plural)
from optlog.core.plans import selector_name
from optlog.core.stats import CONF, MIN_TEST_N, Batch, bonferroni, mean, sig

if TYPE_CHECKING:  # the prediction's model needs pydantic; the engine only reads it
    from optlog.core.hypothesis import Prediction


def must_agree_across_groups(key: str) -> bool:
    k = key.lower()
    return M.role(k) in ("workload", "software") or "version" in k or k.endswith("_ver")


class RunRow:
    """One counting run: typed labels, canonical label text (for selection), metrics; and how it was
    measured: its launch and repeat (a launch cycle), its start and end (ISO text), for the design."""

    __slots__ = ("id", "labels", "metrics", "canon", "config", "launch", "repeat", "t0", "t1")

    def __init__(self, id: int, labels: dict[str, Any], metrics: dict[str, float],  # noqa: A002
                 canon: dict[str, str] | None = None, config: dict[str, str] | None = None, *,
                 launch: int | None = None, repeat: int = 0, t0: str | None = None, t1: str | None = None) -> None:
        self.id, self.labels, self.metrics = id, labels, metrics
        self.canon = canon if canon is not None else {k: L.canonical(v) for k, v in labels.items()}
        self.config = config or {}  # rendered values and templates that are not labels (core.comparable)
        self.launch, self.repeat, self.t0, self.t1 = launch, repeat, t0, t1

    def timing(self) -> str:
        """What the design reads of the run (for the evidence fingerprint)."""
        return "" if self.launch is None and self.t0 is None else f"{self.launch}:{self.repeat}:{self.t0}:{self.t1}"

    def names(self) -> dict[str, str]:
        """Everything the run names (core.comparable.effective): labels over its config."""
        return C.effective(self.canon, self.config)


class Evidence:
    """Runs that count (succeeded, not invalidated), indexed by label for fast selection."""

    def __init__(self, runs: list[RunRow]) -> None:
        self.runs = {r.id: r for r in runs}
        self.index: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        self.metric_names: set[str] = set()
        self.uids: dict[int, str] = {}  # each run's identity across clones (service.runfiles)
        # memos for `candidate_runs` and `fingerprint`: 1,000 predictions mostly share a few
        # selections, and each one over 10,000 runs costs milliseconds (issue 47). Runs are not
        # added after construction, so a selection's answer stays right for this object's life.
        self._selected: dict[tuple[Any, ...], frozenset[int]] = {}
        self._run_text: dict[tuple[frozenset[int], frozenset[str] | None], bytes] = {}
        for r in runs:
            for k, v in r.canon.items():
                self.index[k][v].add(r.id)
            self.metric_names.update(r.metrics)

    def select(self, sel: dict[str, Any]) -> set[int]:
        if not sel:
            return set(self.runs)
        out: set[int] | None = None
        for k, v in sel.items():
            ids = self.index.get(k, {}).get(L.canonical(v), set())
            out = set(ids) if out is None else out & ids
            if not out:
                return set()
        return out or set()

    def has_label(self, key: str, value: Any = None) -> bool:
        if key not in self.index:
            return False
        return value is None or L.canonical(value) in self.index[key]


# ---------------------------------------------------------------- one comparison at one level


@dataclass(frozen=True)
class Judgement:
    """What one comparison at one level came to: the outcome against the claimed region and why,
    the estimate's method and statistic, its value and interval as judged (clipped to the
    quantity's range), and a fit's line."""

    outcome: str = "unclear"
    reason: str = ""
    method: str = ""
    statistic: str = ""
    estimate: float | None = None
    ci: tuple[float, float] | None = None
    fit: Any = None


@dataclass
class AtomEval:
    """One comparison at one level: the claim it makes, the sample it is estimated from and the
    estimator the table chose (core.estimators), then its judgement at the level's confidence."""

    node: Any
    claim: E.Claim | None
    kind: str  # ratio | diff | value | fit | means | none
    design: str = ""  # paired | unpaired | one group | fit
    sample: ES.Sample | None = None
    estimator: str = "margin"  # a core.estimators.TABLE entry
    handle: int | None = None  # the bootstrap distribution's job in the batch
    conf: float = CONF
    # what the numbers are of: `quantity` (in the expression's terms: "a/b", "a.tflops") and the
    # `threshold` it is judged against (a number, or [lo, hi] for a range)
    quantity: str = ""
    threshold: Any = None
    # the range the quantity can take (a share in [0, 1]; a difference of shares in [-1, 1]) and
    # what it is named in a reason, or None: an interval is clipped to it (issue 45)
    bounds: tuple[float, float] | None = None
    bounded: str = ""
    unit: str | None = None  # the quantity's unit (`quantity_unit`), shown in the reason
    judged: Judgement = field(default_factory=Judgement)

def _run_values(node: Any, runs: list[RunRow], default: str | None,
                ceilings: dict[str, float]) -> list[tuple[RunRow, float]]:
    out = []
    for r in runs:
        def look(ref: E.Ref, r: RunRow = r) -> float | None:
            if ref.group is None:
                return ceilings.get(ref.name)
            return r.metrics.get(ref.metric or default or "")
        v = E.num_eval(node, look)
        if v is not None and not math.isnan(v):
            out.append((r, v))
    return out


def _side_values(node: Any, runs: list[RunRow], default: str | None, ceilings: dict[str, float]) -> list[float]:
    return [v for _, v in _run_values(node, runs, default, ceilings)]


# ---------------------------------------------------------------- designs: paired blocks, time blocks


def _epoch(t: str | None) -> float | None:
    if not t:
        return None
    try:
        return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _block_key(r: RunRow) -> tuple[str, str] | None:
    """The block a run was measured in: a `block` label the user gives, else its launch cycle (the
    launch and the repeat: an interleaved launch measures every point once per cycle)."""
    if L.BLOCK in r.canon:
        return ("block label", r.canon[L.BLOCK])
    if r.launch is not None:
        return ("launch cycle", f"{r.launch}:{r.repeat}")
    return None


def _cycles_interleaved(blocks: dict[tuple[str, str], list[RunRow]]) -> bool:
    """Launch cycles are blocks only when they really were cycles: within a launch, every run of
    cycle r finished before any run of cycle r+1 started. A launch that ran a's repeats back to back
    and then b's (one server each, the default order) has the same repeat numbers but no cycles."""
    by_launch: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for (kind, key), runs in blocks.items():
        if kind != "launch cycle":
            continue
        t0 = [_epoch(r.t0) for r in runs]
        t1 = [_epoch(r.t1) for r in runs]
        if any(t is None for t in t0 + t1):
            return False
        launch, rep = key.split(":")
        by_launch[launch].append((int(rep), min(t for t in t0 if t is not None), max(t for t in t1 if t is not None)))
    for spans in by_launch.values():
        spans.sort()
        if any(spans[i][2] > spans[i + 1][1] for i in range(len(spans) - 1)):
            return False
    return True


def _pairs(xa: list[tuple[RunRow, float]], yb: list[tuple[RunRow, float]]) -> tuple[list[tuple[float, float]], str, int]:
    """Per-block (mean x of a, mean y of b) for blocks with runs of both groups; what the blocks are;
    how many runs were left without a partner. Empty when the design is not paired."""
    if not xa or not yb:
        return [], "", 0
    keys = {id(r): _block_key(r) for r, _ in xa + yb}
    if any(k is None for k in keys.values()):
        return [], "", 0
    blocks: dict[tuple[str, str], list[RunRow]] = defaultdict(list)
    xs: dict[tuple[str, str], list[float]] = defaultdict(list)
    ys: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r, v in xa:
        k = keys[id(r)]
        assert k is not None
        blocks[k].append(r)
        xs[k].append(v)
    for r, v in yb:
        k = keys[id(r)]
        assert k is not None
        blocks[k].append(r)
        ys[k].append(v)
    both = sorted(k for k in blocks if xs.get(k) and ys.get(k))
    if len(both) < MIN_TEST_N or not _cycles_interleaved({k: blocks[k] for k in both}):
        return [], "", 0
    kinds = {k[0] for k in both}
    left = sum(len(blocks[k]) for k in blocks if k not in both)
    return [(mean(xs[k]), mean(ys[k])) for k in both], " and ".join(sorted(kinds)), left


def _fmt_gap(s: float) -> str:
    if s < 90:
        return f"{fmt_whole(s)} s"
    if s < 5400:
        return f"{fmt_whole(s / 60)} min"
    return f"{fmt_verdict(s / 3600)} h"


def separate_blocks(a_runs: list[RunRow], b_runs: list[RunRow]) -> float | None:
    """Seconds between two groups measured in separate contiguous time blocks (every run of one
    finished before any run of the other started), else None. Needs 2+ launched runs a side."""
    if len(a_runs) < 2 or len(b_runs) < 2 or any(r.launch is None for r in a_runs + b_runs):
        return None  # recorded runs' times are when they were recorded, not measured
    spans = []
    for runs in (a_runs, b_runs):
        t0 = [_epoch(r.t0) for r in runs]
        t1 = [_epoch(r.t1) for r in runs]
        if any(t is None for t in t0 + t1):
            return None
        spans.append((min(t for t in t0 if t is not None), max(t for t in t1 if t is not None)))
    (a0, a1), (b0, b1) = spans
    if a1 <= b0:
        return b0 - a1
    if b1 <= a0:
        return a0 - b1
    return None


# ---------------------------------------------------------------- planning one comparison


def _plan_atom(node: Any, grp: dict[str, list[RunRow]], default: str | None, ceilings: dict[str, float],
               batch: Batch) -> AtomEval:
    cl = E.claim(node, ceilings)
    if cl is None:
        return AtomEval(node, None, "means")
    ae = AtomEval(node, cl, cl.kind, threshold=cl.region.threshold())
    try:
        _sample(ae, grp, default, ceilings)
    finally:
        ae.unit = quantity_unit(ae.quantity, default)
    if ae.sample is not None:
        ae.estimator = ES.choose(ae.sample)
        if ae.estimator in ES.BATCHED:
            s = ae.sample
            ae.handle = batch.add("boot", "mean" if s.kind == "value" else s.kind, list(s.x),
                                  list(s.y) if s.kind != "value" else None)
    return ae


def _sample(ae: AtomEval, grp: dict[str, list[RunRow]], default: str | None, ceilings: dict[str, float]) -> None:
    """The values a claim is estimated from (`ae.sample`; none: `ae.kind` is `none`), its design,
    the quantity's name and range."""
    cl = ae.claim
    assert cl is not None
    if cl.kind == "fit":
        f = cl.x
        assert isinstance(f, E.Fit)
        xs, ys = [], []
        for r, v in _run_values(f.ref, grp[f.ref.group or "a"], default, ceilings):
            lx = L.as_number(r.labels.get(f.label))
            if lx is not None:
                xs.append(float(lx))
                ys.append(v)
        ae.design, ae.quantity = "fit", E.unparse(f)
        if not xs:
            ae.kind = "none"
            return
        ae.sample = ES.Sample("fit", "fit", points=(tuple(xs), tuple(ys)), fit_kind=f.kind, fit_label=f.label)
        return
    gx = next(iter(E.groups(cl.x)))
    xa = _run_values(cl.x, grp[gx], default, ceilings)
    x = [v for _, v in xa]
    if cl.kind == "value":
        ae.quantity, ae.design = quantity_name(cl.x), "one group"
        if not x:
            ae.kind = "none"
            return
        _set_bounds(ae, cl.x, None, default, x, [])
        ae.sample = ES.Sample("value", "one group", tuple(x))
        return
    assert cl.y is not None
    gy = next(iter(E.groups(cl.y)))
    yb = _run_values(cl.y, grp[gy], default, ceilings)
    y = [v for _, v in yb]
    ae.quantity = quantity_name(cl.x, cl.y) if cl.kind == "ratio" else f"{quantity_name(cl.x)} - {quantity_name(cl.y)}"
    if not x or not y:
        ae.kind = "none"
        return
    if cl.kind == "diff":
        _set_bounds(ae, cl.x, cl.y, default, x, y)
    logs_ok = cl.kind == "diff" or (all(v > 0 for v in x) and all(v > 0 for v in y))
    pairs, blocking, left = _pairs(xa, yb) if logs_ok else ([], "", 0)
    ae.design = "paired" if pairs else "unpaired"
    ae.sample = ES.Sample(cl.kind, ae.design, tuple(x), tuple(y), tuple(pairs), blocking, left)


def _set_bounds(ae: AtomEval, x: Any, y: Any, default: str | None, xv: list[float], yv: list[float]) -> None:
    """The range of a value (or a difference of two values) of a bounded metric (core.units.bounds):
    a share in [0, 1], a difference of shares in [-1, 1]. Widened to what was measured, so that a
    value a name misjudged (a power fraction past its limit) is never outside its own interval."""
    refs = [r for r in (x, y) if r is not None]
    if not all(isinstance(r, E.Ref) and r.group is not None for r in refs):
        return
    names = {r.metric or default or "" for r in refs}
    bs = {U.bounds(n) for n in names}
    if len(bs) != 1 or None in bs:
        return
    b = next(iter(bs))
    assert b is not None
    lo, hi = (b[0] - b[1], b[1] - b[0]) if y is not None else b
    seen = xv if y is None else [v - w for v in xv for w in yv]
    ae.bounds = (min([lo, *seen]), max([hi, *seen]))
    ae.bounded = f"{' - '.join(sorted(names))} lies in [{fmt_written(b[0])}, {fmt_written(b[1])}]" if y is None else \
        f"a difference of {next(iter(names))} lies in [{fmt_written(b[0] - b[1])}, {fmt_written(b[1] - b[0])}]"


# ---------------------------------------------------------------- deciding one comparison


def _margin_cmp(lv: float, rv: float, op: str, m: float) -> tuple[str, str]:
    up = op in (">", ">=")
    hi_t, lo_t = rv * (1 + m) if rv >= 0 else rv * (1 - m), rv * (1 - m) if rv >= 0 else rv * (1 + m)
    if lv > hi_t:
        out = "holds" if up else "fails"
    elif lv < lo_t:
        out = "fails" if up else "holds"
    else:
        out = "unclear"
    return out, f"{fmt_verdict(lv)} vs {fmt_verdict(rv)}, within the ±{fmt_share(m)} margin" if out == "unclear" else f"{fmt_verdict(lv)} vs {fmt_verdict(rv)}"


def _range_outcome(cl: float, ch: float, lo: float, hi: float, m: float, use_margin: bool) -> str:
    if lo <= cl and ch <= hi:
        return "holds"
    flo, fhi = (lo * (1 - m), hi * (1 + m)) if use_margin else (lo, hi)
    if ch < flo or cl > fhi:
        return "fails"
    return "unclear"


def quantity_name(x: Any, y: Any = None) -> str:
    """The tested quantity in the expression's own terms: `a/b`, `a.tflops/b.tflops`, `a.tflops`."""
    def one(n: Any) -> str:
        t = E.unparse(n)
        return t[1:-1] if isinstance(n, E.Bin) and t.startswith("(") else t
    if y is None:
        return one(x)
    wrap = lambda n, t: f"({t})" if isinstance(n, E.Bin) else t  # noqa: E731
    return f"{wrap(x, one(x))}/{wrap(y, one(y))}"


def judge_interval(lo: float, hi: float, region: E.Region) -> str:
    """DESIGN §5's one rule: the interval inside the region holds, outside it fails, across its edge
    is unclear."""
    if region.contains(lo) and region.contains(hi):
        return "holds"
    if hi < region.lo or lo > region.hi or (hi == region.lo and region.lo_open) or (lo == region.hi and region.hi_open):
        return "fails"
    if lo == hi:  # a point on an open edge
        return "fails"
    return "unclear"


def judge_margin(e: float, region: E.Region, m: float, scale: float | None = None) -> str:
    """Fewer than 3 values: the point estimate holds when inside the region by more than the margin
    m (relative to the edge, or to `scale` for a difference), fails when outside by more, else unclear."""
    def tol(edge: float) -> float:
        return m * abs(scale if scale is not None else edge)
    inside = (region.lo == -math.inf or e > region.lo + tol(region.lo)) and \
        (region.hi == math.inf or e < region.hi - tol(region.hi))
    if inside:
        return "holds"
    if (region.lo != -math.inf and e < region.lo - tol(region.lo)) or \
            (region.hi != math.inf and e > region.hi + tol(region.hi)):
        return "fails"
    return "unclear"


_QUANTITY = re.compile(r"([ab])(?:\.(\w+))?(?: - ([ab])(?:\.(\w+))?)?")


def quantity_unit(quantity: str | None, metric: str | None) -> str | None:
    """The unit of a tested quantity (core.units): a value or a difference of one metric has the
    metric's (`a` of output_throughput: tok/s); a ratio, an exponent, a fraction have none."""
    m = _QUANTITY.fullmatch(quantity or "")
    if not m:
        return None
    names = {m.group(2) or metric} | ({m.group(4) or metric} if m.group(3) else set())
    if len(names) != 1:
        return None
    u = U.unit(next(iter(names)))
    return None if u == "fraction" else u


def region_shown(region: str | None, unit: str | None) -> str:
    """A claimed region (`Region.text()`, its numbers as written) in a verdict's text: its numbers
    in the tables' style (`fmt_value`: a bound as written, rounded as the tables round) with the
    unit: `>= 21228.1` → `>= 21,228 tok/s`, `in [0.9, 1.1]` stays. The record's `region` keeps them
    as written."""
    text = region or ""
    try:
        if text.startswith("in [") and text.endswith("]"):
            lo, hi = (float(x) for x in text[4:-1].split(", "))
            return f"in [{fmt_value(lo)}, {fmt_value(hi)}]" + (f" {unit}" if unit else "")
        op, _, num = text.partition(" ")
        if op in (">", ">=", "<", "<="):
            return f"{op} {fmt_value(float(num))}" + (f" {unit}" if unit else "")
    except ValueError:
        pass
    return text


_WHERE = {"holds": "inside", "fails": "outside", "unclear": "straddles"}


def _conf_text(conf: float) -> str:
    return f"{fmt_share(conf, places=0 if round(conf * 100, 6).is_integer() else 1)} CI"


OUT_OF_RANGE = "the values are beyond what a double can compute with"


def _judge(ae: AtomEval, m: float, results: list[Any]) -> Judgement:
    """Estimate the claim's quantity with the estimator the table chose (core.estimators), at
    `ae.conf`, and judge it against the region.

    Any finite doubles are evidence (issue 42: one run near 1e308 once stopped every verdict of the
    workspace): the estimators compute in logs or on scaled values where they can, and a
    computation that still overflows leaves this comparison unclear, saying why; it never raises."""
    if ae.kind == "none":
        return Judgement("unclear", "no values")
    if ae.kind == "means" or ae.sample is None:
        return Judgement("unclear", "cannot evaluate", "means")
    est: ES.Estimate | None = None
    try:
        dist = results[ae.handle] if ae.handle is not None else None
        est = ES.estimate(ae.estimator, ae.sample, ae.conf, dist)
        return _against(ae, est, m)
    except (ArithmeticError, ValueError) as e:
        why = f"{ae.quantity or 'the quantity'} cannot be estimated: {OUT_OF_RANGE} ({type(e).__name__}: {e})"
        return Judgement("unclear", why, "", est.statistic if est else "", fit=est.fit if est else None)


def _against(ae: AtomEval, est: ES.Estimate, m: float) -> Judgement:
    """DESIGN §5's rule on an estimate: its interval against the region (`judge_interval`), or,
    without one, its value with the margin rule (`judge_margin`); unclear when it cannot be made."""
    cl, s = ae.claim, ae.sample
    assert cl is not None and s is not None
    region, q, u, kind = cl.region, ae.quantity, ae.unit, s.kind
    shown = region_shown(region.text(), u)

    def said(outcome: str, reason: str, v: float | None = None, ci: tuple[float, float] | None = None) -> Judgement:
        return Judgement(outcome, reason, est.method, est.statistic, v, ci, est.fit)
    if est.unusable:
        return Judgement("unclear", est.unusable, est.method)
    v, lo, hi = est.value, est.lo, est.hi
    if est.method == "exact":
        assert v is not None
        if not math.isfinite(v):
            raise OverflowError(f"{q} of equal values past the largest double")
        return said(judge_interval(v, v, region), f"all values equal: {q} = {fmt_amount(v, u)} vs {shown}", v)
    geo = " (geometric means)" if est.statistic == "ratio of geometric means" else (
        " (geometric mean)" if est.statistic == "geometric mean" else (
            f" ({est.statistic} of {len(s.pairs)})" if s.design == "paired" else ""))
    if v is None or not math.isfinite(v):
        why = "a mean of 0" if v is None or (kind == "ratio" and mean(list(s.y)) == 0) else OUT_OF_RANGE
        return said("unclear", f"{q} cannot be estimated ({why})")
    if (lo is not None and not math.isfinite(lo)) or (hi is not None and not math.isfinite(hi)):
        return said("unclear", f"{q} = {fmt_amount(v, u)}{geo}, no interval: {OUT_OF_RANGE} "
                    f"({est.detail or est.method})", v)
    if lo is None or hi is None:
        return _margin_rule(ae, est, v, m, geo, shown)
    detail = est.detail
    if ae.bounds is not None and (lo < ae.bounds[0] or hi > ae.bounds[1]):  # a share's interval within [0, 1]
        lo, hi = max(lo, ae.bounds[0]), min(hi, ae.bounds[1])
        detail += f"; {ae.bounded}"
    outcome = judge_interval(lo, hi, region)
    return said(outcome, f"{q} = {fmt_amount(v, u)}{geo}, {_conf_text(est.confidence)} {fmt_interval(lo, hi, u)} "
                f"{_WHERE[outcome]} {shown} ({detail})", v, (lo, hi))


def _margin_rule(ae: AtomEval, est: ES.Estimate, v: float, m: float, geo: str, shown: str) -> Judgement:
    """An estimate without an interval: judged with the margin rule, the reason saying so."""
    cl, s = ae.claim, ae.sample
    assert cl is not None and s is not None
    q, u = ae.quantity, ae.unit
    scale = abs(mean(list(s.y))) if s.kind == "diff" else None
    outcome = judge_margin(v, cl.region, m, scale)
    within = f", within the ±{fmt_share(m)} margin" if outcome == "unclear" else ""
    if est.method == "fit":
        return Judgement(outcome, f"{q} = {fmt_amount(v, u)} vs {shown}{within} (margin rule ±{fmt_share(m)}, "
                         f"{est.detail}: too few runs for an interval)", "fit-margin", est.statistic, v, fit=est.fit)
    n_text = f"n={'+'.join(str(k) for k in est.n)}" if s.kind != "fit" else f"{est.n[0]} runs"
    return Judgement(outcome, f"{q} = {fmt_amount(v, u)}{geo} vs {shown}{within} (margin rule ±{fmt_share(m)}, {n_text})",
                     est.method, est.statistic, v, fit=est.fit)


def _means_eval(node: Any, grp: dict[str, list[RunRow]], default: str | None, ceilings: dict[str, float],
                m: float) -> tuple[str, str]:
    """Fallback for forms without a test: each reference replaced by its group mean, margin rules;
    unclear when the arithmetic leaves the doubles (issue 42)."""
    try:
        out, why = _means_outcome(node, grp, default, ceilings, m)
    except (ArithmeticError, ValueError) as e:
        return "unclear", f"cannot be evaluated: {OUT_OF_RANGE} ({type(e).__name__}: {e})"
    if "nan" in why or "inf" in why:
        return "unclear", f"cannot be evaluated: {OUT_OF_RANGE} ({why})"
    return out, why


def _means_outcome(node: Any, grp: dict[str, list[RunRow]], default: str | None, ceilings: dict[str, float],
                   m: float) -> tuple[str, str]:
    cache: dict[str, float | None] = {}

    def look(ref: E.Ref) -> float | None:
        if ref.group is None:
            return ceilings.get(ref.name)
        if ref.name not in cache:
            vals = [r.metrics[ref.metric or default or ""] for r in grp[ref.group] if (ref.metric or default or "") in r.metrics]
            cache[ref.name] = mean(vals) if vals else None
        return cache[ref.name]

    if isinstance(node, E.InRange):
        v, lo, hi = E.num_eval(node.operand, look), E.num_eval(node.lo, look), E.num_eval(node.hi, look)
        if v is None or lo is None or hi is None:
            return "unclear", "no values"
        out = _range_outcome(v, v, lo, hi, m, True)
        return out, f"{fmt_verdict(v)} vs [{fmt_written(lo)}, {fmt_written(hi)}] (judged on means)"
    lv, rv = E.num_eval(node.left, look), E.num_eval(node.right, look)
    if lv is None or rv is None:
        return "unclear", "no values"
    out, why = _margin_cmp(lv, rv, node.op, m)
    return out, why + " (judged on means)"


def _combine(node: Any, outcomes: dict[int, str]) -> str:
    if isinstance(node, (E.Cmp, E.InRange)):
        return outcomes[id(node)]
    if isinstance(node, E.Not):
        o = _combine(node.operand, outcomes)
        return {"holds": "fails", "fails": "holds"}.get(o, "unclear")
    items = [_combine(i, outcomes) for i in node.items]
    if isinstance(node, E.And):
        if "fails" in items:
            return "fails"
        return "holds" if all(i == "holds" for i in items) else "unclear"
    if "holds" in items:
        return "holds"
    return "fails" if all(i == "fails" for i in items) else "unclear"


# ---------------------------------------------------------------- comparability


def _ref_value(values: list[Any], a_vals: list[Any], b_vals: list[Any], two: bool) -> Any:
    """The value most runs share, preferring one both groups have; ties → the smallest value."""
    ca, cb, ct = Counter(a_vals), Counter(b_vals), Counter(values)
    cands = sorted(ct, key=lambda v: L.sort_key(v) if v is not None else (2, 0.0, ""))
    return max(cands, key=lambda v: ((min(ca[v], cb[v]) if two else ct[v]), ct[v], v is not None))


def _fmt_label(k: str, v: Any) -> str:
    return f"{k}={'(none)' if v is None else v}"


def comparability(a_runs: list[RunRow], b_runs: list[RunRow], exclude: set[str], two: bool) -> dict[int, str]:
    """Runs that cannot be pooled with the rest of the level → reason. See the module doc."""
    keys: set[str] = set()
    for r in a_runs + b_runs:
        keys.update(r.labels)
        keys.update(r.config)
    keys -= exclude
    keys -= C.ignored_keys() | C.flag_keys()
    bad: dict[int, list[str]] = defaultdict(list)
    for k in sorted(keys):
        def val(r: RunRow) -> Any:
            return r.canon[k] if k in r.canon else r.config.get(k)

        def shown(r: RunRow) -> Any:
            return r.labels[k] if k in r.labels else r.config.get(k)
        if must_agree_across_groups(k):
            av, bv = [val(r) for r in a_runs], [val(r) for r in b_runs]
            allv = av + bv
            if len(set(allv)) <= 1:
                continue
            ref = _ref_value(allv, av, bv, two)
            for r in a_runs + b_runs:
                if val(r) != ref:
                    bad[r.id].append(f"{_fmt_label(k, shown(r))} where the others have {_fmt_label(k, ref)}")
        else:
            for grp in (a_runs, b_runs):
                vs = [val(r) for r in grp]
                if len(set(vs)) <= 1:
                    continue
                ref = _ref_value(vs, vs, [], False)
                for r in grp:
                    if val(r) != ref:
                        bad[r.id].append(f"{_fmt_label(k, shown(r))} where the others have {_fmt_label(k, ref)}")
    return {rid: "; ".join(rs) for rid, rs in bad.items()}


# ---------------------------------------------------------------- predictions


def _group_name(sel: dict[str, Any], fallback: str) -> str:
    """A group as every face names it (core.plans.selector_name: `tp8`, `parallel=4`)."""
    return selector_name(sel) if sel else fallback


def _selector_text(sel: dict[str, Any]) -> str:
    """A selector with its labels named (`m=16`), for messages about what matched nothing."""
    return ",".join(f"{k}={v}" for k, v in sel.items()) or "all runs"


@dataclass
class _Plan:
    pid: str
    pred: Any
    node: Any
    atoms: list[Any]
    levels: list[dict[str, Any]] = field(default_factory=list)  # level record + atom evals
    skipped: list[dict[str, Any]] = field(default_factory=list)
    not_comparable: list[dict[str, Any]] = field(default_factory=list)
    untested_reason: str | None = None


ENGINE_VERSION = 3  # v3: one estimation rule for every claim, paired designs, scaling fits (DESIGN §5). Bump when the semantics or the record's shape change: cached verdicts are then redone


def evaluate(preds: list[Any], ev: Evidence, ceilings: dict[str, float],
             cached: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Evaluate predictions (core.hypothesis.Prediction) against the evidence; results by prediction id.

    `cached`: earlier results by prediction id (each carrying its `evidence` fingerprint); a prediction
    whose fingerprint is unchanged reuses its earlier result (same inputs, same deterministic output)
    instead of being recomputed, so judging again without new evidence costs no statistics."""
    out: dict[str, dict[str, Any]] = {}
    todo = []
    for p in preds:
        fp = fingerprint(p, ev, ceilings)
        old = (cached or {}).get(p.id)
        # a result from before the quiet judgement existed (issue 45) is judged again once
        if old is not None and old.get("evidence") == fp and \
                not (old.get("loaded_runs") and "quiet" not in old and not _selects_load(p)):
            out[p.id] = old
        else:
            todo.append((p, fp))
    batch = Batch()
    plans = []
    quiet_ev: Evidence | None = None
    for p, fp in todo:
        try:
            pl = _plan(p, ev, ceilings, batch)
            qpl = None
            if any(ev.runs[i].canon.get(LOADED) == "true" for i in candidate_set(p, ev)) and not _selects_load(p):
                if quiet_ev is None:  # the same evidence without the runs measured under load
                    quiet_ev = Evidence([r for r in ev.runs.values() if r.canon.get(LOADED) != "true"])
                qpl = _plan(p, quiet_ev, ceilings, batch)
            plans.append((pl, qpl, fp))
        except (ArithmeticError, ValueError) as e:  # one prediction's data never stops another's verdict
            out[p.id] = {**_unjudged(p, e), "evidence": fp}
    results = batch.run()
    for pl, qpl, fp in plans:
        try:
            res = _finish(pl, results, ceilings)
            if qpl is not None and res.get("loaded_runs"):
                res["quiet"] = _quiet(res, _finish(qpl, results, ceilings), qpl.untested_reason)
                res["explanation"] = explain(res, pl.untested_reason)
        except (ArithmeticError, ValueError) as e:
            res = _unjudged(pl.pred, e)
        res["evidence"] = fp
        out[pl.pid] = res
    return {p.id: out[p.id] for p in preds}


LOADED = "loaded"  # the label runs.hostload gives a run measured under load


def _selects_load(pred: Any) -> bool:
    """A prediction about load itself (`--a loaded=true`, `--where loaded…`) has no quiet judgement."""
    return LOADED in (pred.a or {}) or LOADED in (pred.b or {}) or bool(pred.where and LOADED in str(pred.where))


def _quiet(res: dict[str, Any], q: dict[str, Any], untested_reason: str | None) -> dict[str, Any]:
    """What the quiet runs alone give (issue 45): the same prediction judged without the runs
    measured under load. `thin`: too few to judge, or judged without an interval (the margin rule);
    `differs`: its status is not the verdict's."""
    levels = [{"level": lv["level"], "estimate": lv.get("estimate"), "ci": lv.get("ci"), "outcome": lv.get("outcome"),
               "method": lv.get("method"), "n": lv.get("n", {})} for lv in q["levels"]]
    thin = q["status"] == "untested" or any(lv.get("ci") is None and lv.get("method") != "exact" for lv in q["levels"])
    if untested_reason:
        untested_reason = untested_reason.replace("no run matches ", "no quiet run in ")
    head = _headline(q, untested_reason)
    return {"runs": q["runs"], "status": q["status"], "levels": levels, "thin": thin,
            "differs": q["status"] != res["status"], "summary": head}


def quiet_text(qt: dict[str, Any]) -> str:
    if qt["status"] == "untested":
        why = qt["summary"].removeprefix("untested: ")
        return f"quiet runs alone: too few to judge ({why})"
    st, _, body = qt["summary"].partition(": ")
    text = f"quiet runs alone (runs {ranges(qt['runs'])}): {body} → {st}"
    if qt["thin"]:
        text += " (too few for an interval: margin rule)"
    return text


def _unjudged(pred: Any, e: Exception) -> dict[str, Any]:
    """The result of a prediction whose evidence could not be computed with (issue 42): untested,
    the reason in its explanation, so its hypothesis says it and every other is judged as usual."""
    res: dict[str, Any] = {
        "id": pred.id, "version": pred.version, "expect": pred.expect, "metric": pred.metric,
        "a": dict(pred.a), "b": dict(pred.b), "per": pred.per, "where": pred.where, "status": "untested",
        "edited_after_evidence": bool(pred.edited_after_evidence), "levels": [], "skipped": [],
        "not_comparable": [], "runs": []}
    res["explanation"] = explain(res, f"cannot be judged: {OUT_OF_RANGE} ({type(e).__name__}: {e})")
    return res


def _selection_key(sel: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, L.canonical(v)) for k, v in (sel or {}).items()))


def candidate_runs(pred: Any, ev: Evidence) -> set[int]:
    """The runs a prediction's result can depend on: every counting run its groups select. A clone
    that has these runs (same ids, labels, metrics) reaches the same result and fingerprint."""
    return set(candidate_set(pred, ev))


def candidate_set(pred: Prediction, ev: Evidence) -> frozenset[int]:
    """`candidate_runs`, shared: worked out once per distinct (expectation, selections) in `ev`."""
    key = (pred.expect, _selection_key(pred.a), _selection_key(pred.b))
    got = ev._selected.get(key)
    if got is not None:
        return got
    used = sorted(pred.groups)
    ids: set[int] = set()
    for g in used:
        ids |= ev.select(pred.a if g == "a" else pred.b)
    ev._selected[key] = out = frozenset(ids)
    return out


def fingerprint(pred: Any, ev: Evidence, ceilings: dict[str, float]) -> str:
    """A hash of everything a prediction's result depends on: the engine version, the prediction as
    written, the ceilings, and the candidate runs (ids, labels, metric values).

    Only what a fresh clone has too (issue 31): a run's labels and metrics travel in its evidence
    file, but what a launched run was rendered with (`raw`, its `config`) and its launch stay in
    the database where it ran, so hashing them made every verdict on launched runs differ in a
    clone and re-commit. A run's config never changes after it is recorded, so its id stands for it.
    What the design reads (launch, repeat, start and end: `RunRow.timing`) travels in the evidence
    file, and an imported run keeps its launch number (`origin_launch`), so a clone hashes the same."""
    ids = candidate_set(pred, ev)
    spec = pred.model_dump(mode="json", exclude={"status", "history", "created"})
    h = hashlib.sha1(json.dumps([ENGINE_VERSION, spec, sorted(ceilings.items())], sort_keys=True).encode())
    read = _read_metrics(pred)
    key = (ids, read)
    text = ev._run_text.get(key)
    if text is None:  # the candidate runs' part: the same text for every prediction reading them alike
        runs = ev.runs
        text = "\n".join(f"{i}{sorted(runs[i].canon.items())}"
                          f"{sorted((k, v) for k, v in runs[i].metrics.items() if read is None or k in read)}"
                          + runs[i].timing()
                          for i in sorted(ids)).encode()
        ev._run_text[key] = text
    h.update(text)
    return h.hexdigest()[:16]


def _read_metrics(pred: Prediction) -> frozenset[str]:
    """The metrics a prediction's result reads: its own and the load shares (core.loadshare). Only
    these are hashed: the evidence loaded for a batch of predictions holds the union of their
    metrics, and a run's other metrics changing the hash re-recorded an unchanged verdict whenever a
    new hypothesis was judged beside it."""
    out = {m for ms in _needed_metrics(pred.expr, pred.metric).values() for m in ms}
    return frozenset(out | {pred.metric or ""} | set(LS.COMPARED))


def _needed_metrics(node: Any, default: str | None) -> dict[str, set[str]]:
    need: dict[str, set[str]] = defaultdict(set)
    for r in E.refs(node, groups_only=True):
        need[r.group or ""].add(r.metric or default or "")
    return need


def _drop_concurrent(pred: Any, ev: Evidence, ids: dict[str, set[int]], pl: "_Plan") -> None:
    """Runs that overlapped another launch (label `concurrent`) disturb each other: not comparable,
    unless the prediction selects on the label itself (`--a concurrent=true`, `--where concurrent…`)."""
    key = L.CONCURRENT
    if key in (pred.a or {}) or key in (pred.b or {}) or (pred.where and key in str(pred.where)):
        return
    for g in sorted(ids):
        flagged = {i for i in ids[g] if ev.runs[i].canon.get(key) == "true"}
        for i in sorted(flagged):
            pl.not_comparable.append({"run": i, "group": g, "level": {},
                                      "reason": "ran concurrently with another launch (concurrent=true)"})
        ids[g] -= flagged


def _plan(pred: Prediction, ev: Evidence, ceilings: dict[str, float], batch: Batch) -> _Plan:
    node = pred.expr
    pl = _Plan(pred.id, pred, node, E.atoms(node))
    used = E.groups(node)
    two = used == {"a", "b"}
    need = _needed_metrics(node, pred.metric)
    where = E.parse_where(pred.where) if pred.where else None
    sels = {"a": pred.a, "b": pred.b}
    ids: dict[str, set[int]] = {}
    for g in sorted(used):
        s = ev.select(sels[g])
        if where is not None:
            s = {i for i in s if E.where_match(where, ev.runs[i].labels)}
        ids[g] = s
    if two:
        both = ids["a"] & ids["b"]
        for i in sorted(both):
            pl.not_comparable.append({"run": i, "group": "a,b", "level": {}, "reason": "matches both a and b"})
        ids["a"] -= both
        ids["b"] -= both
    _drop_concurrent(pred, ev, ids, pl)
    if not all(ids.values()):
        pl.untested_reason = "no run matches " + " / ".join(
            f"{g} ({_selector_text(sels[g])})" for g in sorted(used) if not ids[g])
        return pl
    # metric presence
    for g in sorted(used):
        for met in sorted(need[g]):
            if met not in ev.metric_names:
                pl.untested_reason = f"no run has metric {met!r}"
                return pl
    # levels
    per = pred.per
    by_level: dict[str, dict[str, list[RunRow]]] = defaultdict(lambda: defaultdict(list))
    level_val: dict[str, Any] = {}
    for g in sorted(used):
        for i in sorted(ids[g]):
            r = ev.runs[i]
            if per:
                if per not in r.labels:
                    pl.not_comparable.append({"run": i, "group": g, "level": {}, "reason": f"no {per} label"})
                    continue
                key = L.canonical(r.labels[per])
                level_val[key] = L.typed(r.labels[per])
            else:
                key = ""
            by_level[key][g].append(r)
    # a scaling claim's label varies by design: never a reason to set runs apart
    exclude = set(pred.a) | set(pred.b) | ({per} if per else set()) | {f.label for f in E.fits(node)}
    for key in sorted(by_level, key=lambda k: L.sort_key(level_val.get(k, k))):
        grp = by_level[key]
        level = {per: level_val[key]} if per else {}
        missing = [g for g in sorted(used) if not grp.get(g)]
        if missing:
            present = [g for g in sorted(used) if grp.get(g)]
            pl.skipped.append({"level": level, "reason": f"only in {', '.join(present)}"
                               + f" ({', '.join(_group_name(sels[g], g) for g in present)}); no runs in {', '.join(missing)}"})
            continue
        a_runs, b_runs = list(grp.get("a", [])), list(grp.get("b", []))
        bad = comparability(a_runs, b_runs, exclude, two)
        for g, runs in (("a", a_runs), ("b", b_runs)):
            for r in runs:
                if r.id in bad:
                    pl.not_comparable.append({"run": r.id, "group": g, "level": level, "reason": bad[r.id]})
        use = {g: [r for r in grp.get(g, []) if r.id not in bad] for g in ("a", "b")}
        # runs that lack a metric the expression needs for their group
        for g in sorted(used):
            use[g] = [r for r in use[g] if all(mm in r.metrics for mm in need[g])]
        rec: dict[str, Any] = {"level": level, "grp": use, "atoms": [], "incomparable_only": None}
        lost = [g for g in sorted(used) if not use[g]]
        if lost:
            reasons = sorted({bad[r.id] for g in lost for r in grp.get(g, []) if r.id in bad})
            if reasons:
                rec["incomparable_only"] = "only not-comparable evidence in " + ", ".join(lost) + ": " + "; ".join(reasons[:3])
            else:
                pl.skipped.append({"level": level, "reason": f"no run in {', '.join(lost)} has "
                                   + ", ".join(sorted(need[lost[0]]))})
                continue
        else:
            for at in pl.atoms:
                rec["atoms"].append(_plan_atom(at, use, pred.metric, ceilings, batch))
        pl.levels.append(rec)
    if not pl.levels:
        pl.untested_reason = "no level has runs in both groups" if pl.skipped else "no comparable runs"
    return pl


def _finish(pl: _Plan, results: list[Any], ceilings: dict[str, float]) -> dict[str, Any]:
    pred = pl.pred
    # every interval at a confidence widened for the number of levels judged (Bonferroni): the
    # claim holds at all of them together with 95 % confidence
    conf = bonferroni(sum(1 for rec in pl.levels if rec["atoms"]))
    for rec in pl.levels:
        for ae in rec["atoms"]:
            ae.conf = conf
    a_name, b_name = _names(pred.a, pred.b)
    levels_out: list[dict[str, Any]] = []
    loaded_ids: set[int] = set()
    load_notes: list[str] = []
    used_runs: set[int] = set()
    default = pred.metric
    tested: dict[str, str | None] = {"a": None, "b": None}
    for ref in E.refs(pl.node, groups_only=True):
        if ref.group in tested and tested[ref.group] is None:
            tested[ref.group] = ref.metric or default
    for rec in pl.levels:
        use = rec["grp"]
        lv: dict[str, Any] = {"level": rec["level"]}
        # a, b: the means of the metric the expression reads of each group (its first reference
        # there), so `a.bound_compute > 0.5` shows bound_compute, not the default metric
        va = [r.metrics[tested["a"]] for r in use["a"] if tested["a"] and tested["a"] in r.metrics]
        vb = [r.metrics[tested["b"]] for r in use["b"] if tested["b"] and tested["b"] in r.metrics]
        ma, mb = (mean(va) if va else None), (mean(vb) if vb else None)
        lv["a"], lv["b"] = sig(ma, 6), sig(mb, 6)
        lv["ratio"] = sig(ma / mb, 4) if ma is not None and mb else None
        lv["n"] = {g: len(use[g]) for g in sorted(E.groups(pl.node))}
        values: dict[str, list[float]] = {}
        for ref in E.refs(pl.node, groups_only=True):
            met = ref.metric or default or ""
            values.setdefault(ref.name, [r.metrics[met] for r in use[ref.group or "a"] if met in r.metrics])
        lv["values"] = values
        lv["runs"] = {g: [r.id for r in use[g]] for g in ("a", "b") if use[g]}
        if rec["incomparable_only"]:
            lv.update(ci=None, p=None, outcome="unclear", reason=rec["incomparable_only"], method=None)
            levels_out.append(lv)
            continue
        for g in ("a", "b"):
            used_runs.update(r.id for r in use[g])
        tests = _judge_level(pl, rec, lv, (va, vb), ceilings, results)
        two_group = [ae for ae in tests if ae.kind in ("ratio", "diff", "means") and ae.design != "paired"]
        gap = separate_blocks(use["a"], use["b"]) if two_group and use["a"] and use["b"] else None
        if gap is not None:  # DESIGN §5: groups measured in separate time blocks are said to be
            lv["drift"] = f"{a_name} and {b_name} measured in separate blocks {_fmt_gap(gap)} apart: drift not controlled"
            lv["reason"] += f"; {lv['drift']}"
        loaded = [f"{g} run {r.id}" for g in ("a", "b") for r in use[g] if r.canon.get("loaded") == "true"]
        if loaded:  # runs measured under load (runs.hostload) are named with the numbers they gave
            lv["reason"] += f" [measured under load: {', '.join(loaded)}]"
        if (differs := LS.group_difference(use["a"], use["b"])) is not None:  # core.loadshare
            lv["reason"] += f" [{differs}]"
            load_notes.append(differs)
        levels_out.append(lv)
        loaded_ids.update(r.id for g in ("a", "b") for r in use[g] if r.canon.get("loaded") == "true")

    status = _status([lv["outcome"] for lv in levels_out], bool(pl.untested_reason))
    res = {
        "id": pred.id,
        "version": pred.version,
        "expect": pred.expect,
        "metric": pred.metric,
        "a": dict(pred.a),
        "b": dict(pred.b),
        "per": pred.per,
        "where": pred.where,
        "status": status,
        "edited_after_evidence": bool(pred.edited_after_evidence),
        "levels": levels_out,
        "skipped": pl.skipped,
        "not_comparable": pl.not_comparable,
        "runs": sorted(used_runs),
    }
    if loaded_ids:  # present only when it matters, so verdicts on a quiet machine read as before
        res["loaded_runs"] = sorted(loaded_ids)
    if load_notes:  # the groups got clearly different CPU shares or GPU sharing (core.loadshare)
        res["load_differs"] = load_notes[0] if len(set(load_notes)) == 1 else f"{load_notes[0]} (and at other levels)"
    res["explanation"] = explain(res, pl.untested_reason)
    return res


def _judge_level(pl: _Plan, rec: dict[str, Any], lv: dict[str, Any], ab: tuple[list[float], list[float]],
                 ceilings: dict[str, float], results: list[Any]) -> list[AtomEval]:
    """Judge each comparison of a level (`rec`) and combine their outcomes into the level's record
    `lv`: one comparison's numbers, or a compound's tests. Returns the comparisons judged."""
    use, m, default = rec["grp"], pl.pred.margin, pl.pred.metric
    outcomes: dict[int, str] = {}
    tests = []
    for node, ae in zip(pl.atoms, rec["atoms"]):
        if ae.kind == "means":
            ae.judged = Judgement(*_means_eval(node, use, default, ceilings, m), "means")
        else:
            ae.judged = _judge(ae, m, results)
        outcomes[id(node)] = ae.judged.outcome
        tests.append(ae)
    lv["outcome"] = _combine(pl.node, outcomes)
    if len(tests) == 1:
        ae = tests[0]
        lv.update(_numbers(ae))
        if ae.judged.statistic in ("ratio of geometric means", "geometric mean"):  # the group centres the estimate is of
            geo = {g: _gmean(v) for g, v in zip(("a", "b"), ab) if v}
            lv["geo"] = {g: sig(x, 6) for g, x in geo.items() if x is not None}
        lv["p"] = None  # no test gives a p-value: each claim is judged by its interval
        lv["method"] = ae.judged.method
        lv["reason"] = ae.judged.reason
    else:
        lv["ci"], lv["p"], lv["method"] = None, None, "compound"
        lv["reason"] = "; ".join(f"{E.unparse(t.node)}: {t.judged.outcome} ({t.judged.reason})" for t in tests)
        lv["tests"] = [{"expect": E.unparse(t.node), "outcome": t.judged.outcome, "p": None, **_numbers(t),
                        "method": t.judged.method, "reason": t.judged.reason}
                       for t in tests]
    return tests


def _status(outcomes: list[str], untested: bool) -> str:
    """A prediction's status from its levels' outcomes (DESIGN §5)."""
    if untested or not outcomes:
        return "untested"
    if "fails" in outcomes:
        return "falsified"
    return "confirmed" if all(o == "holds" for o in outcomes) else "inconclusive"


def _gmean(values: list[float]) -> float | None:
    """The geometric mean (None unless every value is positive)."""
    if not values or any(v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _numbers(ae: AtomEval) -> dict[str, Any]:
    """The tested quantity, its estimate and interval (of the same statistic) and the threshold;
    the region claimed, the design (paired with its pairs, unpaired, one group, fit), the confidence."""
    thr, j = ae.threshold, ae.judged
    out = {"quantity": ae.quantity or None, "statistic": j.statistic or None,
           "estimate": sig(j.estimate, 6) if j.estimate is not None and math.isfinite(j.estimate) else None,
           "ci": [sig(c) for c in j.ci] if j.ci else None,
           "threshold": [sig(t) for t in thr] if isinstance(thr, list) else sig(thr),
           "region": ae.claim.region.text() if ae.claim is not None else None,
           "design": ae.design or None}
    if j.ci:
        out["confidence"] = sig(ae.conf, 4)
    if ae.design == "paired":
        assert ae.sample is not None
        out["pairs"] = len(ae.sample.pairs)
        out["paired_by"] = ae.sample.blocking
    if j.fit is not None:
        out["fit"] = j.fit.as_dict()
    return out


def _names(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, str]:
    """The groups as a reader names them: the selector labels they do not share."""
    common = {k for k in set(a) & set(b) if L.canonical(a[k]) == L.canonical(b[k])}
    return (_group_name({k: v for k, v in a.items() if k not in common}, "a"),
            _group_name({k: v for k, v in b.items() if k not in common}, "b"))


def _display(quantity: str, a_name: str, b_name: str, metric: str | None) -> str:
    """A quantity as a reader names it: `a/b` → `tp4pp2/tp8`; `a` alone → its metric and group."""
    if quantity == "a/b":
        return f"{a_name}/{b_name}"
    if quantity == "b/a":
        return f"{b_name}/{a_name}"
    one = re.fullmatch(r"([ab])(?:\.(\w+))?", quantity)
    if one:
        met = one.group(2) or metric or "?"
        return f"{met} ({a_name if one.group(1) == 'a' else b_name})"
    return quantity


def _headline(res: dict[str, Any], untested_reason: str | None = None) -> str:
    """The judgement in a few words: `falsified: at concurrency 64, 256 tp4pp2/tp8 = 0.30, 0.39`, with
    the interval against the region when there is one level."""
    st = res["status"]
    if st == "untested":
        return f"untested: {untested_reason or 'no evidence'}"
    levels = res["levels"]
    pick = {"falsified": "fails", "confirmed": "holds", "inconclusive": "unclear"}[st]
    chosen = [lv for lv in levels if lv["outcome"] == pick] or levels
    per = res.get("per")
    a_name, b_name = _names(res["a"], res["b"])
    lvtxt = ", ".join(str(next(iter(lv["level"].values()))) for lv in chosen) if per else ""
    where = f"at {per} {lvtxt} " if per else ""
    quants = {lv.get("quantity") for lv in chosen}
    if len(quants) == 1 and None not in quants and all(lv.get("estimate") is not None for lv in chosen):
        stat = chosen[0].get("statistic") or ""
        note = f" ({stat})" if "geometric" in stat else ""
        if all(lv.get("method") == "exact" for lv in chosen):
            note = " (all values equal)"
        elif all(lv.get("design") == "paired" for lv in chosen):
            note = f" (paired by {chosen[0].get('paired_by')}, " + \
                "/".join(str(lv.get("pairs")) for lv in chosen) + " pairs)"
        u = quantity_unit(chosen[0]["quantity"], res.get("metric"))
        nums = f"{_display(chosen[0]['quantity'], a_name, b_name, res.get('metric'))} = " \
            + ", ".join(fmt_verdict(lv["estimate"]) for lv in chosen) + (f" {u}" if u else "") + note
        one = chosen[0]
        if len(chosen) == 1 and one.get("ci") and st != "inconclusive":  # the interval against the region
            nums += f", {_conf_text(one.get('confidence') or CONF)} {fmt_interval(one['ci'][0], one['ci'][1], u)} " \
                f"{_WHERE[one['outcome']]} {region_shown(one.get('region'), u)}"
    else:
        nums = "; ".join(lv["reason"] for lv in chosen[:2])
    return f"{st}: {where}{nums}"


def left_out_text(not_comparable: list[dict[str, Any]], cap: int = 3) -> str:
    """The runs a judgement left out and the rule that set each apart (issue 45: `3 run(s) not
    comparable` said neither): `runs 7–9 left out: parallel=4 where the others have parallel=1`."""
    by_reason: dict[str, list[int]] = defaultdict(list)
    for x in not_comparable:
        by_reason[str(x.get("reason") or "not comparable")].append(int(x["run"]))
    parts = []
    for why, ids in sorted(by_reason.items(), key=lambda kv: min(kv[1]))[:cap]:
        parts.append(f"{'run' if len(set(ids)) == 1 else 'runs'} {ranges(ids)} left out: {why}")
    more = sorted({i for why, ids in by_reason.items() for i in ids} - {i for p in sorted(by_reason.items(), key=lambda kv: min(kv[1]))[:cap] for i in p[1]})
    if more:
        parts.append(f"{'run' if len(more) == 1 else 'runs'} {ranges(more)} left out for other reasons (verdict --detail)")
    return "; ".join(parts)


def explain(res: dict[str, Any], untested_reason: str | None = None) -> str:
    """One line a person reads: `falsified: at concurrency 64, 256, 512 tp4pp2/tp8 = 0.30, 0.39, 0.47;
    expected a > b`."""
    st = res["status"]
    # the prediction's version only where it says something: it was edited (v1 is every prediction)
    edited = ", edited after evidence" if res.get("edited_after_evidence") else ""
    ver = f" (prediction version {res['version']}{edited})" if res.get("version", 1) != 1 or edited else ""
    tail = f"expected {res['expect']}{ver}"
    if st == "untested":
        parts = [_headline(res, untested_reason), tail]
        if res.get("not_comparable"):
            parts.append(left_out_text(res["not_comparable"]))
        return "; ".join(parts)
    levels = res["levels"]
    per = res.get("per")
    parts = [_headline(res)]
    if st == "inconclusive":
        pick = [lv for lv in levels if lv["outcome"] == "unclear"] or levels
        parts.append(pick[0]["reason"])
    parts.append(tail)
    drift = sorted({lv["drift"] for lv in levels if lv.get("drift")})
    if drift:
        parts.append(drift[0] if len(drift) == 1 else f"{drift[0]} (and at {plural(len(drift) - 1, 'more level')})")
    if res["skipped"]:
        sk = ", ".join(str(next(iter(s["level"].values()), "")) for s in res["skipped"] if s["level"])
        parts.append(f"skipped {per} {sk} (one group only)" if sk else "some levels skipped")
    if res["not_comparable"]:
        parts.append(left_out_text(res["not_comparable"]))
    if res.get("loaded_runs"):
        n, of = len(res["loaded_runs"]), len(res["runs"])
        parts.append("every run it used was measured under load" if n >= of else
                     f"{n} of its {of} runs {'was' if n == 1 else 'were'} measured under load")
        if res.get("quiet"):
            parts.append(quiet_text(res["quiet"]))
    if res.get("load_differs"):
        parts.append(res["load_differs"])
    return "; ".join(parts)


def hypothesis_status(pred_statuses: list[str], live_runs: bool) -> str:
    """§5: falsified when any prediction is; confirmed when all are; no evidence → testing/open."""
    if "falsified" in pred_statuses:
        return "falsified"
    if pred_statuses and all(s == "confirmed" for s in pred_statuses):
        return "confirmed"
    if any(s in ("confirmed", "inconclusive") for s in pred_statuses):
        return "inconclusive"
    return "testing" if live_runs else "open"


def run_matches(pred: Any, labels: dict[str, Any]) -> bool:
    """Would a run with these labels be evidence for the prediction (in group a or b)?"""
    where = None
    if pred.where:
        try:
            where = E.parse_where(pred.where)
        except E.ExprError:
            return False
    if where is not None and not E.where_match(where, labels):
        return False
    for sel in (pred.a, pred.b):
        if all(k in labels and L.canonical(labels[k]) == L.canonical(v) for k, v in sel.items()):
            return True
    return False


# ---------------------------------------------------------------- rivals


def comparison_key(pred: Any) -> tuple[Any, ...]:
    def norm(sel: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, L.canonical(v)) for k, v in sel.items()))
    return (pred.metric, norm(pred.a), norm(pred.b), pred.per or "", (pred.where or "").replace(" ", ""))


def _invert(r: E.Region) -> E.Region:
    """The region of y/x when x/y (positive) is in r."""
    inv = lambda v: math.inf if v == 0 else (0.0 if math.isinf(v) else 1 / v)  # noqa: E731
    return E.Region(inv(r.hi), inv(max(r.lo, 0.0)), r.hi_open, r.lo_open)


invert = _invert  # public: core.discriminate turns a rival's region the same way


def region_of(pred: Prediction, ceilings: dict[str, float]) -> tuple[str, E.Region] | None:
    """The quantity a simple prediction tests and the region it claims, for rival overlap checks:
    the ratio a/b of the default metrics (`a > b*k`, `a/b in [lo, hi]`, `b > a` as a/b < 1), or a
    scaling fit (`k(input_len) < 0.3`). None: compound or other forms (no overlap asserted)."""
    cl = E.claim(pred.expr, ceilings)
    if cl is None:
        return None
    if cl.kind == "fit":
        f = cl.x
        assert isinstance(f, E.Fit)
        return f"{f.kind}({f.label}) of {f.ref.group}.{f.ref.metric or pred.metric}", cl.region
    if cl.kind == "ratio" and isinstance(cl.x, E.Ref) and isinstance(cl.y, E.Ref) \
            and cl.x.metric is None and cl.y.metric is None:
        if (cl.x.group, cl.y.group) == ("a", "b"):
            return "a/b", cl.region
        if (cl.x.group, cl.y.group) == ("b", "a"):
            return "a/b", _invert(cl.region)
    return None


def rival_overlaps(mine: list[Any], theirs: list[Any], ceilings: dict[str, float]) -> list[tuple[Any, Any]]:
    """Pairs (my prediction, rival prediction) on the same comparison whose claimed regions of the
    same quantity overlap: an experiment that cannot tell the two hypotheses apart. Swapped a/b is
    recognised."""
    out = []
    for p in mine:
        rp = region_of(p, ceilings)
        if rp is None:
            continue
        kp = comparison_key(p)
        for q in theirs:
            rq = region_of(q, ceilings)
            if rq is None:
                continue
            kq = comparison_key(q)
            region = rq[1]
            if kq == kp:
                pass
            elif rq[0] == "a/b" and (kq[0], kq[2], kq[1], kq[3], kq[4]) == kp:
                region = _invert(region)
            else:
                continue
            if rp[0] == rq[0] and E.regions_overlap(rp[1], region):
                out.append((p, q))
    return out


def fmt_region(r: tuple[str, E.Region]) -> str:
    return f"{r[0]} {r[1].text()}"


def rival_message(p: Any, q: Any, rival: str, ceilings: dict[str, float]) -> str:
    """The warning for two rival predictions whose expected outcomes overlap: the experiment cannot
    tell the hypotheses apart."""
    rp, rq = region_of(p, ceilings), region_of(q, ceilings)
    regions = f" ({fmt_region(rp)} vs {fmt_region(rq)})" if rp and rq else ""
    return (f"{p.id} and {q.id} (rival {rival}) predict overlapping outcomes{regions}: "
            "this experiment does not discriminate between them")
