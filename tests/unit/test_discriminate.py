"""core.discriminate in-process (issue 36): scaling claims apart over a label give the range of the
label that tells them apart; the roofline needs named bounds; the pairs are the undecided ones."""

from __future__ import annotations

from optlog.core import discriminate as D
from optlog.core import verdict as V
from optlog.core.hypothesis import Prediction


def _hyps(preds_a, preds_b, runs, status_b="open"):
    ev = V.Evidence(runs)
    res = V.evaluate(preds_a + preds_b, ev, {})
    a = D.Hyp("ttft-linear", "TTFT grows with the prompt", preds=preds_a,
              results={p.id: res[p.id] for p in preds_a})
    b = D.Hyp("fixed-cost", "A fixed cost dominates TTFT", rivals=["ttft-linear"], status=status_b, preds=preds_b,
              results={p.id: res[p.id] for p in preds_b})
    return {a.id: a, b.id: b}, ev


def test_scaling_claims_apart_propose_a_wider_range_of_the_label():
    lin = Prediction(id="ttft-linear.p1", expect="k(input_len) in [0.9, 1.1]", metric="mean_ttft_ms",
                     a={"config": "llama"})
    flat = Prediction(id="fixed-cost.p1", expect="k(input_len) < 0.3", metric="mean_ttft_ms", a={"config": "llama"})
    # two levels only, noisy: neither claim is decided yet
    runs = [V.RunRow(i, {"config": "llama", "input_len": x}, {"mean_ttft_ms": y})
            for i, (x, y) in enumerate([(128, 40.0), (128, 60.0), (256, 55.0), (256, 80.0)], 1)]
    hyps, ev = _hyps([lin], [flat], runs)
    (e,) = D.analyse(hyps, ev.runs, {})
    assert e["state"] == "not yet", e["why"]
    sc = [c for c in e["candidates"] if c.source == "scaling"]
    assert sc, e
    c = sc[0]
    assert c.axis == "input_len" and c.reference == [128] and c.levels[0] == 512 and c.levels == sorted(c.levels)
    # at the widest new level the linear claim predicts at least 0.9 decades per decade, the flat one < 0.3
    top = c.levels[-1] / 128
    assert c.predicted["ttft-linear"][-1]["outcome"].startswith(f"{top ** 0.9:.3g}"[:3])
    assert "x–" in c.predicted["fixed-cost"][-1]["outcome"]


def test_no_bound_named_means_no_roofline_and_decided_pairs_are_left_out():
    p = Prediction(id="ttft-linear.p1", expect="a > b", metric="m", a={"c": "1"}, b={"c": "2"})
    q = Prediction(id="fixed-cost.p1", expect="a < b", metric="m", a={"c": "1"}, b={"c": "2"})
    runs = [V.RunRow(i, {"c": c}, {"m": v}) for i, (c, v) in enumerate([("1", 10.0), ("2", 5.0)], 1)]
    hyps, ev = _hyps([p], [q], runs)
    assert D.analyse(hyps, ev.runs, {}) == []  # decided: nothing to tell apart
    (e,) = D.analyse(hyps, ev.runs, {}, "fixed-cost")  # asked for: listed, with why
    assert e["state"] == "discriminated" and e["candidates"] == [], e
    assert e["why"] == "ttft-linear confirmed, fixed-cost falsified"
    assert D.roofline_candidates(hyps["ttft-linear"], hyps["fixed-cost"], ev.runs, {}, None)[0] == []
    assert D.named_bound("x", "Memory-bound decode", "") == "memory"
    assert D.named_bound("pp", "Pipeline bubbles", "") == "latency"
    assert D.named_bound("comm-bound", "Allreduce limits TP8", "") == "communication"
