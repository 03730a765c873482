"""Issue 45 (3): an interval respects its quantity's bounds. A CPU share (a fraction, a probability)
lies in [0, 1]; a verdict once said [0.156, 1.82] for one. The bounds come from the metric's name
(core.units.bounds, the one place a metric's unit is known); the verdict clips there."""

from __future__ import annotations

from optlog.core import units
from tests._verdicts import seed_runs


def _pred(ws, expect, *sel):
    ws.cli("hyp", "add", "X", "--id", "h")
    ws.cli("predict", "h", "--expect", expect, "--metric", "cpu_share", *sel)
    return ws.cli("verdict", "h", "--json").json["results"][0]["predictions"][0]["levels"][0]


def test_a_share_interval_stays_within_0_and_1(ws):
    # three scattered shares: t on logs gives an upper end far past 1 unclipped
    seed_runs(ws, [({"cfg": "x", "repeat": i}, {"cpu_share": v}) for i, v in enumerate([0.3, 0.9, 0.95])])
    lv = _pred(ws, "a > 0.5", "--a", "cfg=x")
    lo, hi = lv["ci"]
    assert 0 <= lo < lv["estimate"] < hi <= 1, lv
    assert hi == 1 and "1]" in lv["reason"] and "cpu_share lies in [0, 1]" in lv["reason"], lv["reason"]


def test_a_difference_of_shares_stays_within_minus_1_and_1(ws):
    seed_runs(ws, [({"cfg": c, "repeat": i}, {"cpu_share": v}) for c, vs in (("x", [0.05, 0.9, 0.95]), ("y", [0.1, 0.12, 0.9]))
                   for i, v in enumerate(vs)])
    lv = _pred(ws, "a - b > 0", "--a", "cfg=x", "--b", "cfg=y")
    lo, hi = lv["ci"]
    assert -1 <= lo and hi <= 1, lv


def test_bounds_come_from_the_name_and_never_exclude_what_was_measured():
    assert units.bounds("cpu_share") == (0.0, 1.0)
    assert units.bounds("gpu_power_frac_mean") == (0.0, 1.0)
    assert units.bounds("accept_probability") == (0.0, 1.0)
    assert units.bounds("median_ttft_ms") is None and units.bounds("cpu_busy_pct") is None
