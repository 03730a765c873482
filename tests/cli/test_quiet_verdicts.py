"""Issue 45 (2, 3): a verdict over runs some of which were measured under load also says what the
quiet runs alone give; verdict texts name the runs they left out and the rule. Through the real CLI
on runs put in the workspace's database (SQLite or PostgreSQL)."""

from __future__ import annotations

from tests._verdicts import seed_runs


def _scaling(ws):
    """The issue's case: threads 1 → 2; the one quiet pair scales (k = 0.36), the loaded runs do not
    (all runs together: a negative exponent)."""
    rows = [({"model": "g", "threads": 1, "repeat": 0}, {"tps": 10.0}),
            ({"model": "g", "threads": 2, "repeat": 0}, {"tps": 10.0 * 2 ** 0.36})]
    for i in range(1, 6):
        rows.append(({"model": "g", "threads": 1, "repeat": i, "loaded": "true"}, {"tps": 30.0 + i * 0.1}))
        rows.append(({"model": "g", "threads": 2, "repeat": i, "loaded": "true"}, {"tps": 10.0 + i * 0.1}))
    return seed_runs(ws, rows)


def test_a_verdict_over_loaded_runs_says_what_the_quiet_runs_alone_give(ws):
    ids = _scaling(ws)
    ws.cli("hyp", "add", "threads scale", "--id", "h")
    ws.cli("predict", "h", "--expect", "k(threads) in [0.2, 0.5]", "--metric", "tps", "--a", "model=g")
    r = ws.cli("verdict", "h", "--json")
    p = r.json["results"][0]["predictions"][0]
    assert p["loaded_runs"] == sorted(ids[2:]), p
    assert p["levels"][0]["estimate"] < -0.5, p["levels"][0]  # all runs: the load's answer
    q = p["quiet"]
    assert q["runs"] == sorted(ids[:2]), q
    assert abs(q["levels"][0]["estimate"] - 0.36) < 1e-6, q
    assert q["thin"] is True and q["differs"] is True, q  # two runs: no interval, and not the same answer
    assert "quiet runs alone (runs 1–2): k(threads) = 0.36" in p["explanation"], p["explanation"]
    assert "too few for an interval" in p["explanation"], p["explanation"]
    # the one-line face and the human text say it too
    line = ws.cli("verdict", "h", "--brief", "--json").json["results"][0]["predictions"][0]["line"]
    assert "quiet runs alone" in line
    assert "quiet runs alone (runs 1–2)" in ws.cli("verdict", "h").out


def test_too_few_quiet_runs_is_said(ws):
    """Every run of b loaded: the quiet runs alone cannot judge, and the verdict says so."""
    rows = [({"cfg": "new", "repeat": i}, {"t": 10.0 + i}) for i in range(3)]
    rows += [({"cfg": "old", "repeat": i, "loaded": "true"}, {"t": 20.0 + i}) for i in range(3)]
    seed_runs(ws, rows)
    ws.cli("hyp", "add", "new is faster", "--id", "h")
    ws.cli("predict", "h", "--expect", "a < b", "--metric", "t", "--a", "cfg=new", "--b", "cfg=old")
    p = ws.cli("verdict", "h", "--json").json["results"][0]["predictions"][0]
    assert p["quiet"]["status"] == "untested" and p["quiet"]["thin"] is True, p["quiet"]
    assert "quiet runs alone: too few to judge (no quiet run in b (cfg=old))" in p["explanation"], p["explanation"]


def test_a_verdict_on_a_quiet_machine_has_no_quiet_part(ws):
    seed_runs(ws, [({"cfg": c, "repeat": i}, {"t": v + i}) for c, v in (("new", 10.0), ("old", 20.0)) for i in range(3)])
    ws.cli("hyp", "add", "new is faster", "--id", "h")
    ws.cli("predict", "h", "--expect", "a < b", "--metric", "t", "--a", "cfg=new", "--b", "cfg=old")
    p = ws.cli("verdict", "h", "--json").json["results"][0]["predictions"][0]
    assert "quiet" not in p and "quiet runs" not in p["explanation"]


def test_runs_left_out_are_named_with_the_rule(ws):
    """Issue 45 (3): '3 run(s) not comparable' said neither which runs nor why."""
    rows = [({"cfg": c, "parallel": 1, "repeat": i}, {"t": v + i}) for c, v in (("new", 10.0), ("old", 20.0)) for i in range(3)]
    rows += [({"cfg": "new", "parallel": 4, "repeat": i}, {"t": 5.0 + i}) for i in range(1)]
    ids = seed_runs(ws, rows)
    ws.cli("hyp", "add", "new is faster", "--id", "h")
    ws.cli("predict", "h", "--expect", "a < b", "--metric", "t", "--a", "cfg=new", "--b", "cfg=old")
    p = ws.cli("verdict", "h", "--json").json["results"][0]["predictions"][0]
    assert [x["run"] for x in p["not_comparable"]] == [ids[-1]], p["not_comparable"]
    assert f"run {ids[-1]} left out: parallel=4 where the others have parallel=1" in p["explanation"], p["explanation"]
    assert "run(s) not comparable" not in p["explanation"]


def test_a_prediction_about_load_itself_has_no_quiet_part(ws):
    seed_runs(ws, [({"repeat": i, **({"loaded": "true"} if i % 2 else {"phase": "base"})}, {"t": 10.0 + i})
                   for i in range(6)])
    ws.cli("hyp", "add", "load slows it", "--id", "h")
    ws.cli("predict", "h", "--expect", "a > b", "--metric", "t", "--a", "loaded=true", "--b", "phase=base")
    p = ws.cli("verdict", "h", "--json").json["results"][0]["predictions"][0]
    assert p["loaded_runs"] and p["status"] != "untested", p  # judged on loaded runs, as asked
    assert "quiet" not in p and "quiet runs alone" not in p["explanation"], p
