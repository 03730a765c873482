"""Issue 28, items 1 and 2: one claim, one judgement (DESIGN §5's estimation rule) and paired designs.

In-process on the pure engine (core.verdict): every prediction reduces to an interval of its tested
quantity compared with the region it claims, whatever the spelling; runs measured in the same cycle
of an interleaved launch (or sharing a `block` label) are judged on their per-block ratios."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optlog.core import verdict as V
from optlog.core.hypothesis import Prediction

M = "ttft"
# the agent's runs (issue 28): 512-token (a) and 256-token (b) prompts, five interleaved cycles whose
# per-cycle ratios are 2.44, 2.42, 2.59, 2.03, 2.18 while the host drifted
AGENT_A = [25.254, 23.28, 16.939, 10.353, 14.977]
AGENT_B = [10.35, 9.62, 6.54, 5.1, 6.87]
T0 = datetime(2026, 11, 30, 23, 0, tzinfo=timezone.utc)


def _iso(s: float) -> str:
    return (T0 + timedelta(seconds=s)).isoformat()


def _rows(a, b, *, per=None, launch=None, cycles=False, block=False, back_to_back=False):
    """Runs of groups a and b; `cycles`: one launch, a then b in each cycle (interleaved);
    `back_to_back`: one launch, every a run, then every b run; `block`: a `block` label per pair."""
    out = []
    rid = 0
    lv = {} if per is None else {"c": per}
    for g, vals in (("x", a), ("y", b)):
        for i, v in enumerate(vals):
            rid += 1
            labels = {"config": g, "repeat": i, **lv}
            kw = {}
            if block:
                labels["block"] = f"day{i}"
            if cycles or back_to_back:
                start = (i * 100 + (0 if g == "x" else 50)) if cycles else ((0 if g == "x" else 1000) + i * 60)
                kw = {"launch": launch or 1, "repeat": i, "t0": _iso(start), "t1": _iso(start + 40)}
            out.append(V.RunRow(rid + (1000 * (per or 0)), labels, {M: v}, **kw))
    return out


def _judge(expect, runs, **kw):
    kw.setdefault("a", {"config": "x"})
    kw.setdefault("b", {"config": "y"})
    p = Prediction(id="h.p1", expect=expect, metric=M, **kw)
    return V.evaluate([p], V.Evidence(runs), {})["h.p1"]


SAME_CLAIM = ("a >= b * {k}", "a / b >= {k}", "a / b in [{k}, inf]", "b * {k} <= a", "{k} <= a / b",
              "a / {k} >= b", "({k} * b) <= a")
SAME_UPPER = ("a <= b * {k}", "a / b <= {k}", "a / b in [-inf, {k}]", "b * {k} >= a")


def _judgement(res):
    return (res["status"], [(lv["outcome"], lv.get("estimate"), lv.get("ci"), lv.get("method"),
                             lv.get("statistic"), lv.get("reason")) for lv in res["levels"]])


values = st.lists(st.floats(min_value=0.5, max_value=500, allow_nan=False, allow_infinity=False), min_size=1,
                  max_size=7)


@settings(max_examples=60, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(a=values, b=values, k=st.sampled_from([0.5, 0.8, 1, 1.1, 1.6, 2, 3.25]), levels=st.integers(1, 2),
       upper=st.booleans(), design=st.sampled_from(["unpaired", "cycles"]))
def test_equivalent_spellings_are_one_claim(a, b, k, levels, upper, design):
    """`a >= b * 1.6`, `a / b >= 1.6`, `a / b in [1.6, inf]` (and more rewritings) get the same
    outcome, estimate, interval and reason: whatever the data, the number of levels and the design."""
    if design == "cycles":
        b = (b * 7)[:len(a)]  # a pair per cycle
    runs = [r for lvl in range(levels) for r in _rows(a, [v * (1 + lvl) for v in b], per=lvl,
                                                      cycles=design == "cycles")]
    per = {"per": "c"} if levels > 1 else {}
    spellings = SAME_UPPER if upper else SAME_CLAIM
    got = [_judgement(_judge(s.format(k=k), runs, **per)) for s in spellings]
    assert all(g == got[0] for g in got), list(zip(spellings, got))
    assert all(lv[0] in ("holds", "fails", "unclear") for lv in got[0][1])


def test_the_agents_case_holds_in_both_spellings():
    """a/b = 2.36, 95 % CI [1.65, 3.34] against ≥ 1.6: the interval is inside the region, so the
    claim holds, spelt `a / b >= 1.6` or `a / b in [1.6, 100]` (before: inconclusive vs confirmed)."""
    runs = _rows(AGENT_A, AGENT_B)
    for expect in ("a / b >= 1.6", "a / b in [1.6, 100]", "a >= b * 1.6"):
        res = _judge(expect, runs)
        lv = res["levels"][0]
        assert res["status"] == "confirmed", (expect, lv)
        assert lv["estimate"] == pytest.approx(2.36, abs=0.005)
        assert lv["ci"] == pytest.approx([1.65, 3.35], abs=0.01)
        assert lv["design"] == "unpaired" and lv["method"] == "bootstrap"
        assert "a/b = 2.36, 95% CI [1.65, 3.35] inside" in lv["reason"] and "(unpaired, bootstrap, n=5+5)" in lv["reason"]
    # the reason shows the interval against the region
    assert "inside >= 1.6" in _judge("a / b >= 1.6", runs)["levels"][0]["reason"]
    assert "inside in [1.6, 100]" in _judge("a / b in [1.6, 100]", runs)["levels"][0]["reason"]
    lv = _judge("a / b >= 2", runs)["levels"][0]
    assert lv["outcome"] == "unclear" and "straddles >= 2" in lv["reason"]
    lv = _judge("a / b < 1.5", runs)["levels"][0]
    assert lv["outcome"] == "fails" and "outside < 1.5" in lv["reason"]


def test_paired_cycles_are_judged_on_per_cycle_ratios():
    """The same runs, measured in five interleaved cycles of one launch: the per-cycle ratios 2.44,
    2.42, 2.59, 2.03, 2.18 give a narrow interval, and the verdict says it was paired, and on how many."""
    res = _judge("a / b >= 1.6", _rows(AGENT_A, AGENT_B, cycles=True))
    lv = res["levels"][0]
    assert res["status"] == "confirmed" and lv["design"] == "paired" and lv["pairs"] == 5
    assert lv["paired_by"] == "launch cycle" and lv["method"] == "paired-t-log"
    assert lv["estimate"] == pytest.approx(2.326, abs=0.01) and 2.0 < lv["ci"][0] < lv["ci"][1] < 2.7
    assert "paired by launch cycle, 5 pairs" in lv["reason"]
    assert "geometric mean of per-cycle ratios of 5" in lv["reason"]


def test_drift_swamps_the_unpaired_test_but_the_pairs_agree():
    """The host slows down cycle by cycle (b: 5 → 25 ms); a is 1.7× b within 2 % in every cycle. The
    unpaired interval straddles 1.6; the paired one is inside."""
    b = [5.0, 10.0, 15.0, 20.0, 25.0]
    a = [v * f for v, f in zip(b, (1.72, 1.68, 1.71, 1.69, 1.70))]
    unpaired = _judge("a >= b * 1.6", _rows(a, b))
    assert unpaired["status"] == "inconclusive" and unpaired["levels"][0]["design"] == "unpaired"
    assert "straddles >= 1.6" in unpaired["levels"][0]["reason"]
    paired = _judge("a >= b * 1.6", _rows(a, b, cycles=True))
    assert paired["status"] == "confirmed" and paired["levels"][0]["pairs"] == 5
    assert paired["levels"][0]["ci"][0] > 1.6
    # a block label the user gives pairs the same way (no launch, no times needed)
    labelled = _judge("a >= b * 1.6", _rows(a, b, block=True))
    assert labelled["status"] == "confirmed" and labelled["levels"][0]["paired_by"] == "block label"
    # differences pair too
    diff = _judge("a - b > 2", _rows(a, b, cycles=True))["levels"][0]
    assert diff["design"] == "paired" and diff["method"] == "paired-t" and diff["outcome"] == "holds"


def test_repeats_back_to_back_are_not_cycles_and_say_so():
    """One launch, but a's five repeats ran before b's (each configuration on its own server): the
    repeat numbers match, yet nothing was interleaved. Unpaired, and the reason says the groups were
    measured in separate blocks, how far apart, and that drift is not controlled."""
    b = [5.0, 10.0, 15.0, 20.0, 25.0]
    a = [v * 1.7 for v in b]
    res = _judge("a >= b * 1.6", _rows(a, b, back_to_back=True))
    lv = res["levels"][0]
    assert lv["design"] == "unpaired"
    # a: 0 s … 280 s, b: 1000 s …: 12 min apart
    assert lv["drift"] == "x and y measured in separate blocks 12 min apart: drift not controlled"
    assert lv["drift"] in lv["reason"] and lv["drift"] in res["explanation"]
    # interleaved cycles: no such note
    assert "drift" not in _judge("a >= b * 1.6", _rows(a, b, cycles=True))["levels"][0]


def test_unpaired_evidence_is_judged_as_before_and_few_pairs_fall_back():
    """Runs without a launch or a block label: unpaired. Two pairs only: the margin rule, unpaired."""
    runs = _rows([10.0, 10.5], [5.0, 5.2], cycles=True)
    lv = _judge("a >= b * 1.6", runs)["levels"][0]
    assert lv["design"] == "unpaired" and lv["method"] == "margin" and lv["outcome"] == "holds"


def _scaling_runs(k, noise=(1.0, 1.03, 0.98), lengths=(64, 128, 256, 512), extra=None):
    out = []
    for i, n in enumerate(lengths):
        for j, f in enumerate(noise):
            out.append(V.RunRow(len(out) + 1, {"config": "x", "input_len": n, "repeat": j, **(extra or {})},
                                {M: 0.012 * n ** k * f * 1000}))
    return out


def test_scaling_claims_fit_an_exponent_with_its_interval():
    """Item 5: `k(input_len)` is the exponent of a log–log least-squares fit over every run; its
    interval is judged against the region like any other claim; the fit is kept for a report."""
    runs = _scaling_runs(1.0)
    res = _judge("k(input_len) in [0.9, 1.1]", runs, b={})
    lv = res["levels"][0]
    assert res["status"] == "confirmed" and lv["design"] == "fit" and lv["method"] == "fit"
    assert lv["estimate"] == pytest.approx(1.0, abs=0.03) and 0.9 < lv["ci"][0] < 1 < lv["ci"][1] < 1.1
    assert lv["fit"]["n"] == 12 and lv["fit"]["levels"] == 4 and len(lv["fit"]["points"]) == 12
    assert lv["reason"].startswith("k(input_len) = 1.00, 95% CI [") and "inside in [0.9, 1.1]" in lv["reason"]
    assert "(fit over 4 values of input_len, 12 runs)" in lv["reason"]
    assert _judge("k(input_len) < 0.3", runs, b={})["status"] == "falsified"  # no fixed per-request cost
    flat = _judge("k(input_len) < 0.3", _scaling_runs(0.05), b={})
    assert flat["status"] == "confirmed"
    # the slope on linear axes: ms per token
    lin = _judge("slope(input_len) in [11, 13]", runs, b={})["levels"][0]
    assert lin["estimate"] == pytest.approx(12, rel=0.03) and lin["statistic"] == "slope (least squares)"
    # per level: one fit per level, each at the Bonferroni confidence
    two = _scaling_runs(1.0, extra={"c": 1}) + [V.RunRow(r.id + 100, {**r.labels, "c": 2}, r.metrics)
                                                for r in _scaling_runs(1.0)]
    res = _judge("k(input_len) in [0.9, 1.1]", two, b={}, per="c")
    assert [lv["confidence"] for lv in res["levels"]] == [0.975, 0.975] and res["status"] == "confirmed"


def test_the_fitted_line_for_a_report():
    from optlog.core.scaling import fit

    f = fit([64, 128, 256, 512], [0.8, 1.6, 3.2, 6.4], "k")
    assert f is not None and f.k == pytest.approx(1.0) and f.ci == pytest.approx((1.0, 1.0))
    assert [x for pt in f.curve() for x in pt] == pytest.approx([64, 0.8, 128, 1.6, 256, 3.2, 512, 6.4])
    assert fit([64, 64], [1.0, 2.0]) is None  # one x value: nothing to fit
    assert fit([64, 128], [1.0, 2.0]).ci is None  # two points: a line, no interval (the margin rule)


def test_rival_scaling_claims_that_cannot_be_told_apart_are_warned():
    mine = [Prediction(id="h.p1", expect="k(input_len) in [0.9, 1.1]", metric=M, a={"config": "x"})]
    apart = [Prediction(id="r.p1", expect="k(input_len) < 0.3", metric=M, a={"config": "x"})]
    close = [Prediction(id="r.p1", expect="k(input_len) > 0.8", metric=M, a={"config": "x"})]
    other = [Prediction(id="r.p1", expect="k(output_len) > 0.8", metric=M, a={"config": "x"})]
    assert not V.rival_overlaps(mine, apart, {})
    assert V.rival_overlaps(mine, close, {})
    assert not V.rival_overlaps(mine, other, {})
    assert "k(input_len) of a.ttft in [0.9, 1.1] vs k(input_len) of a.ttft > 0.8" in \
        V.rival_message(mine[0], close[0], "r", {})
