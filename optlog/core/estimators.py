"""The verdict's estimators (DESIGN §5): one small pure function per way of estimating a claim's
quantity, each returning a frozen `Estimate`, and the table that picks one by the claim's shape.

A claim (core.expr.Claim) tests a quantity: a ratio or a difference of two groups, one group's
value, or a fit's exponent or slope. What the data allow decides how it is estimated:

| kind        | design    | size   | estimator                                            |
|-------------|-----------|--------|------------------------------------------------------|
| value       | one group | equal  | exact (every value the same: the value)              |
| value       | one group | many   | bootstrap of the mean (≥ 5 values)                   |
| value       | one group | some   | t on logs (every value positive) or on values (3–4)  |
| value       | one group | few    | margin: the mean, judged with the margin rule (< 3)  |
| ratio, diff | paired    | equal  | exact (every block's ratio or difference the same)   |
| ratio, diff | paired    | some   | paired t (on the logs of per-block ratios)           |
| ratio, diff | unpaired  | equal  | exact                                                |
| ratio, diff | unpaired  | many   | bootstrap of the ratio or difference of means        |
| ratio, diff | unpaired  | some   | Welch's t (on logs for a ratio)                      |
| ratio, diff | unpaired  | few    | margin (< 3 a side, or a ratio of values not > 0)    |
| fit         | fit       | any    | least-squares fit (core.scaling)                     |

An estimator only estimates: the value, its interval at the confidence asked (None: no interval,
the margin rule judges the value) and how it was made. Judging it against the claimed region is
core.verdict's one rule. The bootstrap's distributions are drawn for all claims at once
(core.stats.Batch), so an estimator receives the distribution its plan asked for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from optlog.core.numfmt import plural
from optlog.core.scaling import Fit, fit as fit_line
from optlog.core.stats import CONF, MIN_TEST_N, MWU_N, mean, percentile_ci, t_one, t_quantile, t_welch


@dataclass(frozen=True)
class Sample:
    """What a claim is estimated from at one level: its kind (ratio | diff | value | fit), its
    design (paired | unpaired | one group | fit) and the values: x of the first group, y of the
    second, the per-block (x, y) means of a paired design with what the blocks are and how many
    runs had no partner, a fit's points with its kind (k | slope) and label."""

    kind: str
    design: str
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    pairs: tuple[tuple[float, float], ...] = ()
    blocking: str = ""
    unpaired_left: int = 0
    points: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    fit_kind: str = ""
    fit_label: str = ""


@dataclass(frozen=True)
class Estimate:
    """A claim's quantity as estimated: `value` (None: it cannot be), the interval [`lo`, `hi`] at
    `confidence` (None: no interval, judged by the margin rule), the `statistic` both are of, the
    `method` as records name it, `n` values a side (pairs of a paired design, points of a fit),
    `detail` (how, in the words of a reason), the runs `left_out` of it and why, a `fit`'s line,
    and `unusable`: why nothing could be estimated (`no fit: …`)."""

    method: str
    statistic: str = ""
    value: float | None = None
    lo: float | None = None
    hi: float | None = None
    confidence: float = CONF
    n: tuple[int, ...] = ()
    detail: str = ""
    left_out: tuple[tuple[int, str], ...] = ()
    fit: Fit | None = None
    unusable: str = ""

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.lo is None or self.hi is None else (self.lo, self.hi)


Estimator = Callable[[Sample, float, Any], Estimate]

_STAT = {"ratio": "ratio of means", "diff": "difference of means", "value": "mean"}


def _t(centre: float, se: float, df: float, conf: float, logs: bool) -> tuple[float, float, float]:
    h = t_quantile(conf, df) * se
    if logs:
        return math.exp(centre), math.exp(centre - h), math.exp(centre + h)
    return centre, centre - h, centre + h


