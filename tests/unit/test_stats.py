"""Statistics and the pure verdict engine: tiers, bootstrap determinism, comparability, compound
expressions, statuses (in-process, no I/O). The estimation rule itself: test_verdict_estimation.py."""

from __future__ import annotations

import pytest
from scipy import stats as st

from optlog.core import verdict as V
from optlog.core.hypothesis import Prediction
from optlog.core.stats import Batch, bonferroni, holm, percentile_ci, tier

M = "tput"


def test_holm_matches_the_textbook():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]
    assert holm([0.0079] * 10) == pytest.approx([0.079] * 10)


def test_tiers_and_bonferroni():
    assert [tier(n) for n in (1, 2, 3, 4, 5, 9)] == ["margin", "margin", "welch", "welch", "rank", "rank"]
    assert bonferroni(1) == pytest.approx(0.95) and bonferroni(5) == pytest.approx(0.99)


def test_batch_matches_scipy_one_by_one_and_is_order_independent():
    x1, y1 = [1.0, 2, 3, 4, 5], [6.0, 7, 8, 9, 10]
    x2, y2 = [1.0, 1, 2, 3, 4], [2.0, 3, 3, 4, 9]  # ties: asymptotic
    b = Batch()
    h = [b.add("mwu", x1, y1), b.add("mwu", x2, y2), b.add("welch_log", x1[:3], y1[:3])]
    r = b.run()
    assert r[h[0]] == pytest.approx(st.mannwhitneyu(x1, y1).pvalue)
    assert r[h[1]] == pytest.approx(st.mannwhitneyu(x2, y2).pvalue)
    import numpy as np
    assert r[h[2]][0] == pytest.approx(st.ttest_ind(np.log(x1[:3]), np.log(y1[:3]), equal_var=False).pvalue)
    # a bootstrap interval depends only on its own values, not on what else is in the batch
    alone = Batch()
    alone.add("boot", "ratio", x1, y1)
    crowd = Batch()
    crowd.add("boot", "ratio", [9.0, 1, 5, 2, 7], y2)
    crowd.add("boot", "ratio", x1, y1)
    assert percentile_ci(alone.run()[0], 0.95) == percentile_ci(crowd.run()[1], 0.95)
    lo, hi = percentile_ci(alone.run()[0], 0.95)
    assert lo < (3 / 8) < hi


def _runs(rows):
    out, i = [], 0
    for labels, vals in rows:
        for v in vals:
            i += 1
            out.append(V.RunRow(i, {**labels, "repeat": i}, {M: v}))
    return V.Evidence(out)


def _pred(expect, **kw):
    kw.setdefault("a", {"config": "x"})
    kw.setdefault("b", {"config": "y"})
    kw.setdefault("metric", M)
    return Prediction(id="h.p1", expect=expect, **kw)


def _eval(pred, ev, ceil=None):
    return V.evaluate([pred], ev, ceil or {})["h.p1"]


def test_welch_tier_is_an_interval_of_the_ratio_of_geometric_means():
    ev = _runs([({"config": "x"}, [110, 111, 109]), ({"config": "y"}, [100, 101, 99])])
    lv = _eval(_pred("a > b"), ev)["levels"][0]
    assert lv["method"] == "welch-log" and lv["outcome"] == "holds" and lv["statistic"] == "ratio of geometric means"
    assert 1 < lv["ci"][0] < 1.1 < lv["ci"][1] < 1.2 and lv["design"] == "unpaired"
    # the margin plays no part once there is an interval (DESIGN §5): the interval is inside (1, inf)
    assert _eval(_pred("a > b", margin=0.2), ev)["status"] == "confirmed"
    assert _eval(_pred("a / b in [1.1, 1.2]"), ev)["status"] == "inconclusive"  # [1.08, 1.12] straddles 1.1
    assert _eval(_pred("a / b in [1.2, 1.5]"), ev)["status"] == "falsified"


def test_margin_rules_for_few_repeats():
    ev = _runs([({"config": "x"}, [103]), ({"config": "y"}, [100])])
    assert _eval(_pred("a > b"), ev)["levels"][0]["outcome"] == "unclear"  # within 5 %
    assert _eval(_pred("a > b", margin=0.01), ev)["levels"][0]["outcome"] == "holds"
    assert _eval(_pred("a < b", margin=0.01), ev)["levels"][0]["outcome"] == "fails"
    # a range: holds when inside by more than the margin, fails when outside by more, one rule
    assert _eval(_pred("a / b in [1.05, 1.2]"), ev)["levels"][0]["outcome"] == "unclear"
    assert _eval(_pred("a / b in [1.1, 1.2]"), ev)["levels"][0]["outcome"] == "fails"
    assert _eval(_pred("a / b in [1.0, 1.2]"), ev)["levels"][0]["outcome"] == "unclear"  # 1.03: 3 % inside
    assert _eval(_pred("a / b in [0.9, 1.2]"), ev)["levels"][0]["outcome"] == "holds"
    lv = _eval(_pred("a / b in [1.1, 1.2]"), ev)["levels"][0]
    assert lv["reason"] == "a/b = 1.03 vs in [1.1, 1.2] (margin rule ±5%, n=1+1)" and lv["ci"] is None


