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


def _slot_runs(batches, facts=True):
    """Runs of a batch sweep whose work counts are known (model facts as labels): intensity ≈ batch FLOP/B."""
    runs = []
    for i, (b, par) in enumerate(((b, par) for b in batches for par in (1, 4)), 1):
        lab = {"parallel": par, "concurrency": b, **({"active_params": 1e9} if facts else {})}
        runs.append(V.RunRow(i, lab, {"output_throughput": 10.0 * (1 + par / 4), "total_output_tokens": 1000.0}))
    return runs


def _mem_cmp(runs):
    p = Prediction(id="memory-bound.p1", expect="a / b >= 2", metric="output_throughput", a={"parallel": 4},
                   b={"parallel": 1}, per="concurrency")
    q = Prediction(id="compute-bound.p1", expect="a / b < 1.5", metric="output_throughput", a={"parallel": 4},
                   b={"parallel": 1}, per="concurrency")
    ev = V.Evidence(runs)
    res = V.evaluate([p, q], ev, {})
    m = D.Hyp("memory-bound", "Memory-bound decode", preds=[p], results={p.id: res[p.id]})
    c = D.Hyp("compute-bound", "Compute-bound decode", rivals=["memory-bound"], preds=[q], results={q.id: res[q.id]})
    return m, c, ev


def test_known_work_counts_cap_the_batch_at_the_ridge_point():
    """With active_params known and the ceilings in optlog.yaml, a decode pass's intensity is about its
    batch (FLOP/B); past the ridge (peak / bandwidth) both bounds predict the compute roof, so the
    new concurrency levels stop there — or there are none, and it says why."""
    ceil = {"peak_tflops": 100.0, "mem_bw_gbps": 1000.0}  # ridge: 100 FLOP/B
    m, c, ev = _mem_cmp(_slot_runs([4, 16]))
    cap, how = D.ridge_batch(list(ev.runs.values()), ceil, "concurrency")
    assert cap is not None and 95 < cap < 105 and "ridge 100 FLOP/B" in how, how
    cands, _ = D.roofline_candidates(m, c, ev.runs, ceil, None)
    conc = next(x for x in cands if x.axis == "concurrency")
    assert conc.levels == [32, 64] and "both predict the compute roof" in conc.why
    m, c, ev = _mem_cmp(_slot_runs([4, 40]))  # 80 is under the ridge, 160 past it
    conc = next(x for x in D.roofline_candidates(m, c, ev.runs, ceil, None)[0] if x.axis == "concurrency")
    assert conc.levels == [80], conc
    m, c, ev = _mem_cmp(_slot_runs([64, 128]))
    cands, notes = D.roofline_candidates(m, c, ev.runs, ceil, None)
    assert not any(x.axis == "concurrency" for x in cands)
    assert any("past the ridge" in n for n in notes), notes
    # work counts unknown: the levels double, and the reason says what is missing
    m, c, ev = _mem_cmp(_slot_runs([4, 16], facts=False))
    conc = next(x for x in D.roofline_candidates(m, c, ev.runs, ceil, None)[0] if x.axis == "concurrency")
    assert conc.levels == [32, 64] and "work counts unknown" in conc.why


def test_a_hypothesis_is_never_paired_with_itself_or_an_ancestor_it_refines():
    """Issue 44: after the demo, `next` offered compute-bound and its own child slots-share-cores (both
    confirmed) as rivals to tell apart. A child refines a parent that stands: nothing to discriminate.
    A rival declared against an ancestor (or itself) is no pair either. A parent the child pivoted
    away from (falsified) stays a pair: the child is the alternative explanation."""
    hyps = {
        "compute-bound": D.Hyp("compute-bound", "Compute-bound decode", status="confirmed", rivals=["memory-bound"]),
        "memory-bound": D.Hyp("memory-bound", "Memory-bound decode", status="open"),
        "slots-share-cores": D.Hyp("slots-share-cores", "Slots only share the cores", status="confirmed",
                                   parent="compute-bound", rivals=["compute-bound", "slots-share-cores"]),
        "grandchild": D.Hyp("grandchild", "Narrower still", status="open", parent="slots-share-cores",
                            rivals=["compute-bound"]),
        "pivot": D.Hyp("pivot", "After memory-bound failed", status="open", parent="gone"),
        "gone": D.Hyp("gone", "Falsified parent", status="falsified"),
    }
    got = {frozenset((h.id, o.id)) for h, o, _ in D.pairs(hyps)}
    assert frozenset(("compute-bound", "slots-share-cores")) not in got
    assert frozenset(("compute-bound", "grandchild")) not in got
    assert frozenset(("slots-share-cores", "grandchild")) not in got
    assert not any(len(k) == 1 for k in got)
    assert frozenset(("compute-bound", "memory-bound")) in got  # a declared rival that is no ancestor
    assert frozenset(("pivot", "gone")) in got  # the parent it pivoted away from
    assert not any("compute-bound" in k and "slots-share-cores" in k for k in
                   (frozenset((h.id, o.id)) for h, o, _ in D.pairs(hyps, "slots-share-cores")))