def exact(s: Sample, conf: float, dist: Any = None) -> Estimate:
    """Every value (every block's ratio or difference) the same: the quantity is that number."""
    if s.design == "paired":
        x, y = s.pairs[0]
    else:
        x, y = s.x[0], (s.y[0] if s.y else 0.0)
    v = x / y if s.kind == "ratio" else (x - y if s.kind == "diff" else x)
    return Estimate("exact", _STAT[s.kind], v, v, v, conf, _n(s))


def paired(s: Sample, conf: float, dist: Any = None) -> Estimate:
    """Paired t over the blocks: the geometric mean of per-block ratios (t on their logs), or the
    mean of per-block differences."""
    block = "block" if "block label" in s.blocking else "cycle"
    if s.kind == "ratio":
        d, se, df = t_one([math.log(x / y) for x, y in s.pairs])
        v, lo, hi = _t(d, se, df, conf, logs=True)
        stat, method = f"geometric mean of per-{block} ratios", "paired-t-log"
    else:
        d, se, df = t_one([x - y for x, y in s.pairs])
        v, lo, hi = _t(d, se, df, conf, logs=False)
        stat, method = f"mean of per-{block} differences", "paired-t"
    left = ((s.unpaired_left, "without a partner"),) if s.unpaired_left else ()
    words = "".join(f", {plural(k, 'run')} {why} left out" for k, why in left)
    return Estimate(method, stat, v, lo, hi, conf, (len(s.pairs),),
                    f"paired by {s.blocking}, {len(s.pairs)} pairs{words}", left)


def bootstrap(s: Sample, conf: float, dist: Any) -> Estimate:
    """The percentile interval of the bootstrap distribution (core.stats.Batch) around the ratio
    or difference of means, or the mean."""
    if dist is None:  # core.stats.Batch: its numbers failed
        raise OverflowError("no bootstrap distribution")
    lo, hi = percentile_ci(dist, conf)
    if s.kind == "ratio":
        v = mean(list(s.x)) / mean(list(s.y))
    elif s.kind == "diff":
        v = mean(list(s.x)) - mean(list(s.y))
    else:
        v = mean(list(s.x))
    detail = f"unpaired, bootstrap, n={len(s.x)}+{len(s.y)}" if s.kind != "value" else f"bootstrap, n={len(s.x)}"
    return Estimate("bootstrap", _STAT[s.kind], v, lo, hi, conf, _n(s), detail)


def welch(s: Sample, conf: float, dist: Any = None) -> Estimate:
    """Welch's t between two groups: on logs for a ratio (the ratio of geometric means)."""
    n = f"n={len(s.x)}+{len(s.y)}"
    if s.kind == "ratio":
        d, se, df = t_welch([math.log(v) for v in s.x], [math.log(v) for v in s.y])
        v, lo, hi = _t(d, se, df, conf, logs=True)
        return Estimate("welch-log", "ratio of geometric means", v, lo, hi, conf, _n(s), f"unpaired, Welch on logs, {n}")
    d, se, df = t_welch(list(s.x), list(s.y))
    v, lo, hi = _t(d, se, df, conf, logs=False)
    return Estimate("welch", "difference of means", v, lo, hi, conf, _n(s), f"unpaired, Welch, {n}")


def t(s: Sample, conf: float, dist: Any = None) -> Estimate:
    """One group's t interval: on logs when every value is positive (the geometric mean)."""
    logs = all(v > 0 for v in s.x)
    d, se, df = t_one([math.log(v) for v in s.x] if logs else list(s.x))
    v, lo, hi = _t(d, se, df, conf, logs)
    return Estimate("t-log" if logs else "t", "geometric mean" if logs else "mean", v, lo, hi, conf, _n(s),
                    f"t on {'logs' if logs else 'values'}, n={len(s.x)}")


def margin(s: Sample, conf: float, dist: Any = None) -> Estimate:
    """Too few values for an interval: the ratio or difference of means, or the mean (None: a
    ratio over a mean of 0), for the margin rule."""
    v: float | None
    if s.kind == "ratio":
        my = mean(list(s.y))
        v = mean(list(s.x)) / my if my else None
    elif s.kind == "diff":
        v = mean(list(s.x)) - mean(list(s.y))
    else:
        v = mean(list(s.x))
    return Estimate("margin", _STAT[s.kind], v, None, None, conf, _n(s))


