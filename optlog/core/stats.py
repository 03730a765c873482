"""Statistics for verdicts (DESIGN §5), batched so that thousands of levels cost a few scipy calls.

- ≥ 5 repeats a side: Mann–Whitney U (two-sided) between groups, Wilcoxon signed-rank for a group
  against a constant; Holm across the levels of a prediction (see `holm`); ranges are judged by a
  percentile bootstrap confidence interval (95 %) of the ratio of means (or of the mean).
- 3–4 repeats: Welch's t-test on log values (one-sample t on logs against a constant), with a minimum
  effect of the margin.
- fewer: the margin rules (in optlog.core.verdict).

Determinism (verdicts must be byte-identical when the evidence did not change): the bootstrap uses a
fixed seed, and scipy draws one index matrix per sample shape and applies it to every row of a batch,
so a level's interval depends only on its own values. Mann–Whitney's and Wilcoxon's exact/asymptotic
choice looks at ties in the whole batch, so batches are split by "has ties" too.

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
    #   mwu (x, y)            -> p
    #   welch_log (x, y)      -> (p, d, lo, hi): d = mean log x - mean log y, CI of d
    #   boot_ratio (x, y)     -> (lo, hi): CI of mean(x)/mean(y)
    #   wilcoxon (x, c)       -> p   (x - c)
    #   t_log1 (x, c)         -> (p, d, lo, hi): d = mean log x - log c
    #   boot_mean (x,)        -> (lo, hi)
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
        from scipy import stats as st  # deferred: scipy (~150 ms) only for a test statistic

        groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
        for i, (kind, data) in enumerate(self.jobs):
            key: tuple[Any, ...]
            if kind == "mwu":
                key = (kind, len(data[0]), len(data[1]), _has_ties(list(data[0]) + list(data[1])))
            elif kind == "wilcoxon":
                d = [v - data[1] for v in data[0]]
                key = (kind, len(d), _has_ties([abs(v) for v in d]) or any(v == 0 for v in d))
            elif kind in ("welch_log", "boot_ratio"):
                key = (kind, len(data[0]), len(data[1]))
            else:
                key = (kind, len(data[0]))
            groups[key].append(i)

        for key, idx in groups.items():
            kind = key[0]
            if kind == "mwu":
                X = np.array([self.jobs[i][1][0] for i in idx], dtype=float)
                Y = np.array([self.jobs[i][1][1] for i in idx], dtype=float)
                r = st.mannwhitneyu(X, Y, alternative="two-sided", axis=1)
                for j, i in enumerate(idx):
                    self.results[i] = float(np.atleast_1d(r.pvalue)[j])
            elif kind == "wilcoxon":
                D = np.array([[v - self.jobs[i][1][1] for v in self.jobs[i][1][0]] for i in idx], dtype=float)
                if np.all(D == 0):
                    for i in idx:
                        self.results[i] = 1.0
                    continue
                r = st.wilcoxon(D, alternative="two-sided", axis=1, zero_method="wilcox")
                for j, i in enumerate(idx):
                    p = float(np.atleast_1d(r.pvalue)[j])
                    self.results[i] = 1.0 if math.isnan(p) else p
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
            elif kind == "t_log1":
                D = np.log(np.array([self.jobs[i][1][0] for i in idx], dtype=float)) - \
                    np.log(np.array([[self.jobs[i][1][1]] for i in idx], dtype=float))
                r = st.ttest_1samp(D, 0.0, axis=1)
                ci = r.confidence_interval(CONF)
                d = D.mean(axis=1)
                for j, i in enumerate(idx):
                    p = float(np.atleast_1d(r.pvalue)[j])
                    lo, hi = float(np.atleast_1d(ci.low)[j]), float(np.atleast_1d(ci.high)[j])
                    if math.isnan(p):
                        p, lo, hi = (0.0 if d[j] != 0 else 1.0), float(d[j]), float(d[j])
                    self.results[i] = (p, float(d[j]), lo, hi)
            elif kind == "boot_ratio":
                X = np.array([self.jobs[i][1][0] for i in idx], dtype=float)
                Y = np.array([self.jobs[i][1][1] for i in idx], dtype=float)

                def ratio(x: Any, y: Any, axis: int = -1) -> Any:
                    return np.mean(x, axis=axis) / np.mean(y, axis=axis)

                r = st.bootstrap((X, Y), ratio, vectorized=True, paired=False, axis=-1, confidence_level=CONF,
                                 n_resamples=N_RESAMPLES, method="percentile", rng=np.random.default_rng(SEED))
                for j, i in enumerate(idx):
                    self.results[i] = (float(np.atleast_1d(r.confidence_interval.low)[j]),
                                       float(np.atleast_1d(r.confidence_interval.high)[j]))
            elif kind == "boot_mean":
                X = np.array([self.jobs[i][1][0] for i in idx], dtype=float)

                def mean(x: Any, axis: int = -1) -> Any:
                    return np.mean(x, axis=axis)

                r = st.bootstrap((X,), mean, vectorized=True, axis=-1, confidence_level=CONF,
                                 n_resamples=N_RESAMPLES, method="percentile", rng=np.random.default_rng(SEED))
                for j, i in enumerate(idx):
                    self.results[i] = (float(np.atleast_1d(r.confidence_interval.low)[j]),
                                       float(np.atleast_1d(r.confidence_interval.high)[j]))
        return self.results


def mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs) if xs else math.nan


def sig(x: float | None, digits: int = 4) -> float | None:
    """Round to `digits` significant digits (stable, readable numbers in the hypothesis file)."""
    if x is None:
        return None
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x if not math.isnan(x) else None
    return float(f"{x:.{digits}g}")  # machine format: a rounding, read back as a number
