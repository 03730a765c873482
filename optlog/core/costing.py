"""What a proposed launch costs, from the runs already measured (issue 45) — pure.

A proposal states its number of runs and an estimated time before anything is launched. The time of
one run at a level of the proposed axis is the median duration of the runs measured at that level
(the nearest level measured, on a log scale, for a new one); where the bench's request count of a
new point differs from the measured one's (a workload scaled to fill a larger batch), the run's time
lies between the measured median (the requests overlap fully) and the median scaled by the request
count (they do not overlap at all): the estimate is that range and its geometric middle.

`like` picks the measured runs a planned launch resembles (for `run launch --dry-run`, which knows
no launch it derives from): the same values of every label the plan holds constant, else of its
names (server, model: the labels that are not numbers); `plan_axis` is the label the plan varies most.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from optlog.core.numfmt import fmt_count, fmt_duration, fmt_seconds, fmt_value


@dataclass
class Measured:
    """One run already measured: its labels, how long it took, the requests its bench sent (None: unknown)."""

    labels: dict[str, Any]
    seconds: float
    prompts: float | None = None


@dataclass
class Planned:
    """One run a proposal would make: its labels and the requests its bench would send."""

    labels: dict[str, Any]
    prompts: float | None = None


@dataclass
class Cost:
    runs: int
    seconds: float | None  # the estimate (None: no run measured to estimate from)
    low_s: float | None
    high_s: float | None
    axis: str | None
    by_level: list[dict[str, Any]] = field(default_factory=list)  # [{level, median_s, runs}] measured
    measured: int = 0  # the measured runs it is estimated from

    def as_dict(self) -> dict[str, Any]:
        r = lambda x: None if x is None else round(x, 1)  # noqa: E731
        return {"runs": self.runs, "estimate_s": r(self.seconds), "low_s": r(self.low_s), "high_s": r(self.high_s),
                "axis": self.axis, "by_level": self.by_level, "measured": self.measured}

    def text(self) -> str:
        head = f"{fmt_count(self.runs)} run{'s' if self.runs != 1 else ''}"
        if self.seconds is None or self.low_s is None or self.high_s is None:
            return head + ", time unknown (no run measured yet)"
        rng = "" if fmt_duration(self.low_s) == fmt_duration(self.high_s) else \
            f" ({fmt_duration(self.low_s)}–{fmt_duration(self.high_s)})"
        basis = "; ".join(f"{fmt_value(b['level'])}: {fmt_seconds(b['median_s'])} ({b['runs']})" for b in self.by_level)
        per = f" by {self.axis}" if self.axis else ""
        return (f"{head}, about {fmt_duration(self.seconds)}{rng} from {fmt_count(self.measured)} measured "
                f"run{'s' if self.measured != 1 else ''}: the median{per}" + (f" ({basis})" if basis else ""))


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _same(a: Any, b: Any) -> bool:
    na, nb = _num(a), _num(b)
    return na == nb if na is not None and nb is not None else str(a) == str(b)


def _nearest(level: Any, levels: list[Any]) -> Any:
    """The measured level nearest to `level`: equal, else nearest on a log scale, else the largest."""
    for x in levels:
        if _same(x, level):
            return x
    n = _num(level)
    nums = [(x, _num(x)) for x in levels]
    cands = [(x, v) for x, v in nums if v is not None and v > 0]
    if n is not None and n > 0 and cands:
        return min(cands, key=lambda xv: abs(math.log(n / xv[1])))[0]
    return levels[-1]


def estimate(planned: list[Planned], measured: list[Measured], axis: str | None) -> Cost:
    """The cost of `planned`: its run count, and its time from the medians of `measured` by `axis`."""
    groups: dict[str, list[Measured]] = {}
    order: list[Any] = []
    for m in measured:
        if not (m.seconds >= 0 and math.isfinite(m.seconds)):
            continue
        lv = m.labels.get(axis) if axis else None
        key = repr(_num(lv) if _num(lv) is not None else lv)
        if key not in groups:
            order.append(lv)
        groups.setdefault(key, []).append(m)
    if not groups:
        return Cost(len(planned), None, None, None, axis)
    keyed = {repr(_num(lv) if _num(lv) is not None else lv): lv for lv in order}
    levels = sorted(order, key=lambda x: (_num(x) is None, _num(x) or 0, str(x)))
    by_level = []
    stats: dict[str, tuple[float, float | None]] = {}
    for lv in levels:
        k = next(k for k, v in keyed.items() if v is lv)
        ms = groups[k]
        ps = [m.prompts for m in ms if m.prompts]
        stats[k] = (median(m.seconds for m in ms), median(ps) if ps else None)
        by_level.append({"level": lv, "median_s": round(stats[k][0], 2), "runs": len(ms)})
    low = high = mid = 0.0
    for p in planned:
        lv = _nearest(p.labels.get(axis) if axis else None, levels)
        k = repr(_num(lv) if _num(lv) is not None else lv)
        secs, prompts = stats[k]
        ratio = p.prompts / prompts if p.prompts and prompts else 1.0
        lo, hi = secs * min(1.0, ratio), secs * max(1.0, ratio)
        low, high, mid = low + lo, high + hi, mid + math.sqrt(lo * hi)
    return Cost(len(planned), mid, low, high, axis, by_level if axis else [], sum(len(g) for g in groups.values()))


def plan_axis(planned: list[dict[str, Any]]) -> str | None:
    """The label a plan varies over the most levels (a number before a name; None: it varies none)."""
    best: tuple[int, int, str] | None = None
    for k in dict.fromkeys(k for lab in planned for k in lab if k != "repeat"):
        n = len({repr(lab.get(k)) for lab in planned})
        if n > 1:
            key = (n, int(all(_num(lab.get(k)) is not None for lab in planned)), k)
            if best is None or key[:2] > best[:2]:
                best = key
    return best[2] if best else None


def like(planned: list[dict[str, Any]], measured: list[Measured], axis: str | None) -> tuple[list[Measured], str]:
    """The measured runs that resemble a plan: with the plan's value of every label it holds constant
    (the varied labels aside), else of every such label that is a name, not a number (server, model);
    with the axis label when there is one. (runs, what they share); ([], "") when none does."""
    if not planned:
        return [], ""
    const = {k: v for k, v in planned[0].items() if k not in ("repeat", axis)
             and all(k in lab and _same(lab[k], v) for lab in planned)}
    with_axis = [m for m in measured if axis is None or axis in m.labels]
    names = [k for k, v in const.items() if _num(v) is None]
    for keys, how in ((list(const), "the same labels"), (names, "the same names")):
        got = [m for m in with_axis if all(k in m.labels and _same(m.labels[k], const[k]) for k in keys)]
        if keys and got:
            return got, f"{how}: {', '.join(f'{k}={const[k]}' for k in keys)}"
    return [], ""
