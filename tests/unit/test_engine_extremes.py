"""Issue 42, item 4: no finite double breaks the verdict engine.

A run with a metric near 1e308 under a scaling prediction once made `verdict --all` fail with an
OverflowError in core/scaling.py, for every hypothesis of the workspace. Whatever finite values the
runs hold (the largest and smallest doubles, subnormals, 0, negatives), every kind of prediction
(ratio, difference, value, fits on both axes, means, compounds) under every design (margin, Welch,
t, bootstrap, paired by cycle or by block, exact) is judged: an outcome for each level, and a
record that is valid JSON (no inf or NaN left in it), never an exception out of the engine."""

from __future__ import annotations

import json
import math
import os
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optlog.core import verdict as V
from optlog.core.hypothesis import Prediction
from optlog.core.scaling import fit

M = "m"
MAX = sys.float_info.max
TINY = 5e-324
EXTREME = [MAX, -MAX, 1e308, -1e308, TINY, -TINY, 0.0, 1.0, -1.0, 2.2250738585072014e-308, 1e-300, 1e300,
           3.0, 7.5, 1e154, 1e-154]
values = st.one_of(st.sampled_from(EXTREME), st.floats(allow_nan=False, allow_infinity=False))
samples = st.lists(values, min_size=1, max_size=7)

EXPECTS = [
    "a > b", "a / b in [0.5, 2]", "a >= b * 1.6", "a - b > 100", "a > b + 1e300", "a < 5", "a in [1, 10]",
    "a.m / b.m <= 0.9", "k(x) in [0.9, 1.1]", "slope(x) > 1", "k(x) < 0.3", "slope(x) in [-1e308, 1e308]",
    "(a - b) / b > 0.1", "a > b and a < 2 * b", "not (a <= b)", "a * 1e300 > b * 1e-300", "a - b in [-1, 1]",
]
DESIGNS = ["unpaired", "cycles", "block"]


def _rows(a: list[float], b: list[float], xs: list[float], design: str) -> list[V.RunRow]:
    out = []
    for g, vals in (("x", a), ("y", b)):
        for i, v in enumerate(vals):
            labels: dict[str, object] = {"config": g, "repeat": i, "x": xs[i % len(xs)]}
            kw: dict[str, object] = {}
            if design == "block":
                labels["block"] = f"day{i}"
            if design == "cycles":
                s = i * 100 + (0 if g == "x" else 50)
                kw = {"launch": 1, "repeat": i, "t0": f"2026-12-01T00:{s // 60:02d}:{s % 60:02d}+00:00",
                      "t1": f"2026-12-01T00:{(s + 40) // 60:02d}:{(s + 40) % 60:02d}+00:00"}
            out.append(V.RunRow(len(out) + 1, labels, {M: v}, **kw))  # type: ignore[arg-type]
    return out


def _judge_all(runs: list[V.RunRow]) -> dict[str, dict]:
    preds = [Prediction(id=f"h.p{i}", expect=e, metric=M, a={"config": "x"}, b={"config": "y"})
             for i, e in enumerate(EXPECTS)]
    return V.evaluate(preds, V.Evidence(runs), {})


def _check(res: dict[str, dict]) -> None:
    for p in res.values():
        json.dumps(p, allow_nan=False)  # a record holds no inf or NaN: it goes to YAML, JSON, PostgreSQL
        assert p["status"] in ("confirmed", "falsified", "inconclusive", "untested"), p
        for lv in p["levels"]:
            assert lv["outcome"] in ("holds", "fails", "unclear"), lv
            assert lv["reason"], lv


@settings(max_examples=int(os.environ.get("OPTLOG_HYPOTHESIS_EXAMPLES", "40")), deadline=None, database=None,
          derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(a=samples, b=samples, xs=st.lists(values, min_size=1, max_size=4), design=st.sampled_from(DESIGNS))
def test_any_finite_values_are_judged(a, b, xs, design):
    _check(_judge_all(_rows(a, b, xs, design)))


def test_each_extreme_under_each_design():
    """Every extreme value, at every group size that picks a different estimator (1, 3, 5),
    against a normal other group: the cases the random search may miss, always run."""
    for v in EXTREME:
        for n in (1, 3, 5):
            for design in DESIGNS if n > 1 else DESIGNS[:1]:
                for a, b in (([v] * n, [1.0, 2.0, 3.0, 4.0, 5.0][:n]), ([v, 1.0, 2.0, 3.0, 4.0][:n], [v] * n),
                             ([v, -v, v, -v, v][:n], [MAX, 1.0, MAX, 1.0, MAX][:n])):
                    _check(_judge_all(_rows(a, b, [1, 2, 4, v, 8], design)))


def test_the_reported_case_is_unclear_with_a_reason():
    """The issue's case: slope over runs near ±1e308. The level is judged (the fit's slope is finite
    here), or unclear with a reason that says the numbers are out of range: never an exception."""
    runs = [V.RunRow(i + 1, {"config": "x", "x": x}, {M: y})
            for i, (x, y) in enumerate([(1, 1e308), (2, 1e308), (3, 1e308), (4, -1e308)])]
    p = Prediction(id="h.p1", expect="slope(x) > 1", metric=M, a={"config": "x"})
    res = V.evaluate([p], V.Evidence(runs), {})["h.p1"]
    _check({"h.p1": res})
    assert res["status"] in ("falsified", "inconclusive"), res  # the slope is about −6e307


def test_fit_scales_before_it_squares():
    """core.scaling.fit on linear axes: values near the largest double give the slope a smaller
    scale gives, scaled (no OverflowError in the sums of squares); the curve stays finite or inf."""
    f = fit([1, 2, 3, 4], [1e307, 2e307, 3e307, 4e307], "slope")
    assert f is not None and math.isclose(f.k, 1e307, rel_tol=1e-9) and f.ci is not None
    assert f.r2 is not None and math.isclose(f.r2, 1.0)
    g = fit([1, 2, 3], [1e300, 1e305, 1e308], "k")
    assert g is not None and math.isfinite(g.k)
    for _, y in g.curve([1, 2, 3, 1e308]):
        assert not math.isnan(y)
