"""optlog.core.tune: the search space, constraint violations, the Pareto front and the winner's
curse, on their own (no optimiser, no I/O)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from optlog.core import tune as T
from optlog.core.expr import ExprError, parse_where


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=25),
       st.sampled_from([("maximize", "minimize"), ("maximize", "maximize"), ("minimize", "minimize")]))
def test_the_front_is_exactly_the_points_nobody_dominates(points, dirs):
    front = set(T.pareto_front(points, dirs))
    assert front  # a finite set always has a non-dominated point
    for i, p in enumerate(points):
        dominated = any(T.dominates(q, p, dirs) for q in points)
        assert (i in front) == (not dominated)


def test_violations_are_zero_when_a_constraint_holds_and_grow_with_the_distance():
    c = T.parse_constraint("p99_ttft_ms <= 200")
    assert T.violation(c, {"p99_ttft_ms": 150}) == 0 and T.violation(c, {"p99_ttft_ms": 260}) == 60
    assert T.violation(c, {}) == T.MISSING  # a metric the runs do not report breaks the constraint
    assert T.violation(T.parse_constraint("failed == 0"), {"failed": 0}) == 0
    assert T.violation(T.parse_constraint("failed == 0"), {"failed": 3}) == 3
    assert T.violation(T.parse_constraint("x < 5"), {"x": 5}) > 0  # strict: the boundary is broken
    assert T.violation(T.parse_constraint("x > 1 and y >= 2"), {"x": 0, "y": 0}) == pytest.approx(1 + 2 + 1e-9)
    assert T.violation(T.parse_constraint("x > 1 or y >= 2"), {"x": 0, "y": 1.5}) == 0.5
    assert T.violation(T.parse_constraint("x in [1, 2]"), {"x": 4}) == 2
    assert T.feasible([0.0, 0.0]) and not T.feasible([0.0, 0.1]) and T.feasible(None)
    for bad in ("p99 <= fast", "p99 <=", "p99 + 1", "a.b.c()"):
        with pytest.raises(ExprError):
            T.parse_constraint(bad)


def test_grid_honours_conditions_and_steps():
    space = [T.SearchParam("par", "int", 1, 4, step=3),
             T.SearchParam("thr", "choice", choices=(1, 2), when=parse_where("par > 1")),
             T.SearchParam("f", "float", 0.5, 1.0, step=0.25)]
    pts = T.grid_points(space)
    assert [p["par"] for p in pts].count(1) == 3 and all("thr" not in p for p in pts if p["par"] == 1)
    assert len(pts) == 3 + 2 * 3 and {p["f"] for p in pts} == {0.5, 0.75, 1.0}
    assert T.grid_size(space, 10**6) == 2 * 2 * 3  # an upper bound: conditions ignored
    with pytest.raises(ValueError, match="step"):
        T.SearchParam("g", "float", 0.0, 1.0).count()
    got = T.active_params(space, lambda p: p.first)
    assert got == {"par": 1, "f": 0.5}


def test_winners_curse_is_the_first_reading_against_the_remeasured_median():
    w = T.winners_curse(110.0, [100.0, 98.0, 102.0])
    assert w["median"] == 100.0 and w["n"] == 3 and w["shrink_pct"] == 10.0
    assert T.winners_curse(None, [])["median"] is None


def test_separation_uses_the_verdicts_tests_by_repeat_count():
    assert T.separation([30, 31], [20, 21])["distinct"] is None  # too few
    w = T.separation([30.0, 30.5, 29.8], [20.0, 20.4, 19.9])
    assert w["test"] == "welch-log" and w["distinct"] is True
    tiny = T.separation([30.0, 30.01, 29.99], [20.0, 20.01, 19.99])  # a p far below 1e-6 is not 0
    assert tiny["distinct"] is True and 0 < tiny["p"] < 1e-6
    r = T.separation([30, 31, 29, 30, 32], [30, 29, 31, 30, 31])
    assert r["test"] == "mann-whitney" and r["distinct"] is False


def test_a_configuration_is_pruned_only_above_one_that_broke_an_upper_bound():
    conds = [T.parse_constraint("p99_ttft_ms <= 100"), T.parse_constraint("output_throughput >= 20")]
    earlier = [(0, {"c": 4, "mode": "a"}, [60.0, 0.0]),   # broke the latency bound at c=4
               (1, {"c": 2, "mode": "b"}, [0.0, 5.0])]    # broke only the lower bound (throughput)
    assert T.pruned_by({"c": 8, "mode": "a"}, "c", conds, earlier) == (0, 0)
    assert T.pruned_by({"c": 4, "mode": "a"}, "c", conds, earlier) is None  # not above it
    assert T.pruned_by({"c": 2, "mode": "a"}, "c", conds, earlier) is None  # below it
    assert T.pruned_by({"c": 8, "mode": "c"}, "c", conds, earlier) is None  # another configuration
    assert T.pruned_by({"c": 8, "mode": "b"}, "c", conds, earlier) is None  # more load may raise throughput
    assert T.upper_bound(T.parse_constraint("p99 <= 1 and failed < 1"))
    assert not T.upper_bound(T.parse_constraint("p99 <= 1 or failed < 1"))
    assert not T.upper_bound(T.parse_constraint("tput > 1"))
