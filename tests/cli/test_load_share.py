"""A comparison whose groups got clearly different CPU shares says so in its verdict (issue 28
item 6): the reason of the level and the one line a person reads. The runs carry the load metrics a
launch records (runs.treeshare); here they are put in the database directly, the verdict goes
through the in-process face."""

from __future__ import annotations

from tests._face import face, ok
from tests._verdicts import seed_runs

TTT = "total_token_throughput"


def test_verdict_says_when_the_groups_got_clearly_different_cpu_shares(ws, monkeypatch):
    rows = [({"config": "tp4", "repeat": i}, {TTT: v, "cpu_share": s}) for i, (v, s) in
            enumerate([(1000, 0.97), (1010, 0.98), (990, 0.96)])]
    rows += [({"config": "tp8", "repeat": i}, {TTT: v, "cpu_share": s}) for i, (v, s) in
             enumerate([(700, 0.51), (720, 0.55), (690, 0.49)])]
    rows += [({"config": "tp2", "repeat": i}, {TTT: v, "cpu_share": s}) for i, (v, s) in
             enumerate([(600, 0.95), (610, 0.99), (590, 0.97)])]
    seed_runs(ws, rows)
    with face(ws, monkeypatch) as call:
        ok(call("hypothesis_add", {"title": "tp4 beats tp8", "id": "h"}))
        ok(call("hypothesis_add", {"title": "tp4 beats tp2", "id": "q"}))
        ok(call("prediction_add", {"hypothesis": "h", "expect": "a > b", "metric": TTT,
                                   "a": {"config": "tp4"}, "b": {"config": "tp8"}}))
        ok(call("prediction_add", {"hypothesis": "q", "expect": "a > b", "metric": TTT,
                                   "a": {"config": "tp4"}, "b": {"config": "tp2"}}))
        res = {r["hypothesis"]: r["predictions"][0] for r in ok(call("verdict", {"detail": True}))["results"]}
    said = "CPU share differs: a got 97%, b 52% of the CPU time they asked for"
    p = res["h"]
    assert p["status"] == "confirmed"  # the outcome stands; the reader is told what else differed
    assert said in p["levels"][0]["reason"] and p["explanation"].endswith(said)
    assert p["load_differs"] == said
    # groups that got the same share: nothing said
    q = res["q"]
    assert "CPU share" not in q["levels"][0]["reason"] and "load_differs" not in q
