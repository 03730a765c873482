"""Statistics for verdicts (DESIGN §5: one estimation rule for every claim) and tune's separation test.

The verdict engine (optlog.core.verdict) estimates each claim's quantity with an interval:
- ≥ 5 repeats a side, unpaired: a percentile bootstrap of the ratio of means, the difference of
  means or the mean (`Batch` kind `boot`: the distribution; `percentile_ci` reads the interval at
  the confidence the number of levels asks for, `bonferroni`);
- 3–4 repeats: Student/Welch t intervals (`t_one`, `t_welch`, `t_quantile`), on logs for ratios;
- paired designs: a t interval of the per-block log ratios (or differences);
- fewer than 3: the margin rules (in optlog.core.verdict).

Determinism (verdicts must be byte-identical when the evidence did not change): the bootstrap uses a
fixed seed and one index matrix per sample shape, applied to every row of a batch, so a level's
interval depends only on its own values. Mann–Whitney's exact/asymptotic choice looks at ties in the
whole batch, so its batches are split by "has ties" too.

scipy.stats is imported only when a test is actually needed (it costs a noticeable part of a second).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

ALPHA = 0.05
CONF = 0.95
N_RESAMPLES = 2000
SEED = 20260
MIN_TEST_N = 3  # below this, the margin rules
MWU_N = 5  # from this, rank tests and the bootstrap


def tier(n_min: int) -> str:
    return "rank" if n_min >= MWU_N else ("welch" if n_min >= MIN_TEST_N else "margin")


def holm(pvals: list[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    m = len(pvals)
    order = sorted(range(m), key=lambda i: pvals[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        adj = min(1.0, (m - rank) * pvals[i])
        running = max(running, adj)
        out[i] = running
    return out


def _has_ties(values: list[float]) -> bool:
    return len(set(values)) < len(values)


@dataclass
class Batch:
    """Collect tests, then `run()` them grouped by kind and shape; results by handle."""

    jobs: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)

    def add(self, kind: str, *data: Any) -> int:
        self.jobs.append((kind, data))
        return len(self.jobs) - 1

    # kinds and their data:
    #   mwu (x, y)            -> p   (tune's separation of the best from the runner-up)
    #   welch_log (x, y)      -> (p, d, lo, hi): d = mean log x - mean log y, CI of d
    #   boot (stat, x, y)     -> the sorted bootstrap distribution (numpy array, N_RESAMPLES values)
    #                            of stat ∈ ratio (mean x / mean y), diff (mean x − mean y), mean (x);
    #                            its interval at any confidence is read off later (`percentile_ci`)
    def run(self) -> list[Any]:
        """Run every job; numerical warnings of the libraries (near-constant data, say) are kept
        out of the user's terminal: the verdict engine decides degenerate data exactly before it
        gets here, and whatever else a test warns about is in its p-value and interval."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._run()

    def _run(self) -> list[Any]:
        self.results = [None] * len(self.jobs)
        if not self.jobs:
            return self.results
        import numpy as np  # deferred: numpy only where numbers are crunched

        groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
        for i, (kind, data) in enumerate(self.jobs):
            key: tuple[Any, ...]
            if kind == "mwu":
                key = (kind, len(data[0]), len(data[1]), _has_ties(list(data[0]) + list(data[1])))
            elif kind == "welch_log":
                key = (kind, len(data[0]), len(data[1]))
            elif kind == "boot":
                key = (kind, data[0], len(data[1]), len(data[2]) if data[2] is not None else 0)
            else:
                key = (kind, len(data[0]))
            groups[key].append(i)

        for key, idx in groups.items():
            try:
                kind = key[0]
                if kind in ("mwu", "welch_log"):
                    from scipy import stats as st  # deferred: scipy (~150 ms) only for a test statistic
                if kind == "mwu":
                    X = np.array([self.jobs[i][1][0] for i in idx], dtype=float)
                    Y = np.array([self.jobs[i][1][1] for i in idx], dtype=float)
                    r = st.mannwhitneyu(X, Y, alternative="two-sided", axis=1)
                    for j, i in enumerate(idx):
                        self.results[i] = float(np.atleast_1d(r.pvalue)[j])
                elif kind == "welch_log":
                    X = np.log(np.array([self.jobs[i][1][0] for i in idx], dtype=float))
                    Y = np.log(np.array([self.jobs[i][1][1] for i in idx], dtype=float))
                    r = st.ttest_ind(X, Y, equal_var=False, axis=1)
                    ci = r.confidence_interval(CONF)
                    d = X.mean(axis=1) - Y.mean(axis=1)
                    for j, i in enumerate(idx):
                        p = float(np.atleast_1d(r.pvalue)[j])
                        lo, hi = float(np.atleast_1d(ci.low)[j]), float(np.atleast_1d(ci.high)[j])
                        if math.isnan(p):  # no spread at all: the difference is what it is
                            p, lo, hi = (0.0 if d[j] != 0 else 1.0), float(d[j]), float(d[j])
                        self.results[i] = (p, float(d[j]), lo, hi)
                elif kind == "boot":
                    # one index matrix per sample shape (fixed seed), applied to every row: a level's
                    # distribution depends only on its own values, whatever else is in the batch
                    stat, nx, ny = key[1], key[2], key[3]
                    rng = np.random.default_rng(SEED)
                    ix = rng.integers(0, nx, size=(N_RESAMPLES, nx))
                    iy = rng.integers(0, ny, size=(N_RESAMPLES, ny)) if stat != "mean" else None
                    X = np.array([self.jobs[i][1][1] for i in idx], dtype=float)
                    Yb = np.array([self.jobs[i][1][2] for i in idx], dtype=float) if iy is not None else None
                    dist = _boot(np, stat, X, Yb, ix, iy)
                    bad = ~np.isfinite(dist).all(axis=1)
                    if bad.any():  # sums past the largest double (values near 1e308): each row on its own scale
                        dist[bad] = _boot(np, stat, X[bad], Yb[bad] if Yb is not None else None, ix, iy, scaled=True)
                    dist.sort(axis=1)
                    for j, i in enumerate(idx):
                        self.results[i] = dist[j]
            except (ArithmeticError, ValueError):  # one batch's numbers fail alone: its levels say so
                for i in idx:
                    self.results[i] = None
        return self.results


