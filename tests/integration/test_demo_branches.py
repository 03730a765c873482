"""The real demo's every outcome, forced by fixtures: its sweep's runs are recorded with the numbers
of each branch ("batching pays": 4 slots 3× of 1; "batching does not pay": 1.05×), then the demo's
own judging, pivot, plans and report run on them (`service.demo.judge_and_pivot`, what `optlog demo`
runs after its sweep). What must hold in each: the ranking an engineer would sign (no plan whose
premise was falsified, or whose own change was measured short of its claim, above one that stands),
complete plans, and every verdict recorded once."""

from __future__ import annotations

from typing import Any

import pytest

from tests._face import use_env
from tests._verdicts import seed_runs

# output tokens/s and ms per output token, 3 repeats a side, at concurrency 4
BRANCHES = {
    "pays": {"1": ([100.0, 104.0, 97.0], [38.0, 37.0, 39.0]), "4": ([300.0, 310.0, 290.0], [50.0, 52.0, 49.0])},
    "does not pay": {"1": ([13_200.0, 13_900.0, 12_800.0], [9.0, 9.2, 8.8]),
                     "4": ([13_900.0, 14_400.0, 13_600.0], [35.0, 36.0, 34.0])},
}


def _demo(ws: Any, monkeypatch: Any, branch: str) -> tuple[dict[str, Any], list[str]]:
    use_env(ws, monkeypatch)
    from optlog.service import demo
    from optlog.service.context import Ctx

    said: list[str] = []
    ctx = Ctx.find(ws.root)
    try:
        demo.register_real(ctx, said.append)
        rows = []
        for par, (tput, tpot) in BRANCHES[branch].items():
            for i, (t, ms) in enumerate(zip(tput, tpot)):
                rows.append(({"parallel": par, "concurrency": 4, "repeat": i, "server": "llama.cpp"},
                             {"output_throughput": t, "mean_tpot_ms": ms}))
        seed_runs(ws, rows)
        return demo.judge_and_pivot(ctx, said.append), said
    finally:
        ctx.close()


@pytest.mark.parametrize("branch", list(BRANCHES))
def test_each_outcome_of_the_demo_ends_with_a_ranking_that_follows_the_verdicts(ws, monkeypatch, branch):
    out, said = _demo(ws, monkeypatch, branch)
    status = {r["hypothesis"]: r["status"] for r in out["verdicts"]["results"]}
    plans = out["plans"]
    batch = next(p for p in plans if p["title"].startswith("Serve with --parallel 4 or more"))
    # the demo measured the batch plan's own change (parallel 1→4): that effect is what ranks it
    assert batch["gain_basis"] == "measured" and batch["change"] == {"label": "parallel", "from": "1", "to": "4"}
    assert "measured" in batch["score_reason"] and "claimed 100–300%" in batch["score_reason"]
    if branch == "pays":
        assert status["memory-bound"] == "confirmed" and status["compute-bound"] == "falsified"
        assert plans[0] is batch and batch["tier"] == 0 and not batch["measured_effect"]["short"]
        assert batch["measured_effect"]["gain"] == pytest.approx(200, abs=10)
    else:
        assert status["memory-bound"] == "falsified" and status["compute-bound"] == "confirmed"
        assert plans[-1] is batch and batch["tier"] == 1, [(p["rank"], p["title"], p["score"]) for p in plans]
        assert plans[0]["title"].startswith("More cores or a smaller quantisation")
        assert batch["reason"].startswith("ranked below every plan whose needs hold or are open: measured +")
        assert "short of the claimed 100–300%" in batch["reason"] and "rests on memory-bound, falsified" in batch["reason"]
    # every face says which: the narration and the report
    line = next(x for x in said if x.startswith(f"plan #{batch['rank']} "))
    assert "measured" in line and "claimed 100–300%" in line, line
    report = (ws.root / out["report"]).read_text()
    assert "measured (claimed 100–300%)" in report
    # complete plans: what to change, why (with the evidence), steps, risks, how to validate
    plan_file = (ws.root / batch["file"]).read_text()
    assert "None given" not in plan_file
    for p in plans:
        full = ws.j("plan", "show", str(p["id"]))
        assert all(full.get(k) for k in ("rationale", "steps", "risks", "validation")), full
        assert "The demo's verdicts: memory-bound" in full["rationale"]


def test_the_demo_records_each_verdict_once(ws, monkeypatch):
    _demo(ws, monkeypatch, "does not pay")
    import yaml

    for h in ("memory-bound", "compute-bound"):
        doc = yaml.safe_load((ws.root / "hypotheses" / f"{h}.yaml").read_text())
        assert len(doc["verdicts"]) == 1, [(v["at"], v["status"], v.get("warnings")) for v in doc["verdicts"]]
    log = ws.git("log", "--format=%s")
    assert log.count("memory-bound → falsified") == 1, log
