"""Scaling claims (DESIGN §5): how a metric grows with a numeric label, as one fitted line.

A scaling claim (`k(input_len) in [0.9, 1.1]`) is judged on the exponent `k` of a least-squares
line through every run's point on log–log axes (y ∝ x^k: 1 is proportional, 0 is flat, −1 inversely
proportional), or on the slope of a line on linear axes (`slope(input_len)`: y grows by `slope` per
unit of x). Each run is one point, so repeats weigh in and their spread widens the interval; the
interval is Student's t on the fit's residuals (n − 2 degrees of freedom).

`fit` is the one place the line is computed: the verdict engine judges it, `compare --fit` shows it,
and a report draws it (`Fit.curve` gives the line at any x).

Pure and dependency-free apart from the t quantile (core.stats, scipy on first use).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from optlog.core.stats import CONF, sig, t_quantile

KINDS = ("k", "slope")  # the fitted quantity: exponent on log–log axes, slope on linear axes
MIN_POINTS = 3  # an interval needs n − 2 ≥ 1 degrees of freedom


@dataclass(frozen=True)
class Fit:
    """A fitted line: `points` (x, y) it went through, `k` (exponent or slope), `intercept` (of log y
    at log x = 0 on log axes, of y at x = 0 on linear ones), the interval `ci` of k at `conf` (None
    with fewer than 3 points or a single x), `n` points, `levels` distinct x values."""

    kind: str
    points: list[tuple[float, float]]
    k: float
    intercept: float
    ci: tuple[float, float] | None
    conf: float
    n: int
    levels: int
    r2: float | None = None
    dropped: list[tuple[float, float]] = field(default_factory=list)  # ≤ 0 on log axes

    @property
    def log(self) -> bool:
        return self.kind == "k"

    def at(self, x: float) -> float:
        """The fitted value at x (y = e^c · x^k on log axes, c + k·x on linear ones)."""
        if self.log:  # in logs: e^c and x^k alone may pass the largest double when their product does not
            try:
                return math.exp(self.intercept) * x ** self.k
            except (OverflowError, ZeroDivisionError):
                if x <= 0:
                    return math.nan
                e = self.intercept + self.k * math.log(x)
                return math.inf if e > 709.78 else math.exp(e)
        return self.intercept + self.k * x

    def curve(self, xs: list[float] | None = None) -> list[tuple[float, float]]:
        """The line at `xs` (default: every distinct x of the points), for drawing over the points."""
        xs = sorted({p[0] for p in self.points}) if xs is None else xs
        return [(x, self.at(x)) for x in xs]

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "axes": "log-log" if self.log else "linear", "k": sig(self.k),
                "intercept": sig(self.intercept), "ci": [sig(c) for c in self.ci] if self.ci else None,
                "confidence": sig(self.conf, 3), "n": self.n, "levels": self.levels,
                "r2": sig(self.r2, 3) if self.r2 is not None else None,
                "points": [[sig(x, 6), sig(y, 6)] for x, y in self.points]}


def fit(xs: list[float], ys: list[float], kind: str = "k", conf: float = CONF) -> Fit | None:
    """Least-squares line of y on x (log–log for `k`, linear for `slope`) with the t interval of its
    slope at `conf`. None when fewer than two distinct x values remain (nothing to fit)."""
    if kind not in KINDS:
        raise ValueError(f"unknown fit {kind!r}")
    pts = [(float(x), float(y)) for x, y in zip(xs, ys) if math.isfinite(x) and math.isfinite(y)]
    dropped: list[tuple[float, float]] = []
    if kind == "k":
        dropped = [p for p in pts if p[0] <= 0 or p[1] <= 0]
        pts = [p for p in pts if p[0] > 0 and p[1] > 0]
        u = [math.log(x) for x, _ in pts]
        v = [math.log(y) for _, y in pts]
    else:
        u = [x for x, _ in pts]
        v = [y for _, y in pts]
    n = len(pts)
    levels = len({x for x, _ in pts})
    if levels < 2:
        return None
    try:
        k, c, sse, sxx, syy = _line(u, v)
    except (ArithmeticError, ValueError):
        # squares past the largest double (values near 1e308 on linear axes): the same line on
        # axes divided by the largest magnitudes, scaled back (issue 42)
        su, sv = max(abs(a) for a in u) or 1.0, max(abs(b) for b in v) or 1.0
        k, c, sse, sxx, syy = _line([a / su for a in u], [b / sv for b in v])
        k, c = k * (sv / su), c * sv  # the sums of squares stay scaled: only their ratios are read
        se_scale = sv / su
    else:
        se_scale = 1.0
    r2 = 1 - sse / syy if syy > 0 else None
    ci: tuple[float, float] | None = None
    if n >= MIN_POINTS:
        se = math.sqrt(sse / (n - 2) / sxx) * se_scale
        half = t_quantile(conf, n - 2) * se if se > 0 else 0.0
        ci = (k - half, k + half)
    return Fit(kind, pts, k, c, ci, conf, n, levels, r2, dropped)


def _line(u: list[float], v: list[float]) -> tuple[float, float, float, float, float]:
    """Least squares of v on u: slope, intercept, the residual, u and v sums of squares."""
    n = len(u)
    mu, mv = math.fsum(u) / n, math.fsum(v) / n
    sxx = math.fsum((a - mu) ** 2 for a in u)
    sxy = math.fsum((a - mu) * (b - mv) for a, b in zip(u, v))
    k = sxy / sxx
    c = mv - k * mu
    sse = math.fsum((b - c - k * a) ** 2 for a, b in zip(u, v))
    syy = math.fsum((b - mv) ** 2 for b in v)
    if not all(math.isfinite(x) for x in (k, c, sse, sxx, syy)):
        raise OverflowError("a sum past the largest double")  # the caller scales the axes
    return k, c, sse, sxx, syy
