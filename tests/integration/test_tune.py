"""Issue 21: `optlog tune`, a search over a spec's `search:` space with Optuna, each trial a launched
point. Through the real CLI, the real launcher and real processes: tests/_tune_bench.py is a bench
whose metrics are a known function of the searched parameters, so a brute-force grid knows the answer:

    output_throughput = 10·x (+5 for mode b)        p99_ttft_ms = 10·x² (+100 for mode b)

Under `p99_ttft_ms <= 100` the best is x=3, mode a (30); unconstrained it is x=5, mode b (55).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from _launch import PY, TESTS, assert_none_left, end_own, free_port, mark_case, server_cmd, start_optlog, wait_for
from tests._face import tool  # noqa: F401  (a fixture)

BEST = {"x": 3, "mode": "a"}
CONSTRAINED = ("--maximize", "output_throughput", "--constraint", "p99_ttft_ms <= 100")


def _spec(ws, name="t", *, sleep=0.0, search=None, server=None, bench_extra="", **top):
    d = {"name": name, "params": {"py": PY, "tests": str(TESTS), "sleep": sleep, **top.pop("params", {})},
         "search": search or {"x": {"low": 1, "high": 5}, "mode": {"choices": ["a", "b"]}},
         "bench": {"cmd": "{{ py }} {{ tests }}/_tune_bench.py --out {{ out }} --x {{ x }} --mode {{ mode }} "
                          "--sleep {{ sleep }} " + bench_extra},
         "telemetry": False, **top}
    if server:
        d["server"] = server
    (ws.root / "runs" / f"{name}.yaml").write_text(yaml.safe_dump(d, sort_keys=False, width=10000))
    return f"runs/{name}.yaml"


def _dominated(p, q):
    """q dominates p (maximise throughput, minimise latency)."""
    return q[0] >= p[0] and q[1] <= p[1] and (q[0] > p[0] or q[1] < p[1])


def test_constrained_study_finds_the_grid_best_and_records_trials_as_labelled_runs(ws):
    rel = _spec(ws)
    grid = ws.j("tune", rel, *CONSTRAINED, "--sampler", "grid", "--study", "grid")
    assert grid["sampler"] == "grid" and len(grid["trials"]) == 10
    assert sorted((t["params"]["x"], t["params"]["mode"]) for t in grid["trials"]) == [
        (x, m) for x in range(1, 6) for m in "ab"]
    assert [b["params"] for b in grid["best"]] == [BEST] and grid["best"][0]["values"] == [30.0]
    feasible = {(t["params"]["x"], t["params"]["mode"]) for t in grid["trials"] if t["feasible"]}
    assert feasible == {(1, "a"), (2, "a"), (3, "a")}
    # the default sampler (TPE) with a budget the size of the grid finds the same configuration
    tpe = ws.j("tune", rel, *CONSTRAINED, "--trials", "10", "--seed", "3", "--study", "tpe")
    assert tpe["sampler"] == "tpe" and len(tpe["trials"]) == 10
    assert [b["params"] for b in tpe["best"]] == [BEST]
    # a configuration proposed again is not launched again: it takes the earlier trial's result
    launched = [t for t in tpe["trials"] if "same_as" not in t]
    assert len({t["run"] for t in launched}) == len(launched)
    for t in tpe["trials"]:
        if "same_as" in t:
            twin = next(u for u in tpe["trials"] if u["number"] == t["same_as"])
            assert twin["params"] == t["params"] and twin["run"] == t["run"] and twin["values"] == t["values"]
    # each trial is a launched run with its parameters and study/trial as labels
    run = ws.j("run", "show", str(grid["best"][0]["run"]))
    assert run["source"] == "launched" and run["status"] == "succeeded"
    assert {k: run["labels"][k] for k in ("x", "mode", "study", "trial")} == {**BEST, "study": "grid",
                                                                            "trial": grid["best"][0]["number"]}
    assert run["metrics"]["output_throughput"] == 30.0
    # list and show read the stored studies
    studies = {s["study"]: s for s in ws.j("tune", "list")["studies"]}
    assert set(studies) == {"grid", "tpe"} and studies["grid"]["trials"] == 10
    shown = ws.j("tune", "show", "grid")
    assert shown["trials"] == grid["trials"] and shown["best"] == grid["best"]
    # the best was re-measured (default 3 times, interleaved with the runner-up) and stayed the best
    rm = grid["best"][0]["remeasured"]
    assert rm["n"] == 3 and rm["values"] == [30.0] and rm["first"] == [30.0] and rm["shrink_pct"] == [0.0]
    assert grid["remeasure"]["changed"] is False and grid["remeasure"]["separation"]["runner_up"] == 2
    assert ws.cli("tune", "show", "nope", "--json", check=False).code != 0
    # running the study again resumes it: it has its trials, nothing more is launched
    again = ws.j("tune", rel, *CONSTRAINED, "--sampler", "grid", "--study", "grid")
    assert again["trials"] == grid["trials"] and again["best"] == grid["best"]
    assert [la for la in again["launches"] if la.get("remeasure")] == []  # measured already: not again


def test_pareto_study_returns_only_the_non_dominated_points(ws):
    rel = _spec(ws)
    d = ws.j("tune", rel, "--maximize", "output_throughput", "--minimize", "p99_ttft_ms", "--sampler", "grid",
             "--remeasure", "0")
    assert d["directions"] == ["maximize", "minimize"]
    pts = [tuple(t["values"]) for t in d["trials"]]
    front = [tuple(b["values"]) for b in d["best"]]
    expected = [p for p in pts if not any(_dominated(p, q) for q in pts)]
    assert sorted(front) == sorted(expected)
    assert {(b["params"]["x"], b["params"]["mode"]) for b in d["best"]} == {(x, "a") for x in range(1, 6)} | {(5, "b")}
    # the default sampler for several objectives is NSGA-II
    d2 = ws.j("tune", rel, "--maximize", "output_throughput", "--minimize", "p99_ttft_ms", "--trials", "3",
              "--study", "nsga", "--remeasure", "0")
    assert d2["sampler"] == "nsga2" and len(d2["trials"]) == 3
    p2 = [tuple(t["values"]) for t in d2["trials"] if "same_as" not in t]
    assert all(not any(_dominated(tuple(b["values"]), q) for q in p2) for b in d2["best"])


def test_trials_sharing_a_server_command_share_the_server(ws):
    port = free_port()
    srv = {"cmd": server_cmd(), "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05},
           "check": {"prompts": ["The capital of France is"], "expect_regex": "Paris"}, "stop": {"timeout_s": 3}}
    rel = _spec(ws, "srv", server=srv, params={"port": port, "marker": str(ws.root)},
                search={"x": {"low": 1, "high": 3}, "mode": {"choices": ["a"]}}, bench_extra="--url {{ server_url }}")
    d = ws.j("tune", rel, "--maximize", "output_throughput", "--sampler", "grid", "--remeasure", "0")
    assert len(d["trials"]) == 3 and all(t["state"] == "complete" for t in d["trials"])
    (la,) = d["launches"]
    logs = list((ws.root / ".optlog" / "launches" / str(la["launch"])).glob("server-*.stdout.log"))
    assert len(logs) == 1  # one server for the three trials: their rendered server command is the same
    text = (ws.root / ".optlog" / "launches" / str(la["launch"]) / "launch.log").read_text()
    assert text.count("sanity check passed") == 1


def _trials(ws, study):
    return ws.j("tune", "show", study)["trials"]


def _study_tables(ws):
    """Where Optuna's `trials` table is: [(schema or file, …)]; never optlog's own schema or public."""
    url = ws.env.get("OPTLOG_DB_URL")
    if not url:
        import sqlite3

        own = sqlite3.connect(ws.root / ".optlog" / "optlog.db")
        assert not own.execute("SELECT name FROM sqlite_master WHERE name = 'trials'").fetchall()
        tune = sqlite3.connect(ws.root / ".optlog" / "tune.db")
        return ["tune.db"] if tune.execute("SELECT name FROM sqlite_master WHERE name = 'trials'").fetchall() else []
    import psycopg

    with psycopg.connect(url) as c:
        return [r[0] for r in c.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = 'trials'")]


def test_two_workers_share_one_study_and_run_n_distinct_trials(ws, backend):
    # the first trial's bench waits until the other worker's first bench runs beside it: both work
    # on the study however long the second worker takes to start on a busy machine
    rel = _spec(ws, search={"x": {"low": 1.0, "high": 5.0}, "mode": {"choices": ["a", "b"]}},
                bench_extra=f"--barrier {ws.root.parent / 'barrier'}")
    d = ws.j("tune", rel, *CONSTRAINED, "--trials", "6", "--workers", "2", "--sampler", "random", "--seed", "1",
             "--remeasure", "0")
    assert "worker_errors" not in d, d
    trials = d["trials"]
    assert sorted(t["number"] for t in trials) == list(range(6))
    assert all(t["state"] == "complete" for t in trials), trials
    assert {t["worker"] for t in trials} == {0, 1}  # both worked on it
    runs = [t["run"] for t in trials if "same_as" not in t]
    assert len(set(runs)) == len(runs) == 6  # no trial ran twice
    assert len(d["launches"]) == 1  # this process's launch; the other worker had its own
    launched = ws.j("run", "list", "--json")
    ids = {r["id"] for r in (launched["runs"] if isinstance(launched, dict) else launched)}
    assert set(runs) <= ids and len(ids) == 6
    where = _study_tables(ws)
    if backend == "sqlite":
        assert where == ["tune.db"]
    else:  # the workspace's companion schema in the same database
        ident = yaml.safe_load((ws.root / "optlog.yaml").read_text())["id"]
        assert len(where) == 1 and where[0].startswith("optlog_") and where[0].endswith("_tune") and ident[:8] in where[0], where


@pytest.mark.slow
def test_kill_9_mid_study_then_resume_loses_and_repeats_no_finished_trial(ws):
    cfg = ws.root / "optlog.yaml"
    cfg.write_text(cfg.read_text() + "\ntune:\n  heartbeat_s: 1\n  grace_s: 2\n")
    held = ws.root.parent / "hold"
    rel = _spec(ws, bench_extra=f"--hold 3,{held}")  # the third trial's bench runs until killed
    args = [sys.executable, "-m", "optlog", "tune", rel, *CONSTRAINED, "--trials", "5", "--sampler", "grid", "--json"]
    log = open(ws.root.parent / "tune.log", "w")
    p = subprocess.Popen(args, cwd=ws.root, env=ws.env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    try:
        wait_for(lambda: (held / "held").exists() or p.poll() is not None, 600, "the third trial's bench")
        assert p.poll() is None, (ws.root.parent / "tune.log").read_text()[-3000:]
        done = [t for t in _trials(ws, "t") if t["state"] == "complete"]
        assert len(done) >= 2, done
    finally:
        os.killpg(p.pid, signal.SIGKILL)  # the whole tree, as a machine that dies
        p.wait()
    before = {t["number"]: t for t in _trials(ws, "t") if t["state"] == "complete"}
    running = [t for t in _trials(ws, "t") if t["state"] == "running"]
    assert running, "killed mid-trial"
    time.sleep(3)  # past the grace period: the dead trial's heartbeat is stale
    d = ws.j("tune", rel, *CONSTRAINED, "--trials", "5", "--sampler", "grid")
    after = {t["number"]: t for t in d["trials"]}
    for n, t in before.items():  # nothing finished was lost or run again
        assert after[n]["run"] == t["run"] and after[n]["values"] == t["values"]
    done = [t for t in d["trials"] if t["state"] == "complete"]
    assert len(done) == 5 and len({t["run"] for t in done}) == 5
    # the grid's first five configurations, each once: the dead trial's was run again, no other twice
    assert sorted((t["params"]["x"], t["params"]["mode"]) for t in done) == [(x, m) for x in range(1, 6) for m in "ab"][:5]
    (dead,) = running
    assert after[dead["number"]]["state"] == "fail"
    retry = [t for t in d["trials"] if t.get("retry_of") == dead["number"]]
    assert len(retry) == 1 and retry[0]["state"] == "complete" and retry[0]["params"] == dead["params"]


def test_a_signal_ends_tune_run_with_128_plus_its_number_as_run_launch(ws):
    """docs/launching.md: a command a signal cancels exits 128 + it (SIGTERM 143), and says which in
    its document; `tune run` exited 130 whatever the signal (a supervisor's SIGTERM read as Ctrl-C)."""
    mark_case(ws)
    held = ws.root.parent / "hold"
    rel = _spec(ws, bench_extra=f"--hold 1,{held}")  # the first trial's bench runs until the study is cancelled
    p = start_optlog(ws, "tune", rel, *CONSTRAINED, "--trials", "2", "--sampler", "grid", "--remeasure", "0", "--json")
    try:
        wait_for(lambda: (held / "held").exists() or p.poll() is not None, 300, "the first trial's bench")
        assert p.poll() is None, p.communicate()[1][-3000:]
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        end_own(ws)
    assert p.returncode == 128 + signal.SIGTERM, (p.returncode, err[-3000:])
    doc = json.loads(out)
    assert doc["cancelled"] is True and doc["signal"] == "SIGTERM", doc
    assert_none_left(ws)


def test_the_best_is_re_measured_interleaved_and_a_lucky_first_reading_loses(ws, tmp_path):
    # x=2, mode a reads 35 the first time (then 20): the first readings' best, ahead of x=3 (30)
    rel = _spec(ws, bench_extra=f"--lucky 2,a,{tmp_path}")
    d = ws.j("tune", rel, *CONSTRAINED, "--sampler", "grid", "--remeasure", "3")
    first = {t["number"]: t for t in d["trials"]}
    lucky = next(n for n, t in first.items() if t["params"] == {"x": 2, "mode": "a"})
    assert first[lucky]["values"] == [35.0]
    (best,) = d["best"]
    assert best["params"] == BEST and best["remeasured"]["values"] == [30.0]
    rm = d["remeasure"]
    assert rm["changed"] is True and rm["winners"] == [best["number"]]
    curse = rm["trials"][str(lucky)]
    assert curse["first"] == [35.0] and curse["values"] == [20.0] and curse["shrink_pct"] == [75.0]
    assert rm["separation"]["test"] == "welch-log" and rm["separation"]["distinct"] is True
    # the re-measure runs alternate between the two configurations (A B A B A B)
    owner = {r: n for n, t in rm["trials"].items() for r in t["runs"]}
    seq = [owner[r] for r in sorted(owner)]
    assert len(seq) == 6 and seq[0] != seq[1] and seq == seq[:2] * 3, seq
    shown = ws.j("run", "show", str(best["remeasured"]["runs"][0]))
    assert shown["labels"]["phase"] == "remeasure" and shown["labels"]["trial"] == best["number"]
    human = ws.cli("tune", "show", "t").out
    assert "re-measured median of 3" in human and "led on its first reading (35.0)" in human
    assert "its re-measured median is 20.0 (75.0 % above it)" in human and "not told apart" not in human


BAD_SEARCH = [
    ({"x": {"low": 5, "high": 1}}, "search.x", "empty range"),
    ({"x": {"low": 0, "high": 4, "log": True}}, "search.x", "low > 0"),
    ({"x": {"low": 1, "high": 4, "step": 0.5}, "mode": {"choices": ["a"]}}, None, None),  # a float range: fine
    ({"x": {"low": 1, "high": 4}, "mode": {"choices": []}}, "search.mode.choices", None),
    ({"x": {"low": 1, "high": 4}, "mode": {"choices": ["a"], "low": 1}}, "search.mode", "not both"),
    ({"x": {"low": 1, "high": 4}, "mode": {"choices": ["a"], "when": "y > 1"}}, "search.mode.when", "'y'"),
    ({"x": {"low": 1, "high": 4}, "mode": {"choices": ["a"], "when": "x >"}}, "search.mode.when", "condition"),
    ({"x": {"low": 1, "high": 4}, "mode": {"choices": ["a"], "when": "x > 1"}}, "search.mode.when", "params.mode"),
    ({"x": {"low": 1, "high": 4}, "mode": {"choices": ["a"]}, "zz": {"choices": [1]}}, "search.zz", "no template"),
    ({"x": {"low": 1, "high": 4}, "mode": {"choices": ["a"]}, "repeat": {"choices": [1]}}, "search.repeat", "reserved"),
]


@pytest.mark.parametrize("search,field,says", BAD_SEARCH)
def test_bad_search_spaces_exit_2_with_file_line_field_and_write_nothing(ws, search, field, says):
    rel = _spec(ws, search=search)
    r = ws.cli("tune", rel, "--maximize", "output_throughput", "--trials", "1", "--json", check=False)
    if field is None:
        assert r.code == 0, r.err
        return
    assert r.code == 2, (r.code, r.out, r.err)
    err = r.json["error"]
    assert err["file"] == rel and err["field"] == field, err
    assert err["line"] and (says is None or says in err["message"]), err
    assert "Traceback" not in r.err
    assert not (ws.root / ".optlog" / "launches").exists() and not (ws.root / ".optlog" / "tune.db").exists()


def test_bad_objectives_constraints_and_specs_exit_2_naming_the_field(ws):
    rel = _spec(ws)
    cases = [
        ([], "--maximize"),
        (["--maximize", "output_throughput", "--constraint", "p99_ttft_ms <= fast"], "--constraint"),
        (["--maximize", "output_throughput", "--constraint", "p99_ttft_ms <="], "--constraint"),
        (["--maximize", "output_throughput", "--constraint", "p99_ttft_ms + 1"], "--constraint"),
        (["--maximize", "output_throughput", "--minimize", "output_throughput"], "--maximize"),
        (["--maximize", "output_throughput", "--trials", "0"], "--trials"),
        (["--maximize", "output_throughput", "--study", "a b"], "--study"),
        (["--maximize", "output_throughput", "--set", "nope=1"], "--set"),
    ]
    for extra, field in cases:
        r = ws.cli("tune", rel, *extra, "--json", check=False)
        assert r.code == 2 and r.json["error"]["field"] == field, (extra, r.out, r.err)
        assert "Traceback" not in r.err
    # a spec without search:, and search: beside matrix:
    plain = ws.root / "runs" / "plain.yaml"
    plain.write_text(yaml.safe_dump({"name": "plain", "bench": {"cmd": "true"}}))
    r = ws.cli("tune", "runs/plain.yaml", "--maximize", "x", "--json", check=False)
    assert r.code == 2 and "search" in r.json["error"]["message"]
    d = yaml.safe_load((ws.root / rel).read_text())
    d["matrix"] = {"sleep": [0, 1]}
    (ws.root / rel).write_text(yaml.safe_dump(d, sort_keys=False))
    r = ws.cli("tune", rel, "--maximize", "output_throughput", "--json", check=False)
    assert r.code == 2 and r.json["error"]["field"] == "matrix" and r.json["error"]["line"]
    assert not (ws.root / ".optlog" / "launches").exists() and not (ws.root / ".optlog" / "tune.db").exists()
    # a study resumed with other objectives is refused
    d.pop("matrix")
    (ws.root / rel).write_text(yaml.safe_dump(d, sort_keys=False))
    ws.j("tune", rel, "--maximize", "output_throughput", "--trials", "1")
    r = ws.cli("tune", rel, "--minimize", "p99_ttft_ms", "--trials", "2", "--json", check=False)
    assert r.code == 2 and r.json["error"]["field"] == "--study"


def test_conditional_parameter_and_hypothesis_evidence(ws):
    rel = _spec(ws, search={"mode": {"choices": ["a", "b"]}, "x": {"low": 2, "high": 3, "when": "mode == b"}},
                params={"x": 1})
    ws.cli("hyp", "add", "Tuning finds a better configuration", "--id", "tuned")
    d = ws.j("tune", rel, "--maximize", "output_throughput", "--sampler", "grid", "--hypothesis", "tuned",
             "--remeasure", "2")
    configs = sorted(tuple(sorted(t["params"].items())) for t in d["trials"])
    assert configs == [(("mode", "a"),), (("mode", "b"), ("x", 2)), (("mode", "b"), ("x", 3))]
    a_run = next(t for t in d["trials"] if t["params"] == {"mode": "a"})
    assert ws.j("run", "show", str(a_run["run"]))["metrics"]["output_throughput"] == 10.0  # x from params
    ev = ws.j("hyp", "show", "tuned")
    linked = {r["id"] for r in ev.get("runs") or ev.get("evidence") or []}
    remeasured = {r for b in d["best"] for r in b["remeasured"]["runs"]}
    assert len(remeasured) == 2 and {t["run"] for t in d["trials"]} | remeasured <= linked, ev.keys()


def test_tune_is_three_mcp_tools_with_the_cli_documents(ws):
    import anyio

    from tests.cli.test_mcp import _data, _session

    rel = _spec(ws, search={"x": {"low": 1, "high": 2}, "mode": {"choices": ["a"]}})

    async def calls(s):
        names = {t.name for t in (await s.list_tools()).tools}
        run = _data(await s.call_tool("tune_run", {"spec": rel, "maximize": ["output_throughput"],
                                                   "constraints": ["p99_ttft_ms <= 100"], "sampler": "grid"}))
        listed = _data(await s.call_tool("tune_list", {}))
        shown = _data(await s.call_tool("tune_show", {"study": "t"}))
        bad = await s.call_tool("tune_run", {"spec": rel, "maximize": ["output_throughput"],
                                             "constraints": ["p99_ttft_ms <= fast"]})
        return names, run, listed, shown, bad

    names, run, listed, shown, bad = anyio.run(_session, ws, calls)
    assert {"tune_run", "tune_list", "tune_show"} <= names
    assert [t["params"] for t in run["trials"]] == [{"x": 1, "mode": "a"}, {"x": 2, "mode": "a"}]
    assert run["best"][0]["params"] == {"x": 2, "mode": "a"} and set(run["best"][0]) >= {"params", "values", "remeasured"}
    assert [s["study"] for s in listed["studies"]] == ["t"]
    assert shown["trials"] == run["trials"]
    assert bad.is_error and "constraint" in bad.content[0].text


def test_claim_is_preregistered_judged_by_a_verdict_and_feeds_the_plan(ws):
    # the default settings (params:) are x=1, mode a: 10; the constrained best is x=3, mode a: 30 (+200 %)
    rel = _spec(ws, params={"x": 1, "mode": "a"})
    ws.cli("hyp", "add", "Tuning the server pays", "--id", "tuned")
    ws.j("plan", "add", "Tune the server", "--gain", "50-300%", "--effort", "S", "--confidence", "0.5",
         "--needs", "tuned")
    d = ws.j("tune", rel, *CONSTRAINED, "--sampler", "grid", "--hypothesis", "tuned", "--claim", "10")
    c = d["claim"]
    assert c["hypothesis"] == "tuned" and c["expect"] == "a >= b * 1.1" and c["metric"] == "output_throughput"
    assert c["default"] == {"x": 1, "mode": "a"} and c["tuned"] == d["best"][0]["number"]
    assert c["tuned_params"] == BEST and c["rounds"] == 3
    assert c["verdict"] == "confirmed" and c["hypothesis_status"] == "confirmed" and c["gain_pct"] == 200.0
    assert c["medians"] == {"tuned": 30.0, "default": 10.0}
    # judged by the verdicts, committed into the hypothesis file, on the claim's own runs
    hyp = ws.j("hyp", "show", "tuned")
    assert hyp["status"] == "confirmed"
    (pred,) = [p for p in hyp["predictions"] if p["id"] == c["prediction"]]
    assert pred["status"] == "confirmed" and pred["a"] == {"study": "t", "claim": "tuned"}
    assert set(pred["b"].items()) == {("study", "t"), ("claim", "default")}
    # pre-registered: the prediction's commit comes before every run of the study
    first_run = min(t["run"] for t in d["trials"])
    assert c["prediction"] and ws.j("run", "show", str(first_run))["created_at"] >= ws.j("hyp", "show", "tuned")["created"]
    log = ws.git("log", "--reverse", "--format=%s").splitlines()
    assert log.index("optlog: tuned: add prediction") < log.index("optlog: tuned → confirmed")
    # the claim's runs alternate tuned/default (W D W D W D) and are labelled so at launch
    runs = sorted(c["runs"]["tuned"] + c["runs"]["default"])
    roles = [ws.j("run", "show", str(r))["labels"]["claim"] for r in runs]
    assert roles == ["tuned", "default"] * 3
    shown = ws.j("run", "show", str(c["runs"]["default"][0]))["labels"]
    assert {k: shown[k] for k in ("x", "mode", "study", "phase")} == {"x": 1, "mode": "a", "study": "t", "phase": "claim"}
    # the gain became the measured gain of the plan that needs the hypothesis
    plan = ws.j("plan", "show", "1")
    assert plan["measured_gain"] == 200.0 and c["plans"] == [1]
    assert "tuning gains ≥ 10 % output_throughput over the default settings: confirmed" in ws.cli("tune", "show", "t").out
    # run again: the same best, nothing more measured, the claim unchanged; another claim is refused
    again = ws.j("tune", rel, *CONSTRAINED, "--sampler", "grid", "--claim", "10")
    assert again["claim"] == c and [la for la in again["launches"] if la.get("claim")] == []
    r = ws.cli("tune", rel, *CONSTRAINED, "--sampler", "grid", "--claim", "50", "--json", check=False)
    assert r.code == 2 and r.json["error"]["field"] == "--claim"


def test_a_claim_without_a_hypothesis_makes_one_and_can_be_refuted(ws):
    rel = _spec(ws, params={"x": 1, "mode": "a"}, search={"x": {"low": 1, "high": 3}, "mode": {"choices": ["a"]}})
    d = ws.j("tune", rel, "--maximize", "output_throughput", "--sampler", "grid", "--claim", "500", "--study", "big")
    c = d["claim"]  # 30 against 10: +200 %, not the claimed +500 %
    assert c["hypothesis"] == "tune-big" and c["verdict"] == "falsified" and c["gain_pct"] == 200.0
    hyp = ws.j("hyp", "show", "tune-big")
    assert hyp["status"] == "falsified" and "500" in hyp["title"]
    linked = {r["id"] for r in hyp.get("runs") or hyp.get("evidence") or []}
    assert {t["run"] for t in d["trials"]} <= linked  # every trial is the claim's evidence


def test_bad_claims_exit_2_and_write_nothing(ws):
    rel = _spec(ws, params={"x": 1})  # mode has no default
    cases = [
        (["--maximize", "output_throughput", "--claim", "10"], "search.mode", rel),
        (["--maximize", "output_throughput", "--minimize", "p99_ttft_ms", "--claim", "10"], "--claim", None),
        (["--maximize", "output_throughput", "--claim", "10", "--remeasure", "0"], "--claim", None),
        (["--maximize", "output_throughput", "--claim", "-5"], "--claim", None),
    ]
    for extra, field, file in cases:
        r = ws.cli("tune", rel, *extra, "--json", check=False)
        assert r.code == 2 and r.json["error"]["field"] == field, (extra, r.out, r.err)
        if file:
            assert r.json["error"]["file"] == file and r.json["error"]["line"]
        assert "Traceback" not in r.err
    assert not (ws.root / ".optlog" / "tune.db").exists() and not list((ws.root / "hypotheses").glob("*.yaml"))
    # a claim comes before the search: not onto a study that has trials already
    rel2 = _spec(ws, "t2", params={"x": 1, "mode": "a"})
    ws.j("tune", rel2, "--maximize", "output_throughput", "--trials", "1", "--remeasure", "0")
    r = ws.cli("tune", rel2, "--maximize", "output_throughput", "--trials", "2", "--claim", "10", "--json", check=False)
    assert r.code == 2 and r.json["error"]["field"] == "--claim" and "before the search" in r.json["error"]["message"]
    assert not list((ws.root / "hypotheses").glob("*.yaml"))


def _section(text, start, stop="\n## "):
    i = text.index(start)
    j = text.find(stop, i + len(start))
    return text[i:] if j < 0 else text[i:j]


def test_the_report_has_a_tuning_section_with_trials_best_importances_and_front(ws, tmp_path):
    rel = _spec(ws, params={"x": 1, "mode": "a"}, bench_extra=f"--lucky 2,a,{tmp_path}")
    ws.j("tune", rel, *CONSTRAINED, "--sampler", "grid", "--claim", "10")
    ws.j("tune", rel, "--maximize", "output_throughput", "--minimize", "p99_ttft_ms", "--sampler", "grid",
         "--study", "front", "--remeasure", "0")
    r = ws.j("report", "--out", "reports/r.md")
    text = (ws.root / "reports" / "r.md").read_text()
    tuning = _section(text, "## Tuning")
    one = _section(tuning, "### t: maximize output\\_throughput", "\n### ")
    # the trials table: one row per trial with params, value, state, feasibility and run
    assert "| trial | params | output\\_throughput | state | feasible | run | note |" in one
    assert one.count("| complete |") == 10 and one.count("| **no** |") == 7  # x≥4, or mode b: infeasible
    assert "| 2 | x=2, mode=a | 35 | complete | yes | 3 |" in one  # the lucky first reading
    assert "constraints `p99_ttft_ms <= 100`" in one
    # the winner's curse: each re-measured trial's first reading against its re-measured median
    assert "Re-measured, interleaved, 3 times each; the best named by the re-measured medians" in one
    assert "| 2 | x=2, mode=a | output\\_throughput | 35 | 20 (n=3) | +75 % | no |" in one
    assert "| 4 | x=3, mode=a | output\\_throughput | 30 | 30 (n=3) | +0 % | **yes** |" in one
    assert "The re-measure changed the best" in one and "welch-log p=0, told apart." in one  # equal repeats: p is 0
    assert ("Claim (`tune-t`): tuning gains ≥ 10 % output\\_throughput over the default settings (x=1, mode=a): "
            "**confirmed**, measured +200 % (trial 4 against the default settings, 3 interleaved runs each).") in one
    # parameter importances computed by Optuna: both parameters, x first, summing to 1
    rows = [ln.split("|") for ln in one.splitlines() if ln.startswith(("| x |", "| mode |"))]
    assert [r_[1].strip() for r_ in rows] == ["x", "mode"] and abs(sum(float(r_[2]) for r_ in rows) - 1) < 0.01, one
    # several objectives: the Pareto front plot, drawn, linked, and its front in the table
    two = _section(tuning, "### front: maximize output\\_throughput, minimize p99\\_ttft\\_ms", "\n### ")
    assert "![study front: the trials and the Pareto front](<r-tune-front.svg>)" in two
    svg = (ws.root / "reports" / "r-tune-front.svg").read_text()
    assert "Pareto front" in svg and "#9" in svg and "reports/r-tune-front.svg" in r["plots"]
    assert "not re-measured, so the winner's curse is not measured" in two
    front = two[two.index("on the Pareto front by their first readings"):two.index("Parameter importances")]
    assert front.count("| output\\_throughput |") == 6  # x=1…5 mode a, and x=5 mode b
    assert "r-tune-t.svg" not in text and not (ws.root / "reports" / "r-tune-t.svg").exists()  # one objective: no plot
    # the same data gives the same bytes: a second report changes nothing
    again = ws.j("report", "--out", "reports/r.md")
    assert again["commit"] is None and (ws.root / "reports" / "r.md").read_text() == text


def test_a_report_without_studies_has_no_tuning_section_and_loads_no_optuna(ws):
    ws.cli("run", "record", "--label", "a=1", "--metric", "x=2")
    ws.j("report", "--out", "reports/r.md")
    assert "## Tuning" not in (ws.root / "reports" / "r.md").read_text()
    assert not (ws.root / ".optlog" / "tune.db").exists()


def test_prune_above_skips_configurations_above_one_that_broke_a_latency_bound(ws):
    # x stands for the load: p99 = 10·x² (+100 for mode b). Under p99 <= 100, (1, b) breaks it, so
    # (2..5, b) are not launched; (4, a) breaks it, so (5, a) is not either.
    rel = _spec(ws)
    d = ws.j("tune", rel, *CONSTRAINED, "--sampler", "grid", "--prune-above", "x", "--remeasure", "0")
    by = {(t["params"]["x"], t["params"]["mode"]): t for t in d["trials"]}
    pruned = {k for k, t in by.items() if t["state"] == "pruned"}
    assert pruned == {(2, "b"), (3, "b"), (4, "b"), (5, "b"), (5, "a")}, by
    assert all(by[k]["run"] is None and by[k]["runs"] == [] for k in pruned)  # never launched
    assert by[(5, "a")]["pruned_by"] == by[(4, "a")]["number"]
    assert by[(3, "b")]["pruned"] == f"trial {by[(1, 'b')]['number']} broke 'p99_ttft_ms <= 100' at x=1"
    assert len(ws.j("run", "list")["runs"]) == 5 and [b["params"] for b in d["best"]] == [BEST]
    human = ws.cli("tune", "show", "t").out
    assert "trial 6 broke 'p99_ttft_ms <= 100' at x=4" in human  # (5, a)'s row says why it was not run
    for extra, msg in ((["--prune-above", "mode"], "numeric search parameter"),
                       (["--prune-above", "x", "--constraint", "output_throughput >= 1"], None)):
        args = ["--maximize", "output_throughput", *extra] if msg is None else [*CONSTRAINED, *extra]
        r = ws.cli("tune", rel, *args, "--study", "bad", "--json", check=False)
        assert r.code == 2 and r.json["error"]["field"] == "--prune-above", r.out
        assert msg is None or msg in r.json["error"]["message"]


def test_tune_over_mcp_takes_sets_as_an_object_and_returns_the_cli_documents(ws, tool):
    rel = _spec(ws, search={"x": {"low": 1, "high": 2}, "mode": {"choices": ["a"]}})
    run, err, code = tool("tune_run", {"spec": rel, "maximize": ["output_throughput"], "sampler": "grid",
                                       "remeasure": 0, "sets": {"sleep": 0.01}})
    assert (err, code) == (False, 0), run
    assert [t["params"] for t in run["trials"]] == [{"x": 1, "mode": "a"}, {"x": 2, "mode": "a"}]
    rec = json.loads(next((ws.root / "launches").glob(f"L{run['launches'][0]['launch']}*/points.json")).read_text())
    assert rec["sets"] == ["sleep=0.01"]
    shown, err, _ = tool("tune_show", {"study": "t"})
    assert not err and shown == ws.j("tune", "show", "t")
    listed, err, _ = tool("tune_list", {})
    assert not err and listed == ws.j("tune", "list")
    doc, err, code = tool("tune_run", {"spec": rel, "maximize": ["output_throughput"], "sets": {"nope": 1}})
    assert err and code == 2 and doc["error"]["field"] == "sets", doc
