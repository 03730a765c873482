"""`optlog run launch SPEC --dry-run` (issue 45): the commands each run would run and the run count,
planned exactly as a launch plans them (`--set` applied, templates rendered, launch order), with
nothing launched and nothing written (no run, no launch record, no commit); bad input is exit 2."""

from __future__ import annotations

from _launch import spec


def _state(ws):
    """The workspace's commits, git status and files (the database's own state folder aside)."""
    return ws.git("log", "--oneline"), ws.git("status", "--porcelain"), sorted(
        str(p.relative_to(ws.root)) for p in ws.root.rglob("*") if not {".git", ".optlog"} & set(p.parts))


def test_a_dry_run_shows_every_runs_commands_and_launches_nothing(ws):
    rel = spec(ws, "dry", bench={"cmd": "{{ py }} -c pass --concurrency {{ concurrency }} --num-prompts "
                                        "{{ concurrency * 2 }} --secret-token hunter2hunter2"},
               matrix={"concurrency": [1, 4], "parallel": [2]}, repeats=2,
               server={"cmd": "{{ py }} -m http.server {{ port }} --parallel {{ parallel }}"})
    before = _state(ws)
    d = ws.j("run", "launch", rel, "--dry-run", "--set", "parallel=[2,8]")
    assert d["dry_run"] is True and d["spec"] == rel and d["runs"] == 8 == len(d["points"])
    assert d["servers"] == 2  # one server command per parallel level
    by = {(p["labels"]["concurrency"], p["labels"]["parallel"], p["repeat"]): p for p in d["points"]}
    assert set(by) == {(c, par, r) for c in (1, 4) for par in (2, 8) for r in (0, 1)}
    p = by[(4, 8, 1)]
    assert p["bench"][-6:] == ["--concurrency", "4", "--num-prompts", "8", "--secret-token", "<redacted>"]
    assert p["server"][-2:] == ["--parallel", "8"]
    text = ws.cli("run", "launch", rel, "--dry-run").out
    assert text.startswith(f"dry run of {rel}: 4 runs, 1 server command; nothing launched, nothing written")
    assert "hunter2" not in text and "--num-prompts 2" in text
    assert _state(ws) == before
    assert ws.j("run", "list")["runs"] == [] and not (ws.root / "launches").exists()
    assert not (ws.root / ".optlog" / "launches").exists() or not any((ws.root / ".optlog" / "launches").iterdir())


def test_a_dry_run_of_a_bad_spec_is_exit_2(ws):
    rel = spec(ws, "bad", bench={"cmd": "{{ py }} -c pass --n {{ nope }}"})
    r = ws.cli("run", "launch", rel, "--dry-run", check=False)
    assert r.code == 2 and "nope" in r.err and "Traceback" not in r.err
    r = ws.cli("run", "launch", "runs/missing.yaml", "--dry-run", check=False)
    assert r.code == 2 and "no such run spec" in r.err


def test_a_dry_run_states_the_time_from_the_runs_measured_like_these(ws):
    """Issue 45: the dry run shows what the launch would cost before anything runs, as `next` states it
    (core.costing): the run count and a time from the median run by level among the runs already
    measured with the plan's labels; nothing measured yet (or nothing like these): it says so."""
    bench = {"cmd": "{{ py }} -c \"import json; open('{{ out }}/result.json', 'w').write(json.dumps("
                    "{'output_throughput': 10.0}))\" --num-prompts {{ concurrency * 2 }}", "parser": "json"}
    rel = spec(ws, "cost", server=False, bench=bench, matrix={"concurrency": [1, 2]}, labels={"model": "m1"})
    d = ws.j("run", "launch", rel, "--dry-run")
    assert d["cost"]["runs"] == 2 and d["cost"]["estimate_s"] is None and d["cost"]["like"] is None, d["cost"]
    assert "\n  cost: 2 runs, time unknown: no run like these measured yet" in ws.cli("run", "launch", rel, "--dry-run").out
    ws.cli("run", "launch", rel)
    d = ws.j("run", "launch", rel, "--dry-run", "--set", "concurrency=[1,2,4]", "--set", "repeats=2")
    c = d["cost"]
    assert c["runs"] == 6 == d["runs"] and c["measured"] == 2 and c["axis"] == "concurrency", c
    assert c["like"] == "the same labels: model=m1"
    (m1, m2) = [b["median_s"] for b in c["by_level"]]
    assert [b["level"] for b in c["by_level"]] == [1, 2] and m1 > 0 and m2 > 0
    # concurrency 4 (nearest measured: 2) sends 8 requests where 2 sent 4: between 1x and 2x of its run
    assert abs(c["low_s"] - (2 * m1 + 4 * m2)) < 0.2 and abs(c["high_s"] - (2 * m1 + 6 * m2)) < 0.2, c
    assert c["low_s"] <= c["estimate_s"] <= c["high_s"]
    text = ws.cli("run", "launch", rel, "--dry-run", "--set", "concurrency=[1,2,4]", "--set", "repeats=2").out
    assert text.splitlines()[1].startswith("  cost: 6 runs, about ") and \
        "from 2 measured runs: the median by concurrency (1: " in text and "runs like these: the same labels: model=m1" in text
    # another model's runs are not like these: no time, said
    other = spec(ws, "other", server=False, bench=bench, matrix={"concurrency": [1, 2]}, labels={"model": "m2"})
    assert ws.j("run", "launch", other, "--dry-run")["cost"]["estimate_s"] is None
