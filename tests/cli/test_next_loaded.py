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
    assert "quiet runs alone" in best["why"] and "--when-quiet 600" in best["why"], best["why"]
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


def test_a_launched_rerun_spec_names_the_loaded_cells_and_waits_for_quiet(ws):
    """Runs of a real launch flagged loaded (a GPU process other than the run's, from optlog's fake
    NVML: deterministic), one quiet repeat launched beside them: the spec re-runs the loaded launch and
    says to wait for a quiet machine."""
    import json
    import sys

    import yaml

    fake = json.dumps({"gpus": [{"uuid": "GPU-aaaa", "processes": [{"pid": 999999, "used_mib": 512}]}]})
    cfg = ws.root / "optlog.yaml"
    d = yaml.safe_load(cfg.read_text()) or {}
    d["host_load"] = {"gpu_processes": True, "min_cpu_share": None}
    cfg.write_text(yaml.safe_dump(d, sort_keys=False))
    cmd = (f"{sys.executable} -m optlog.probes.gemm --m {{{{ m }}}} --k 32 --n 32 --dtype fp32 --device cpu "
           "--repeats 1 --output {{ out }}/result.json")
    (ws.root / "runs" / "g.yaml").write_text(yaml.safe_dump(
        {"name": "g", "bench": {"cmd": cmd, "parser": "probe"}, "matrix": {"m": [8, 64]}}, sort_keys=False))
    loaded = ws.j("run", "launch", "runs/g.yaml", "--set", "repeats=2", env={"OPTLOG_FAKE_NVML": fake})
    ws.j("run", "launch", "runs/g.yaml")
    flagged = {r["id"] for r in loaded["runs"]}
    assert all(ws.j("run", "show", str(i))["labels"].get("loaded") == "true" for i in flagged), flagged
    ws.cli("hyp", "add", "big m is faster", "--id", "big")
    ws.cli("hyp", "add", "big m is no faster", "--id", "same", "--rival", "big")
    ws.cli("predict", "big", "--expect", "a > b * 2", "--metric", "flops", "--a", "m=64", "--b", "m=8")
    ws.cli("predict", "same", "--expect", "a < b * 1.2", "--metric", "flops", "--a", "m=64", "--b", "m=8")
    e = ws.j("next", "big")["pairs"][0]
    best = e["candidates"][0]
    assert best["source"] == "quiet" and best["rerun"]["launches"] == [f"L{loaded['launch']}"], best
    assert e["spec"] == "runs/next-big.yaml", e
    text = (ws.root / e["spec"]).read_text()
    assert f"--when-quiet {best['rerun']['when_quiet']}" in text and "m=8; m=64" in text, text
    # a file is read by a person (no face spells it): no parameter by its Python name (issue 45's class)
    assert "when_quiet" not in text.split("\nname:")[0], text
    assert sorted(best["rerun"]["runs"]) == sorted(flagged), best
    # the written spec plans as it is: both cells, the repeats proposed
    assert ws.j("run", "launch", e["spec"], "--dry-run")["runs"] == 2 * best["repeats"]


def test_the_tool_is_told_its_own_spelling(ws, monkeypatch):
    from tests._face import face, ok

    _rivals(ws, 10.0 * 2 ** 0.36)
    with face(ws, monkeypatch) as call:
        e = ok(call("next", {"id": "scales"}))["pairs"][0]
    assert "when_quiet: 600" in e["candidates"][0]["why"] and "when_quiet: 600" in e["spec_note"], e
    assert "--when-quiet" not in e["candidates"][0]["why"] + e["spec_note"], e