def test_more_levels_widen_every_interval():
    rows = []
    for c in range(8):  # 8 levels: each interval at 1 - 0.05/8 (Bonferroni)
        rows += [({"config": "x", "c": c}, [10, 11, 12, 13, 14]), ({"config": "y", "c": c}, [1, 2, 3, 4, 5])]
    r = _eval(_pred("a > b", per="c"), _runs(rows))
    lv = r["levels"][0]
    assert lv["confidence"] == pytest.approx(1 - 0.05 / 8, abs=1e-4) and "99.4% CI" in lv["reason"]
    one = _eval(_pred("a > b"), _runs(rows[:2]))["levels"][0]
    assert one["confidence"] == 0.95 and "95% CI" in one["reason"]
    assert lv["ci"][0] <= one["ci"][0] and lv["ci"][1] >= one["ci"][1]
    assert r["status"] == "confirmed"


def test_one_sample_and_compound_against_ceilings():
    ev = V.Evidence([V.RunRow(i, {"config": "x"}, {"tensor_active": t, "gpu_util": u, M: 1})
                     for i, (t, u) in enumerate([(5, 95), (6, 96), (5.5, 94), (6.2, 97), (5.1, 93)])])
    p = Prediction(id="h.p1", expect="a.tensor_active < 20 and a.gpu_util > 90", a={"config": "x"})
    r = V.evaluate([p], ev, {})["h.p1"]
    assert r["status"] == "confirmed" and r["levels"][0]["method"] == "compound"
    assert [t["outcome"] for t in r["levels"][0]["tests"]] == ["holds", "holds"]
    p = Prediction(id="h.p1", expect="a.tensor_active > 0.5 * peak_tflops", a={"config": "x"})
    r = V.evaluate([p], ev, {"peak_tflops": 20.0})["h.p1"]
    assert r["status"] == "falsified"
    p = Prediction(id="h.p1", expect="not (a.gpu_util > 90)", a={"config": "x"})
    assert V.evaluate([p], ev, {})["h.p1"]["status"] == "falsified"


def test_comparability_workload_vs_configuration_labels():
    a = [V.RunRow(1, {"config": "x", "tp": 4, "dataset": "random"}, {}),
         V.RunRow(2, {"config": "x", "tp": 4, "dataset": "random"}, {}),
         V.RunRow(3, {"config": "x", "tp": 2, "dataset": "random"}, {})]
    b = [V.RunRow(4, {"config": "y", "tp": 8, "dataset": "random"}, {}),
         V.RunRow(5, {"config": "y", "tp": 8, "dataset": "sharegpt"}, {}),
         V.RunRow(6, {"config": "y", "tp": 8, "dataset": "random", "sglang_version": "0.5"}, {})]
    bad = V.comparability(a, b, {"config"}, True)
    # tp differs between the groups (what is compared), but not inside group a
    assert set(bad) == {3, 5, 6}
    assert "tp=2" in bad[3] and "dataset=sharegpt" in bad[5] and "sglang_version" in bad[6]


def test_statuses_and_explanations():
    assert V.hypothesis_status(["falsified", "confirmed"], False) == "falsified"
    assert V.hypothesis_status(["confirmed", "confirmed"], False) == "confirmed"
    assert V.hypothesis_status(["confirmed", "untested"], False) == "inconclusive"
    assert V.hypothesis_status(["untested"], True) == "testing"
    assert V.hypothesis_status([], False) == "open"
    ev = _runs([({"config": "x", "c": 1}, [1]), ({"config": "y", "c": 1}, [2])])
    r = _eval(_pred("a > b", per="c", metric="nope"), ev)
    assert r["status"] == "untested" and r["explanation"].startswith("untested: no run has metric 'nope'")
    r = _eval(_pred("a > b", a={"config": "zzz"}), ev)
    assert r["status"] == "untested" and "no run matches" in r["explanation"]


def test_rival_overlap_recognises_swapped_groups():
    mine = [_pred("a / b in [0.3, 0.6]")]
    swapped = [Prediction(id="r.p1", expect="a / b in [2, 3]", metric=M, a={"config": "y"}, b={"config": "x"})]
    assert V.rival_overlaps(mine, swapped, {})  # y/x in [2, 3] ⇔ x/y in [0.33, 0.5]
    apart = [Prediction(id="r.p1", expect="a > b", metric=M, a={"config": "x"}, b={"config": "y"})]
    assert not V.rival_overlaps(mine, apart, {})
    other = [Prediction(id="r.p1", expect="a / b in [0.3, 0.6]", metric="other", a={"config": "x"}, b={"config": "y"})]
    assert not V.rival_overlaps(mine, other, {})  # another comparison