def fit(s: Sample, conf: float, dist: Any = None) -> Estimate:
    """A least-squares line through the points (core.scaling): its exponent (log-log) or slope,
    with the t interval of it when there are enough points."""
    xs, ys = s.points
    f = fit_line(list(xs), list(ys), s.fit_kind, conf)
    if f is None:
        return Estimate("fit", n=(len(xs),),
                        unusable=f"no fit: {s.fit_label} has fewer than 2 values among {plural(len(xs), 'run')}")
    lo, hi = f.ci if f.ci is not None else (None, None)
    stat = "exponent (log-log least squares)" if s.fit_kind == "k" else "slope (least squares)"
    return Estimate("fit", stat, f.k, lo, hi, conf, (f.n,), f"fit over {f.levels} values of {s.fit_label}, {f.n} runs",
                    fit=f)


def _n(s: Sample) -> tuple[int, ...]:
    return (len(s.x),) if s.kind == "value" else (len(s.x), len(s.y))


# ---------------------------------------------------------------- the table


ESTIMATORS: dict[str, Estimator] = {
    "exact": exact, "paired": paired, "bootstrap": bootstrap, "welch": welch, "t": t, "margin": margin, "fit": fit,
}

BATCHED = frozenset({"bootstrap"})  # estimators whose distribution is drawn in core.stats.Batch

TABLE: dict[tuple[str, str, str], str] = {
    ("value", "one group", "equal"): "exact",
    ("value", "one group", "many"): "bootstrap",
    ("value", "one group", "some"): "t",
    ("value", "one group", "few"): "margin",
    ("ratio", "paired", "equal"): "exact",
    ("ratio", "paired", "some"): "paired",
    ("diff", "paired", "equal"): "exact",
    ("diff", "paired", "some"): "paired",
    ("ratio", "unpaired", "equal"): "exact",
    ("ratio", "unpaired", "many"): "bootstrap",
    ("ratio", "unpaired", "some"): "welch",
    ("ratio", "unpaired", "few"): "margin",
    ("diff", "unpaired", "equal"): "exact",
    ("diff", "unpaired", "many"): "bootstrap",
    ("diff", "unpaired", "some"): "welch",
    ("diff", "unpaired", "few"): "margin",
    ("fit", "fit", "some"): "fit",
}


def size(s: Sample) -> str:
    """How much the data allow: `equal` (every value, or every block's quantity, the same: from 3
    values unpaired), `many` (≥ 5 a side: the bootstrap), `some` (3–4: a t interval; any paired
    design or fit), `few` (fewer, or a ratio of values that are not all positive: no logs)."""
    if s.design == "fit":
        return "some"
    if s.design == "paired":
        per = [x / y if s.kind == "ratio" else x - y for x, y in s.pairs]
        return "equal" if len(set(per)) == 1 else "some"
    if s.kind == "value":
        n, equal, logs_ok = len(s.x), len(set(s.x)) == 1, True
    else:
        n, equal = min(len(s.x), len(s.y)), len(set(s.x)) == 1 and len(set(s.y)) == 1
        logs_ok = s.kind == "diff" or (all(v > 0 for v in s.x) and all(v > 0 for v in s.y))
    if n < MIN_TEST_N or not logs_ok:
        return "few"
    if equal:
        return "equal"
    return "many" if n >= MWU_N else "some"


def choose(s: Sample) -> str:
    """The estimator for a sample: TABLE at its (kind, design, size)."""
    return TABLE[(s.kind, s.design, size(s))]


def estimate(name: str, s: Sample, conf: float, dist: Any = None) -> Estimate:
    """Run the estimator `name` (a TABLE entry) on `s` at confidence `conf`."""
    return ESTIMATORS[name](s, conf, dist)
