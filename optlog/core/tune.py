"""The pure parts of `optlog tune`: the search space, constraints over metrics, the Pareto front and
the winner's curse. No I/O and no optimiser here (Optuna lives in `service.tune`), so each piece is
tested on its own and the service only orchestrates.

- A search parameter is an integer or float range (optionally on a log scale or with a step) or a
  list of choices, active only `when` a condition over the parameters before it holds (the `--where`
  language of `core.expr`). `active_params` walks the space in order, as a define-by-run sampler does.
- A constraint is a `--where`-style condition over a trial's metrics (`p99_ttft_ms <= 200`,
  `failed == 0`). Optuna wants a number per constraint, feasible when ≤ 0: `violations` gives the
  distance to the boundary of each comparison (0 when it holds).
- `pareto_front` keeps the points no other point dominates; `winners_curse` sets a first reading
  against its re-measured median.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from optlog.core import expr as E, stats as S
from optlog.core.numfmt import plural
from optlog.core import labels as L

MISSING = 1e12  # the violation of a constraint whose metric the trial did not report


@dataclass(frozen=True)
class SearchParam:
    """One dimension of a search space (validated by `runs.spec`)."""

    name: str
    kind: str  # "int" | "float" | "choice"
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()
    when: Any = None  # a parsed `core.expr` where-condition over earlier parameters, or None
    when_text: str | None = None

    def grid(self) -> list[Any]:
        """Every value of the dimension (a grid needs a finite one: ints, stepped floats, choices)."""
        if self.kind == "choice":
            return list(self.choices)
        assert self.low is not None and self.high is not None
        if self.kind == "int":
            step = int(self.step or 1)
            return list(range(int(self.low), int(self.high) + 1, step))
        if self.step is None:
            raise ValueError(f"search.{self.name}: a grid needs a `step` for a float range")
        n = int(math.floor((self.high - self.low) / self.step + 1e-9))
        return [round(self.low + i * self.step, 12) for i in range(n + 1)]

    def count(self) -> int:
        if self.kind == "choice":
            return len(self.choices)
        assert self.low is not None and self.high is not None
        if self.kind == "int":
            return len(range(int(self.low), int(self.high) + 1, int(self.step or 1)))
        if self.step is None:
            raise ValueError(f"search.{self.name}: a grid needs a `step` for a float range")
        return int(math.floor((self.high - self.low) / self.step + 1e-9)) + 1

    @property
    def first(self) -> Any:
        """The value used to check the spec's templates before any trial (the range's low end)."""
        if self.kind == "choice":
            return self.choices[0]
        return int(self.low) if self.kind == "int" else self.low  # type: ignore[arg-type]


def active_params(space: Sequence[SearchParam], choose: Callable[[SearchParam], Any]) -> dict[str, Any]:
    """Walk the space in order: a parameter whose `when` fails on the values so far is left out."""
    got: dict[str, Any] = {}
    for p in space:
        if p.when is not None and not E.where_match(p.when, got):
            continue
        got[p.name] = choose(p)
    return got


def grid_points(space: Sequence[SearchParam]) -> list[dict[str, Any]]:
    """Every distinct configuration of a finite space, conditional parameters honoured."""
    out: list[dict[str, Any]] = [{}]
    for p in space:
        nxt: list[dict[str, Any]] = []
        for cfg in out:
            if p.when is not None and not E.where_match(p.when, cfg):
                nxt.append(cfg)
            else:
                nxt.extend({**cfg, p.name: v} for v in p.grid())
        out = nxt
    return out


def grid_size(space: Sequence[SearchParam], cap: int) -> int:
    """An upper bound of the grid's size (conditions ignored), stopping past `cap`: a few lines of
    YAML can ask for millions. Raises ValueError for a float range without a step."""
    n = 1
    for p in space:
        n *= max(1, p.count())
        if n > cap:
            return n
    return n


# ----------------------------------------------------------------------------- constraints


def parse_constraint(text: str) -> Any:
    """A `--constraint`: comparisons of metrics with numbers, joined by and/or/not. Raises
    `core.expr.ExprError` (with a column) on anything else."""
    cond = E.parse_where(text)

    def check(c: Any) -> None:
        if isinstance(c, E.WBool):
            for i in c.items:
                check(i)
            return
        vals = c.value if isinstance(c.value, tuple) else (c.value,)
        if any(L.as_number(v) is None for v in vals):
            raise E.ExprError(f"a constraint compares the metric {c.label!r} with a number "
                              f"(e.g. `{c.label} <= 200`), got {c.value!r}", 1, text)

    check(cond)
    return cond


def constraint_metrics(cond: Any) -> list[str]:
    return E.where_labels(cond)


def violation(cond: Any, metrics: dict[str, float]) -> float:
    """How far `metrics` are from satisfying `cond`: 0 when it holds, else a positive distance."""
    if isinstance(cond, E.WBool):
        parts = [violation(i, metrics) for i in cond.items]
        if cond.op == "and":
            return sum(parts)
        if cond.op == "or":
            return min(parts)
        return 0.0 if parts[0] > 0 else 1.0
    v = metrics.get(cond.label)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    x = float(v)
    if cond.op in ("in", "not in"):
        vals = [float(L.as_number(t)) for t in cond.value]  # type: ignore[arg-type]
        hit = any(x == t for t in vals)
        if cond.op == "not in":
            return 1.0 if hit else 0.0
        return 0.0 if hit else min(abs(x - t) for t in vals)
    y = float(L.as_number(cond.value))  # type: ignore[arg-type]
    tiny = 1e-9 * max(1.0, abs(y))
    if cond.op == "==":
        return abs(x - y)
    if cond.op == "!=":
        return 0.0 if x != y else 1.0
    if cond.op == "<=":
        return max(0.0, x - y)
    if cond.op == "<":
        return 0.0 if x < y else x - y + tiny
    if cond.op == ">=":
        return max(0.0, y - x)
    return 0.0 if x > y else y - x + tiny  # ">"


def violations(conds: Sequence[Any], metrics: dict[str, float]) -> list[float]:
    return [violation(c, metrics) for c in conds]


def feasible(v: Sequence[float] | None) -> bool:
    return v is None or all(x <= 0 for x in v)


# ----------------------------------------------------------------------------- results


def dominates(a: Sequence[float], b: Sequence[float], directions: Sequence[str]) -> bool:
    """True when `a` is at least as good as `b` in every objective and better in one."""
    better = False
    for x, y, d in zip(a, b, directions):
        if d == "maximize":
            x, y = -x, -y
        if x > y:
            return False
        if x < y:
            better = True
    return better


def pareto_front(points: Sequence[Sequence[float]], directions: Sequence[str]) -> list[int]:
    """The indices of the points no other point dominates (duplicates all kept), in input order."""
    return [i for i, p in enumerate(points)
            if not any(dominates(q, p, directions) for j, q in enumerate(points) if j != i)]


def best_index(points: Sequence[Sequence[float]], direction: str) -> int | None:
    if not points:
        return None
    key = (lambda i: points[i][0]) if direction == "maximize" else (lambda i: -points[i][0])
    return max(range(len(points)), key=key)


def median(xs: Sequence[float]) -> float | None:
    return float(statistics.median(xs)) if xs else None


def winners_curse(first: float | None, remeasured: Sequence[float]) -> dict[str, Any]:
    """The best trial's first reading against its re-measured median: how much of its lead was luck.
    `shrink_pct` is (first − median) / median × 100 (positive: the first reading flattered it)."""
    med = median([float(x) for x in remeasured])
    shrink = None
    if first is not None and med is not None and med != 0.0:
        shrink = (first - med) / abs(med) * 100.0
    return {"first": first, "median": med, "n": len(remeasured), "values": [float(x) for x in remeasured],
            "shrink_pct": None if shrink is None else round(shrink, 3)}


def separation(best: Sequence[float], other: Sequence[float]) -> dict[str, Any]:
    """Whether the re-measured best is told apart from the runner-up by the verdicts' statistics
    (`core.stats`): Mann–Whitney U with ≥ 5 repeats a side, Welch's t on logs with 3–4, none with
    fewer (the verdicts' margin rules need a prediction's margin, which a search has not)."""
    n = min(len(best), len(other))
    tier = S.tier(n)
    positive = min([*best, *other], default=0.0) > 0
    if tier == "margin" or (tier == "welch" and not positive):
        return {"test": None, "p": None, "distinct": None, "n": n,
                "why": f"{plural(n, 'repeat')} a side: too few to tell them apart (≥ {S.MIN_TEST_N}, ≥ {S.MWU_N} for values ≤ 0)"}
    b = S.Batch()
    if tier == "rank":
        h = b.add("mwu", [float(x) for x in best], [float(x) for x in other])
        p, test = float(b.run()[h]), "mann-whitney"
    else:
        h = b.add("welch_log", [float(x) for x in best], [float(x) for x in other])
        p, test = float(b.run()[h][0]), "welch-log"
    # three significant digits, as a verdict keeps its p (`round(p, 6)` turned a tiny p into 0)
    return {"test": test, "p": S.sig(p, 3), "distinct": p < S.ALPHA, "n": n}


# ----------------------------------------------------------------------------- pruning


def upper_bound(cond: Any) -> bool:
    """A constraint a larger load can only break further: one `metric <= N` / `metric < N`, or an
    `and` of such (p99 latency, failed requests). Anything else (a lower bound, an `or`) is not."""
    if isinstance(cond, E.WBool):
        return cond.op == "and" and all(upper_bound(c) for c in cond.items)
    return cond.op in ("<=", "<")


def pruned_by(params: dict[str, Any], axis: str, conds: Sequence[Any],
              earlier: Sequence[tuple[int, dict[str, Any], Sequence[float] | None]]) -> tuple[int, int] | None:
    """(trial, constraint index) of an earlier trial that equals `params` in every parameter but
    `axis`, had a lower `axis` value and broke an upper-bound constraint: at a higher load it would
    break it again, so `params` need not be measured. None when there is none."""
    x = L.as_number(params.get(axis))
    if x is None:
        return None
    rest = {k: v for k, v in params.items() if k != axis}
    for number, p, viol in earlier:
        y = L.as_number(p.get(axis))
        if y is None or y >= x or not viol or {k: v for k, v in p.items() if k != axis} != rest:
            continue
        for i, (c, v) in enumerate(zip(conds, viol)):
            if v > 0 and upper_bound(c):
                return number, i
    return None
