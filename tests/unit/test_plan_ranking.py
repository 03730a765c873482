"""Plan ranking follows the verdicts (core.plans.evaluate): property tests over generated verdict
and plan sets, and the measured effect of a plan's own change replacing its claimed gain."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from optlog.core import plans as P

STATUSES = ("confirmed", "falsified", "open", "inconclusive", "testing")


def _doc(hid: str, status: str, levels: list[dict[str, Any]] | None = None, a: str = "4", b: str = "1") -> dict[str, Any]:
    verdicts = []
    if status in ("confirmed", "falsified", "inconclusive") or levels:
        verdicts = [{"at": "2026-12-01T00:00:00Z", "status": status, "summary": f"{status}: x",
                     "predictions": [{"id": f"{hid}.p1", "status": status, "metric": "output_throughput",
                                      "a": {"parallel": a}, "b": {"parallel": b}, "levels": levels or []}]}]
    return {"id": hid, "title": hid, "status": status, "verdicts": verdicts}


def _plan(pid: int, gain: tuple[float, float], conf: float, effort: str, needs: list[str],
          change: dict[str, str] | None = None) -> dict[str, Any]:
    return {"id": pid, "title": f"p{pid}", "gain_low": gain[0], "gain_high": gain[1], "effort": effort,
            "confidence": conf, "status": "proposed", "needs": needs, "change": change, "measured_gain": None}


gains = st.tuples(st.floats(-50, 900), st.floats(0, 100)).map(lambda t: (t[0], min(t[0] + t[1], 1000.0)))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(STATUSES), min_size=1, max_size=5),
       st.lists(st.tuples(gains, st.floats(0.01, 1), st.sampled_from("SML"),
                          st.lists(st.tuples(st.integers(0, 4), st.sampled_from(("confirmed", "falsified"))),
                                   max_size=3)), min_size=1, max_size=8))
def test_no_plan_with_a_need_decided_against_it_ranks_above_one_without(statuses, specs):
    docs = {f"h{i}": _doc(f"h{i}", s) for i, s in enumerate(statuses)}
    plans = []
    for pid, (gain, conf, eff, needs) in enumerate(specs, 1):
        ns = sorted({P.need_text(f"h{i % len(statuses)}", want) for i, want in needs})
        ns = [n for n in ns if not (n.endswith("=falsified") and n.split("=")[0] in ns)]  # one expectation each
        plans.append(_plan(pid, gain, conf, eff, ns))
    ranked = [v for v in P.evaluate(plans, docs) if v["rank"] is not None]

    def against(v: dict[str, Any]) -> bool:
        return any(n["status"] in ("confirmed", "falsified") and n["status"] != n["expects"] for n in v["needs_info"])

    seen_against = False
    for v in ranked:
        if against(v):
            seen_against = True
            assert v["tier"] == P.TIER_CONTRADICTED and v["reason"].startswith("ranked below every plan")
        else:
            assert not seen_against, [(x["rank"], x["title"], x["score"], against(x)) for x in ranked]


def _level(est: float, lo: float, hi: float) -> dict[str, Any]:
    return {"level": {"concurrency": 4}, "quantity": "a/b", "estimate": est, "ci": [lo, hi],
            "statistic": "ratio of geometric means", "n": {"a": 3, "b": 3}}


def test_a_measured_change_replaces_the_claimed_gain_and_a_shortfall_ranks_last():
    """The issue's demo: batching claimed 100–300 %, measured 1.05× [0.77, 1.45] on the same change;
    its premise falsified. A modest plan whose premise holds ranks first."""
    docs = {"memory-bound": _doc("memory-bound", "falsified", [_level(1.05, 0.77, 1.45)]),
            "compute-bound": _doc("compute-bound", "confirmed", [_level(1.05, 0.77, 1.45)])}
    batch = _plan(1, (100, 300), 0.7, "S", ["memory-bound"], P.parse_change("parallel=1->4"))
    cores = _plan(2, (20, 60), 0.6, "M", ["compute-bound"])
    out = P.evaluate([batch, cores], docs)
    assert [v["id"] for v in out] == [2, 1]
    b = out[1]
    assert b["gain_basis"] == "measured" and out[0]["gain_basis"] == "claimed"
    assert b["measured_effect"]["gain"] == 5.0 and b["measured_effect"]["gain_ci"] == [-23.0, 45.0]
    assert b["measured_effect"]["short"] and b["measured_effect"]["prediction"] in ("memory-bound.p1", "compute-bound.p1")
    assert "counted from the measured -23–45%, claimed 100–300%" in b["score_reason"], b["score_reason"]
    assert "measured +5% (95% CI -23% to +45%) for parallel 1→4" in b["reason"]
    assert "short of the claimed 100–300%" in b["reason"]
    assert P.gain_cell(b["measured_effect"], 100, 300) == "+5% measured (claimed 100–300%)"
    # measured short alone (premise open) is enough to rank it below a plan that stands
    docs2 = {"memory-bound": _doc("memory-bound", "open", [_level(1.05, 0.77, 1.45)]),
             "compute-bound": _doc("compute-bound", "open")}
    out2 = P.evaluate([batch, _plan(2, (1, 2), 0.1, "L", ["compute-bound"])], docs2)
    assert [v["id"] for v in out2] == [2, 1] and out2[1]["tier"] == 1


def test_a_measured_change_that_pays_counts_its_interval_and_the_reverse_direction_inverts():
    docs = {"h": _doc("h", "confirmed", [_level(3.0, 2.5, 3.6)])}
    up = P.evaluate([_plan(1, (100, 300), 0.7, "S", ["h"], P.parse_change("parallel=1->4"))], docs)[0]
    assert up["tier"] == 0 and up["measured_effect"]["gain_ci"] == [150.0, 260.0]
    assert up["score"] == round(P.base_score(150, 260, 0.7, "S"), 6)
    down = P.evaluate([_plan(1, (10, 20), 0.7, "S", ["h"], P.parse_change("parallel=4->1"))], docs)[0]
    assert round(down["measured_effect"]["ratio"], 3) == round(1 / 3, 3) and down["tier"] == 1
    other = P.evaluate([_plan(1, (10, 20), 0.7, "S", ["h"], P.parse_change("threads=1->4"))], docs)[0]
    assert other["gain_basis"] == "claimed" and other["measured_effect"] is None


def test_a_change_is_checked():
    import pytest

    from optlog.errors import BadInput

    assert P.parse_change("parallel=1→4") == {"label": "parallel", "from": "1", "to": "4"}
    for bad in ("parallel", "parallel=1", "=1->4", "parallel=4->4"):
        with pytest.raises(BadInput):
            P.parse_change(bad)