def _boot(np: Any, stat: str, X: Any, Y: Any, ix: Any, iy: Any, scaled: bool = False) -> Any:
    """Bootstrap distributions of `stat` for the rows of X (and Y) under the resample indices.
    `scaled`: each row divided by its largest magnitude first and the statistic scaled back, so
    means of values near 1e308 do not overflow (a result past the largest double stays inf, and
    the engine reads it as no interval)."""
    def scale(A: Any) -> Any:
        s = np.abs(A).max(axis=1, keepdims=True) if scaled else np.ones((A.shape[0], 1))
        return np.where(s > 0, s, 1.0)
    sx = scale(X)
    mx = (X / sx)[:, ix].mean(axis=2)
    if stat == "mean":
        return mx * sx
    sy = scale(Y)
    my = (Y / sy)[:, iy].mean(axis=2)
    if stat == "ratio":
        return (mx / my) * (sx / sy)
    return mx * sx - my * sy


def percentile_ci(dist: Any, conf: float) -> tuple[float, float]:
    """The percentile interval at confidence `conf` of a sorted bootstrap distribution."""
    import numpy as np  # deferred: only where a bootstrap ran

    tail = (1 - conf) / 2
    lo, hi = np.quantile(dist, [tail, 1 - tail])
    return float(lo), float(hi)


def t_quantile(conf: float, df: float) -> float:
    """The two-sided Student t critical value at confidence `conf` (scipy, imported on first use)."""
    from scipy import stats as st  # deferred: scipy only when an interval is computed

    return float(st.t.ppf(1 - (1 - conf) / 2, df))


def t_one(values: list[float]) -> tuple[float, float, float]:
    """Mean, standard error and degrees of freedom of one sample (for a t interval).

    Any finite doubles: when the squares of the deviations pass the largest double (values near
    1e308), the spread is computed on the values divided by the largest of them (issue 42); a
    standard error too large for a double is inf, which the caller reads as "no interval"."""
    n = len(values)
    m = mean(values)
    if n < 2:
        return m, 0.0, float(n - 1)
    try:
        var = math.fsum((v - m) ** 2 for v in values) / (n - 1)
        if math.isfinite(var):
            return m, math.sqrt(var / n), float(n - 1)
    except (OverflowError, ValueError):
        pass
    scale = max(abs(v) for v in values)
    ms = mean([v / scale for v in values])
    var = math.fsum((v / scale - ms) ** 2 for v in values) / (n - 1)
    return m, math.sqrt(var / n) * scale, float(n - 1)


def t_welch(x: list[float], y: list[float]) -> tuple[float, float, float]:
    """Difference of means, its standard error and the Welch–Satterthwaite degrees of freedom
    (from the errors divided by the larger one when their 4th powers would overflow)."""
    mx, sx, _ = t_one(x)
    my, sy, _ = t_one(y)
    nx, ny = len(x), len(y)
    scale = 1.0
    if max(sx, sy) > 1e70 or 0 < max(sx, sy) < 1e-70:
        scale = max(sx, sy)
        if not math.isfinite(scale):
            return mx - my, scale, float(nx + ny - 2)
    ux, uy = sx / scale, sy / scale
    se2 = ux * ux + uy * uy
    den = (ux ** 4 / (nx - 1) if nx > 1 else 0.0) + (uy ** 4 / (ny - 1) if ny > 1 else 0.0)
    df = se2 * se2 / den if den > 0 else float(nx + ny - 2)
    return mx - my, math.sqrt(se2) * scale, df


def bonferroni(levels: int) -> float:
    """The confidence of each of `levels` intervals so that all hold together at CONF."""
    return 1 - (1 - CONF) / max(1, levels)


def mean(xs: list[float]) -> float:
    """The mean of any finite doubles: a sum past the largest double (two values near 1e308) is
    summed as values divided by their count instead, whose mean is always a double (issue 42)."""
    if not xs:
        return math.nan
    try:
        return math.fsum(xs) / len(xs)
    except OverflowError:
        return math.fsum(x / len(xs) for x in xs)


def sig(x: float | None, digits: int = 4) -> float | None:
    """Round to `digits` significant digits (stable, readable numbers in the hypothesis file). A
    value that is not finite is no number of a record (YAML, JSON and PostgreSQL disagree on it): None."""
    if x is None or not math.isfinite(x):
        return None
    if x == 0:
        return x
    r = float(f"{x:.{digits}g}")  # machine format: a rounding, read back as a number
    return r if math.isfinite(r) else x  # 1.7976931348623157e308 rounds up past the largest double
