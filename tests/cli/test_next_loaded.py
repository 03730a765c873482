"""Issue 45 (2): `next` proposes re-running the loaded cells first when they decide the outcome: the
quiet runs alone judge a prediction differently, or are too few to judge it. Through the real CLI on
runs put in the workspace's database (SQLite or PostgreSQL)."""

from __future__ import annotations

from tests._verdicts import seed_runs


def _rivals(ws, quiet_tps2: float, loaded: bool = True):
    """threads 1 → 2: the one quiet pair and five loaded pairs that say the opposite."""
    rows = [({"model": "g", "threads": 1, "repeat": 0}, {"tps": 10.0}),
            ({"model": "g", "threads": 2, "repeat": 0}, {"tps": quiet_tps2})]
    flag = {"loaded": "true"} if loaded else {}
    for i in range(1, 6):
        rows.append(({"model": "g", "threads": 1, "repeat": i, **flag}, {"tps": 30.0 + i * 0.1}))
        rows.append(({"model": "g", "threads": 2, "repeat": i, **flag}, {"tps": 10.0 + i * 0.1}))
    ids = seed_runs(ws, rows)
    ws.cli("hyp", "add", "compute bound: decode scales with threads", "--id", "scales")
    ws.cli("hyp", "add", "memory bound: threads do not help", "--id", "flat", "--rival", "scales")
    ws.cli("predict", "scales", "--expect", "k(threads) in [0.2, 1.2]", "--metric", "tps", "--a", "model=g")
    ws.cli("predict", "flat", "--expect", "k(threads) < 0.1", "--metric", "tps", "--a", "model=g")
    return ids


def test_next_proposes_rerunning_the_loaded_cells_first(ws):
    ids = _rivals(ws, 10.0 * 2 ** 0.36)
    d = ws.j("next", "scales")
    e = d["pairs"][0]
    best = e["candidates"][0]
    assert best["source"] == "quiet", e["candidates"]
    assert sorted(best["rerun"]["runs"]) == sorted(ids[2:]), best
    assert {tuple(sorted(c.items())) for c in best["rerun"]["cells"]} == {(("threads", 1),), (("threads", 2),)}, best
    assert "quiet runs alone" in best["why"] and "--when-quiet" in best["why"], best["why"]
    # the evidence was recorded, not launched: what to run is said, with the wait for a quiet machine
    assert e["spec"] is None and "--when-quiet" in e["spec_note"] and "threads=1" in e["spec_note"], e


def test_no_rerun_is_proposed_when_the_machine_was_quiet(ws):
    _rivals(ws, 10.0 * 2 ** 0.36, loaded=False)
    d = ws.j("next", "scales")
    assert all(c["source"] != "quiet" for e in d["pairs"] for c in e["candidates"]), d


def test_the_text_says_rerun_not_vary(ws):
    _rivals(ws, 10.0 * 2 ** 0.36)
    out = ws.cli("next", "scales").out
    assert "best: re-run the loaded cells (quiet" in out and "vary None" not in out, out
