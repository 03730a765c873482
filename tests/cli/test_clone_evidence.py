"""A fresh clone keeps every decision (issue 13 item 1), through the real CLI and real git.

The runs a verdict used travel with git (one small file per run under `runs/evidence/`), committed
in the same commit as the verdict; a clone imports them into its own database, so `run list` shows
them and re-judging gives the same statuses and numbers. A verdict is never downgraded because its
evidence is missing *here* (a verdict made before evidence travelled, or a run not committed).
"""

from __future__ import annotations

import subprocess

import yaml

from tests._verdicts import seed_runs

TTT = "total_token_throughput"
SEED = [(64, 700, 213), (256, 1867, 727), (512, 2800, 1318)]
AB = ["--metric", TTT, "--a", "config=tp4pp2", "--b", "config=tp8", "--per", "concurrency"]


def _snapshot(root):
    """Every tracked-or-trackable file's bytes (not .git, not .optlog)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts and ".optlog" not in p.relative_to(root).parts}


def _judged(ws):
    """Two hypotheses judged from recorded runs: comm-bound falsified, compute-bound confirmed."""
    for c, tp8, tp4pp2 in SEED:
        ws.cli("run", "record", "--label", "config=tp8", "--label", f"concurrency={c}", "--metric", f"{TTT}={tp8}")
        ws.cli("run", "record", "--label", "config=tp4pp2", "--label", f"concurrency={c}",
               "--metric", f"{TTT}={tp4pp2}")
    ws.cli("hyp", "add", "Communication-bound", "--id", "comm-bound")
    ws.cli("hyp", "add", "Compute-bound", "--id", "compute-bound")
    ws.j("predict", "add", "comm-bound", "--expect", "a > b", *AB)
    ws.j("predict", "add", "compute-bound", "--expect", "a / b in [0.25, 0.6]", *AB)  # 0.30 inside by > 5 %
    res = {x["hypothesis"]: x["status"] for x in ws.j("verdict", "--all")["results"]}
    assert res == {"comm-bound": "falsified", "compute-bound": "confirmed"}


def _clone(ws, make_ws, name="clone"):
    c = make_ws(name, init=False)
    subprocess.run(["git", "clone", "-q", str(ws.root), str(c.root)], check=True, env=c.env, capture_output=True)
    assert not (c.root / ".optlog").exists()
    return c


def test_clone_verdict_all_changes_no_byte_and_commits_nothing(ws, make_ws):
    _judged(ws)
    c = _clone(ws, make_ws)
    before, files = c.commits(), _snapshot(c.root)
    out = c.j("verdict", "--all")
    assert {x["hypothesis"]: x["status"] for x in out["results"]} == {"comm-bound": "falsified",
                                                                      "compute-bound": "confirmed"}
    assert out["committed"] == 0 and not any(x["changed"] for x in out["results"])
    assert c.commits() == before
    assert _snapshot(c.root) == files
    assert c.git("status", "--porcelain") == ""


def test_clone_rejudges_from_committed_evidence_same_statuses_and_numbers(ws, make_ws):
    _judged(ws)
    origin = {h: yaml.safe_load((ws.root / "hypotheses" / f"{h}.yaml").read_text())["verdicts"][-1]
              for h in ("comm-bound", "compute-bound")}
    c = _clone(ws, make_ws)
    # forget the cached results: every prediction is evaluated afresh from the imported runs
    for h in origin:
        p = c.root / "hypotheses" / f"{h}.yaml"
        d = yaml.safe_load(p.read_text())
        for pr in d["verdicts"][-1]["predictions"]:
            pr["evidence"] = "stale"
        p.write_text(yaml.safe_dump(d, sort_keys=False))
    c.cli("sync")
    out = {x["hypothesis"]: x for x in c.j("verdict", "--all")["results"]}
    for h, v in origin.items():
        assert out[h]["status"] == v["status"]
        for mine, theirs in zip(out[h]["predictions"], v["predictions"]):
            assert mine["status"] == theirs["status"]
            assert mine["evidence"] == theirs["evidence"]  # the same runs, labels and numbers
            assert [(lv["level"], lv["a"], lv["b"], lv["ratio"], lv["values"], lv["outcome"], lv["runs"])
                    for lv in mine["levels"]] == \
                   [(lv["level"], lv["a"], lv["b"], lv["ratio"], lv["values"], lv["outcome"], lv["runs"])
                    for lv in theirs["levels"]]


def test_clone_run_list_shows_committed_runs(ws, make_ws):
    _judged(ws)
    ws.cli("run", "record", "--label", "config=unused", "--metric", f"{TTT}=1")  # no verdict used it
    mine = {r["id"]: r for r in ws.j("run", "list")["runs"]}
    c = _clone(ws, make_ws)
    theirs = {r["id"]: r for r in c.j("run", "list")["runs"]}
    assert set(theirs) == set(range(1, 7))  # the six a verdict used, under the same numbers
    for i, r in theirs.items():
        assert (r["labels"], r["metrics"], r["status"], r["invalidated"]) == \
               (mine[i]["labels"], mine[i]["metrics"], mine[i]["status"], mine[i]["invalidated"])
    shown = c.j("run", "show", "1")
    assert shown["uid"] == ws.j("run", "show", "1")["uid"] and len(shown["uid"]) == 32


def test_evidence_is_committed_with_the_verdict_one_small_file_per_run(ws):
    _judged(ws)
    files = sorted((ws.root / "runs" / "evidence").glob("*.yaml"))
    assert len(files) == 6 and all(p.stat().st_size < 2000 for p in files)
    # committed no later than the verdict that uses them: in the same commit
    sha = ws.git("log", "-1", "--format=%H", "--", "hypotheses/comm-bound.yaml").strip()
    in_commit = ws.git("show", "--name-only", "--format=", sha).split()
    assert "hypotheses/comm-bound.yaml" in in_commit and any(x.startswith("runs/evidence/") for x in in_commit)
    assert ws.git("status", "--porcelain") == ""
    d = yaml.safe_load(files[0].read_text())
    assert set(d) >= {"uid", "number", "status", "labels", "metrics", "invalidated", "environment_sha256"}
    assert "telemetry" not in d


def test_invalidation_travels_and_rejudges_the_same_in_the_clone(ws, make_ws):
    _judged(ws)
    ws.cli("run", "invalidate", "2", "--why", "thermal throttling")
    here = {x["id"]: x["status"] for x in ws.j("hypothesis", "list")["hypotheses"]}
    c = _clone(ws, make_ws)
    before, files = c.commits(), _snapshot(c.root)
    assert c.j("run", "show", "2")["invalidated"] is True
    assert {x["hypothesis"]: x["status"] for x in c.j("verdict", "--all")["results"]} == here
    assert c.commits() == before and _snapshot(c.root) == files


def test_verdict_is_not_downgraded_when_its_runs_are_missing_here(ws, make_ws):
    # runs put into the database behind optlog's back, so no evidence file exists (like a verdict
    # made before evidence travelled): the clone must keep the verdict, not write `open` over it
    ids = seed_runs(ws, [({"config": cfg, "concurrency": c}, {TTT: v})
                         for c, tp8, tp4 in SEED for cfg, v in (("tp8", tp8), ("tp4pp2", tp4))])
    ws.cli("hyp", "add", "Communication-bound", "--id", "comm-bound")
    ws.j("predict", "add", "comm-bound", "--expect", "a > b", *AB)
    assert ws.j("verdict", "--all")["results"][0]["status"] == "falsified"
    for p in (ws.root / "runs" / "evidence").glob("*.yaml"):  # as if made by an optlog without evidence files
        p.unlink()
    ws.git("add", "-A", "runs")
    ws.git("commit", "-q", "-m", "old workspace: no evidence files")
    c = _clone(ws, make_ws)
    before, files = c.commits(), _snapshot(c.root)
    r = c.cli("verdict", "--all", "--json")
    res = r.json["results"][0]
    assert res["status"] == "falsified" and res["changed"] is False and res.get("kept")
    assert "not in this database" in res["kept"] and str(ids[0]) in res["kept"]
    assert "not in this database" in r.err
    assert c.commits() == before and _snapshot(c.root) == files
    # and `verdict --check` does not pass a falsified prediction because the runs are elsewhere
    assert c.cli("verdict", "--all", "--check", check=False).code == 1


def test_clone_of_a_workspace_with_launched_imported_recorded_runs_verdict_changes_nothing(ws, make_ws, monkeypatch):
    """Issue 31 item 1: launched runs keep `launch_id` and what they were rendered with (`raw`) in
    the database where they ran; the clone imports them from their evidence files without either.
    The verdict's evidence fingerprint must not depend on what the clone cannot have."""
    import json

    from tests._face import face, ok
    from tests._launch import bench_cmd, spec

    rel = spec(ws, "ld", server=False, matrix={"concurrency": [1, 2]}, params={"threads": 3},
               bench={"cmd": bench_cmd("--echo {{ threads }}")})
    ws.git("add", rel)
    ws.git("commit", "-qm", "the spec")
    res = ws.root.parent / "res.json"
    res.write_text(json.dumps({"output_throughput": 5.0, "max_concurrency": 4.0}))
    with face(ws, monkeypatch) as call:
        ok(call("run_launch", {"spec": rel, "detach": False}))
        ok(call("run_import", {"files": [str(res)], "format": "json", "labels": {"concurrency": "4"}}))
        for c, v in ((1, 1.0), (2, 2.0), (4, 4.0), (4, 4.5)):
            ok(call("run_record", {"labels": {"concurrency": str(c), "kind": "rec"}, "metrics": {"max_concurrency": str(v)}}))
        ok(call("run_invalidate", {"refs": ["7"], "why": "a bad point"}))
        for h in ("launch-scales", "all-scale", "overridden"):
            ok(call("hypothesis_add", {"title": h, "id": h}))
            ok(call("prediction_add", {"hypothesis": h, "expect": "a < b", "metric": "max_concurrency",
                                       "a": {"concurrency": "1"}, "b": {"concurrency": "2"}}))
        ok(call("verdict", {"all": True}))
        ok(call("hypothesis_set", {"id": "overridden", "status": "falsified", "why": "known from elsewhere"}))
    assert ws.git("status", "--porcelain") == ""
    assert any(r["source"] == "launched" for r in ws.j("run", "list")["runs"])
    c = _clone(ws, make_ws)
    before, files = c.commits(), _snapshot(c.root)
    st = c.j("status")  # the clone's first command: it imports the committed runs
    assert st["run_database_empty"] is False and st["runs_total"] == 5
    assert "empty" not in st.get("notice", ""), st  # a notice never contradicts the figures beside it
    out = c.j("verdict", "--all")
    assert out["committed"] == 0 and not any(x["changed"] for x in out["results"]), out
    assert c.commits() == before and _snapshot(c.root) == files


def test_a_brand_new_workspace_is_not_called_a_fresh_clone(ws, make_ws):
    ws.cli("hyp", "add", "Communication-bound", "--id", "comm-bound")
    st = ws.j("status")
    assert st["run_database_empty"] is True and st["notice"] == "the run database is empty"
    c = _clone(ws, make_ws)
    assert "fresh clone" in c.j("status")["notice"]
