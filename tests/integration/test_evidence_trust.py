"""Issue 14: a run names everything it was rendered with, nothing typed is ignored, one run per
measurement. Each trap as the agent hit it, through the real CLI, the real launcher and the test
server (optlog.testing.fakeserver via tests/testserver.py)."""

from __future__ import annotations

import json

import yaml

from _launch import PY, TESTS, bench_cmd, free_port, spec

ITL_SERVER = ("{{ py }} {{ tests }}/testserver.py --port {{ port }} --ttft-ms 1 --itl-ms {{ itl_ms }} "
              "--tokens 8 --model {{ marker }}")


def _itl_spec(ws, port, name="itl", **top):
    srv = {"cmd": ITL_SERVER, "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05},
           "stop": {"timeout_s": 3}}
    return spec(ws, name, server=srv, params={"itl_ms": 10, "port": port}, labels={"model": "test"},
                bench={"cmd": bench_cmd("--requests 2")}, **top)


def test_set_values_are_stored_and_never_pooled_in_compare_verdict_and_diff(ws):
    port = free_port()
    rel = _itl_spec(ws, port, matrix={"concurrency": [1, 2]}, repeats=2)
    l10 = ws.j("run", "launch", rel, "--set", "itl_ms=10")
    l5 = ws.j("run", "launch", rel, "--set", "itl_ms=5")
    assert l10["status"] == l5["status"] == "succeeded"
    # the run keeps the values and the commands it was rendered with
    show = ws.j("run", "show", str(l5["runs"][0]["id"]))
    # what the launch varied (`--set`) is a label too (issue 29), so it is not repeated in raw.config
    assert show["raw"]["values"]["itl_ms"] == 5 and show["labels"]["itl_ms"] == 5 and "itl_ms" not in show["raw"]["config"]
    argv = show["raw"]["commands"]["server"]["argv"]
    assert argv[argv.index("--itl-ms") + 1] == "5"
    assert show["raw"]["commands"]["bench"]["argv"][0] == PY
    # compare: the two launches are not pooled into one mean (the issue: 557.5, n=6): the value they
    # varied is a label (issue 29), so each has its own row, and `--by itl_ms` compares them
    cmp = ws.j("compare", "--metric", "output_throughput", "--by", "model", "--per", "concurrency")
    assert sorted((r["level"]["concurrency"], r["level"]["itl_ms"]) for r in cmp["rows"]) == \
        [(1, 5), (1, 10), (2, 5), (2, 10)], cmp
    assert all(r["n"] == {"test": 2} and not r["not_comparable"] for r in cmp["rows"]), cmp
    by_itl = ws.j("compare", "--metric", "output_throughput", "--by", "itl_ms", "--per", "concurrency")
    for row in by_itl["rows"]:
        assert set(row["values"]) == {"10", "5"} and row["values"]["5"] > row["values"]["10"], row
    human = ws.cli("compare", "--metric", "output_throughput", "--by", "model").out
    assert "itl_ms=10" in human and "itl_ms=5" in human
    # run diff names the differing key and the rendered difference
    a, b = l10["runs"][0]["id"], l5["runs"][0]["id"]
    d = ws.j("run", "diff", str(a), str(b))
    assert d["comparable"] is False and d["not_comparable"] == [{"key": "itl_ms", "a": "10", "b": "5"}]
    assert d["rendered"]["values.itl_ms"] == {"a": 10, "b": 5}
    assert "not comparable: differ in itl_ms" in ws.cli("run", "diff", str(a), str(b)).out
    twin = next(r["id"] for r in l10["runs"] if r["id"] != a and r["labels"]["concurrency"] == l10["runs"][0]["labels"]["concurrency"])
    same = ws.j("run", "diff", str(a), str(twin))  # another repeat of the same point
    assert same["comparable"] is True and same["not_comparable"] == []
    # verdict: the runs of the other itl_ms are listed as not comparable with the key, not pooled
    ws.cli("hyp", "add", "More concurrency, more throughput", "--id", "conc")
    ws.cli("predict", "add", "conc", "--expect", "a > b", "--metric", "output_throughput",
           "--a", "concurrency=2", "--b", "concurrency=1")
    res = ws.j("verdict", "conc")["results"][0]["predictions"][0]
    assert res["not_comparable"] and all("itl_ms=" in x["reason"] for x in res["not_comparable"]), res
    used = {i for lv in res["levels"] for ids in lv["runs"].values() for i in ids}
    noted = {x["run"] for x in res["not_comparable"]}
    assert used and not (used & noted) and len(used | noted) == 8


def test_values_that_vary_in_a_launch_are_labels_and_an_edited_template_differs(ws):
    port = free_port()
    rel = spec(ws, "inc", params={"pp": 1, "port": port, "concurrency": 1}, matrix=None,
               include=[{"config": "tp8", "tp": 8}, {"config": "tp4pp2", "tp": 4, "pp": 2}],
               bench={"cmd": bench_cmd("--echo {{ tp }} {{ pp }}")})
    res = ws.j("run", "launch", rel)
    labels = {r["labels"]["config"]: r["labels"] for r in res["runs"]}
    assert labels["tp8"]["pp"] == 1 and labels["tp4pp2"]["pp"] == 2  # pp=1 came from params, still a label
    # the same spec with its bench command edited: the runs name a different bench.cmd
    d = yaml.safe_load((ws.root / rel).read_text())
    d["bench"]["cmd"] += " --requests 2"
    (ws.root / rel).write_text(yaml.safe_dump(d, sort_keys=False, width=10000))
    res2 = ws.j("run", "launch", rel)
    diff = ws.j("run", "diff", str(res["runs"][0]["id"]), str(res2["runs"][0]["id"]))
    assert [x["key"] for x in diff["not_comparable"]] == ["bench.cmd"], diff["not_comparable"]
    assert json.dumps(diff["rendered"]).count("--requests") >= 1


def _n_runs(ws):
    return len(ws.j("run", "list")["runs"])


def test_set_keys_nothing_typed_is_ignored(ws):
    rel = spec(ws, "thr", server=False, params={"threads": 1}, matrix={"concurrency": [1, 2]}, repeats=3,
               bench={"cmd": bench_cmd("--echo {{ threads }}")})
    before = (ws.commits(), _n_runs(ws))
    r = ws.cli("run", "launch", rel, "--set", "thread=4", "--json", check=2)
    assert r.json["error"]["field"] == "--set" and "did you mean 'threads'" in r.json["error"]["message"]
    assert "Traceback" not in r.err
    for bad, words in (("repeats=0", "from 1 to 1000"), ("repeats=many", "an integer"), ("bench=x", "cannot change"),
                       ("matrix.nope=[1]", "not a matrix axis"), ("order=shuffled", "one of interleaved"),
                       ("on_error=explode", "continue or stop")):
        r = ws.cli("run", "launch", rel, "--set", bad, "--json", check=2)
        assert words in r.json["error"]["message"], (bad, r.json)
    assert (ws.commits(), _n_runs(ws)) == before  # nothing written
    # spec-level keys are settable: repeats=5 makes 5 repeats, matrix.K sets an axis's values
    res = ws.j("run", "launch", rel, "--set", "repeats=2", "--set", "matrix.concurrency=[1, 2, 3]", "--set", "threads=4")
    runs = res["runs"]
    assert len(runs) == 2 * 3
    assert sorted({r["labels"]["concurrency"] for r in runs}) == [1, 2, 3]
    argv = json.loads((ws.root / runs[0]["artifacts_dir"] / "argv.json").read_text())
    assert argv[argv.index("--echo") + 1] == "4"


def test_unknown_parser_and_missing_cwd_fail_before_anything_runs(ws):
    rel = spec(ws, "parse", server=False, bench={"cmd": bench_cmd(), "parser": "sglangg"})
    r = ws.cli("run", "launch", rel, "--json", check=2)
    e = r.json["error"]
    assert e["field"] == "bench.parser" and e["file"] == rel and e["line"] and "sglangg" in e["message"]
    rel = spec(ws, "cwd", server=False, bench={"cmd": "echo hi", "cwd": "no/such/dir", "parser": "json"})
    r = ws.cli("run", "launch", rel, "--json", check=2)
    e = r.json["error"]
    assert e["field"] == "bench.cwd" and "not a folder" in e["message"] and "command not found" not in r.out
    assert _n_runs(ws) == 0
    # a relative cwd that exists is taken from the workspace root, wherever optlog was started
    (ws.root / "sub").mkdir()
    rel = spec(ws, "cwd2", server=False, bench={"cmd": bench_cmd(), "cwd": "sub"})
    res = ws.j("run", "launch", rel, cwd=ws.root / "sub")
    assert res["status"] == "succeeded"


def _order(res):
    return [(r["labels"]["concurrency"], r["labels"]["repeat"]) for r in sorted(res["runs"], key=lambda r: r["id"])]


def test_repeats_interleaved_by_default_sequential_and_seeded_random(ws):
    rel = spec(ws, "ord", server=False, matrix={"concurrency": [1, 2]}, repeats=2)
    res = ws.j("run", "launch", rel)
    assert _order(res) == [(1, 0), (2, 0), (1, 1), (2, 1)]
    started = [ws.j("run", "show", str(r["id"]))["started_at"] for r in sorted(res["runs"], key=lambda r: r["id"])]
    assert started == sorted(started)  # run ids follow the order they ran in
    res = ws.j("run", "launch", rel, "--set", "order=sequential")
    assert _order(res) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    rel = spec(ws, "rnd", server=False, matrix={"concurrency": [1, 2, 3]}, repeats=3, order="random", order_seed=7)
    a, b = ws.j("run", "launch", rel), ws.j("run", "launch", rel)
    assert _order(a) == _order(b) and _order(a) != sorted(_order(a))
    assert ws.j("run", "show", str(a["runs"][0]["id"]))["raw"]["order"] == {"order": "random", "seed": 7}
    c = ws.j("run", "launch", rel, "--set", "order_seed=8")
    assert ws.j("run", "show", str(c["runs"][0]["id"]))["raw"]["order"]["seed"] == 8


def test_optlog_bench_inside_a_launch_records_one_run_per_measurement(ws):
    srv = {"cmd": ITL_SERVER, "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05},
           "stop": {"timeout_s": 3}}
    bench = ("{{ py }} -m optlog bench {{ server_url }} --concurrency 1 --num-prompts 2 --input-len 4 --output-len 4")
    # as the agent ran it: the bench writes the file the launcher parses
    rel = spec(ws, "ob", server=srv, params={"itl_ms": 1, "port": free_port()}, matrix=None, repeats=3,
               bench={"cmd": bench + " --output-file {{ out }}/b.jsonl", "parser": "optlog"})
    res = ws.j("run", "launch", rel)
    assert res["status"] == "succeeded", res
    runs = ws.j("run", "list")["runs"]
    assert len(runs) == 3 and {r["source"] for r in runs} == {"launched"}  # not 6: bench recorded nothing itself
    art = ws.root / res["runs"][0]["artifacts_dir"]
    assert "recording nothing" in (art / "bench.stderr.log").read_text()
    # run import of that file: it is the launched run's measurement already
    out = ws.cli("run", "import", str(art / "b.jsonl"), "--json")
    assert out.json["runs"] == [] and out.json["already_imported"][0]["runs"] == [res["runs"][0]["id"]]
    assert "already imported" in out.err
    assert len(ws.j("run", "list")["runs"]) == 3
    # without --output-file, inside a launch the bench writes where the launcher looks
    rel = spec(ws, "ob2", server=srv, params={"itl_ms": 1, "port": free_port()}, matrix=None,
               bench={"cmd": bench, "parser": "optlog"})
    res = ws.j("run", "launch", rel)
    assert res["status"] == "succeeded" and len(ws.j("run", "list")["runs"]) == 4
    assert (ws.root / res["runs"][0]["artifacts_dir"] / "optlog-bench.jsonl").is_file()


def test_a_launched_runs_result_file_imported_from_elsewhere_is_not_stored_twice(ws, tmp_path):
    """Issue 29: the launcher recorded this result; a copy of its file taken out of the run's folder
    (same bytes) or the same result written again (same figures, other bytes) is that run, not a
    new one. The launch's bench copies a real vLLM result (tests/fixtures/real) where the launcher
    reads it: a real launch, no server."""
    real = TESTS / "fixtures" / "real" / "vllm" / "bench_serve_v0.25.1.json"
    rel = spec(ws, "cp", server=False, matrix=None, bench={"cmd": f"cp {real} {{{{ out }}}}/result.json", "parser": "vllm"})
    res = ws.j("run", "launch", rel)
    assert res["status"] == "succeeded", res
    (rid,) = [r["id"] for r in res["runs"]]
    copy = tmp_path / "elsewhere.json"
    copy.write_bytes((ws.root / res["runs"][0]["artifacts_dir"] / "result.json").read_bytes())
    out = ws.cli("run", "import", str(copy), "--json")
    assert out.json["runs"] == [] and out.json["already_imported"][0]["runs"] == [rid], out.json
    assert "launched run" in out.err
    rewritten = tmp_path / "rewritten.json"  # the same result, written again (other bytes)
    rewritten.write_text(json.dumps(json.loads(real.read_text()), indent=None, sort_keys=True))
    out = ws.cli("run", "import", str(rewritten), "--format", "vllm", "--json")
    assert out.json["runs"] == [] and out.json["repeated"][0]["why"] == f"the same measurement as run {rid}", out.json
    assert len(ws.j("run", "list")["runs"]) == 1


def test_run_import_of_a_file_already_imported_is_a_no_op_that_says_so(ws, tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"output_throughput": 100.0, "completed": 3}))
    first = ws.j("run", "import", str(f), "--format", "json")
    (ids,) = [[r["id"] for r in first["runs"]]]
    copy = tmp_path / "same-content.json"
    copy.write_bytes(f.read_bytes())
    for again in (f, copy):
        r = ws.cli("run", "import", str(again), "--format", "json", "--json")
        assert r.json["runs"] == [] and r.json["already_imported"][0]["runs"] == ids
        assert "already imported as run" in r.err and "same content" in r.err
    assert "already run" in ws.cli("run", "import", str(f), "--format", "json").out
    assert len(ws.j("run", "list")["runs"]) == 1


def _host_load_config(ws, text):
    cfg = ws.root / "optlog.yaml"
    cfg.write_text(cfg.read_text() + "\n" + text)


def test_host_load_and_thread_settings_recorded_and_loaded_runs_flagged(ws):
    import subprocess
    import sys

    fake = json.dumps({"gpus": [{"uuid": "GPU-aaaa", "processes": [{"pid": 999999, "used_mib": 512}]}]})
    _host_load_config(ws, "host_load:\n  busy_cpus_fraction: 0.2\n  gpu_processes: false\n")
    # the bench lives long enough (0.8 s) for the process-tree sampler (every 0.5 s) to see it
    rel = spec(ws, "load", server=False, params={"threads": 3}, matrix={"concurrency": [1]}, repeats=2,
               bench={"cmd": bench_cmd("--sleep 0.8"), "env": {"OMP_NUM_THREADS": "{{ threads }}"}})
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # a core kept busy by someone else
    try:
        res = ws.j("run", "launch", rel, env={"OPTLOG_FAKE_NVML": fake})
    finally:
        burner.kill()
        burner.wait()
    r = ws.j("run", "show", str(res["runs"][0]["id"]))
    env = r["environment"]
    before, after = env["host_load"]["before"], env["host_load"]["after"]
    assert before["load"]["busy_cpus"] >= 0.5 and len(before["load"]["loadavg"]) == 3 and after["load"]["cpus"] >= 1
    assert before["gpu_processes"] == [{"gpu": 0, "pid": 999999, "used_mib": 512}]
    assert env["host_settings"]["threads"] == {"OMP_NUM_THREADS": "3"}
    assert "cpu_governor" in env["host_settings"] and "packages" in env["host_settings"]
    # the load its own processes ran under, as numbers (runs.treeshare): run metrics and in the record
    m = r["metrics"]
    assert 0 < m["cpu_share"] <= 1 and m["cpu_threads"] >= 1 and m["cpu_used"] > 0, m
    assert env["host_load"]["tree"]["cpu_share"] == m["cpu_share"]
    assert m["gpu_other_procs"] == 1 and m["gpu_other_frac"] == 1.0  # pid 999999 on the fake GPU
    # measured under load: flagged where its numbers are
    assert r["labels"]["loaded"] == "true" and any("CPUs busy before the run" in w for w in env["host_load"]["loaded"])
    assert all(x["labels"]["loaded"] == "true" for x in ws.j("run", "list")["runs"])
    cmp = ws.j("compare", "--metric", "output_throughput", "--by", "concurrency")
    assert cmp["rows"][0]["loaded"] == {"1": sorted(x["id"] for x in res["runs"])}
    assert "loaded" in ws.cli("compare", "--metric", "output_throughput", "--by", "concurrency").out
    # the same launch with the threshold off, GPU processes counting: loaded for the other process on the GPU
    cfg = ws.root / "optlog.yaml"
    cfg.write_text(cfg.read_text().replace("busy_cpus_fraction: 0.2", "busy_cpus_fraction: null")
                   .replace("gpu_processes: false", "gpu_processes: true"))
    res2 = ws.j("run", "launch", rel, "--set", "matrix.concurrency=[2]", env={"OPTLOG_FAKE_NVML": fake})
    r2 = ws.j("run", "show", str(res2["runs"][0]["id"]))
    assert r2["labels"]["loaded"] == "true" and any("1 other process(es) on its GPUs during 100% of the run" in w
                                                    for w in r2["environment"]["host_load"]["loaded"])
    # the verdict names the loaded runs in its reasons
    ws.cli("hyp", "add", "c2 beats c1", "--id", "c2")
    ws.cli("predict", "add", "c2", "--expect", "a > b", "--metric", "output_throughput",
           "--a", "concurrency=2", "--b", "concurrency=1")
    pr = ws.j("verdict", "c2")["results"][0]["predictions"][0]
    lv = pr["levels"][0]
    assert "measured under load" in lv["reason"], lv
    # and the one line a person reads says the whole verdict stands on loaded runs
    assert pr["loaded_runs"] == pr["runs"] and "every run it used was measured under load" in pr["explanation"], pr
    # quiet: thresholds off, no GPU process → no flag (the share floor is off too: this shared CI
    # machine starves every run of some CPU, which is the flag's point, not this case's)
    cfg.write_text(cfg.read_text().replace("gpu_processes: true", "gpu_processes: false")
                   .replace("busy_cpus_fraction: null", "busy_cpus_fraction: null\n  min_cpu_share: null"))
    res3 = ws.j("run", "launch", rel, "--set", "matrix.concurrency=[3]")
    assert "loaded" not in ws.j("run", "show", str(res3["runs"][0]["id"]))["labels"]


def test_every_launch_commits_its_spec_and_points_and_runs_again_in_a_fresh_clone(ws, make_ws):
    import subprocess

    port = free_port()
    rel = spec(ws, "again", server=False, params={"port": port}, matrix={"concurrency": [1, 2]}, order="random")
    first = ws.j("run", "launch", rel, "--set", "repeats=2")
    lid = first["launch"]
    rec = ws.root / "launches" / f"L{lid}"
    assert (rec / "spec.yaml").read_text() == (ws.root / rel).read_text()
    points = json.loads((rec / "points.json").read_text())
    assert points["sets"] == ["repeats=2"] and points["name"] == "again" and len(points["points"]) == 4
    seed = points["order"]["seed"]
    assert {p["run"] for p in points["points"]} == {r["id"] for r in first["runs"]}
    assert ws.git("status", "--porcelain", "launches").strip() == ""  # committed
    log = ws.git("log", "-1", "--format=%s%n%b", "--", f"launches/L{lid}")
    assert f"optlog: launch L{lid} (again)" in log and "Optlog-Event: launch" in log
    # the spec file changes afterwards: --again runs the record, not the file
    (ws.root / rel).write_text((ws.root / rel).read_text().replace("concurrency:\n  - 1\n  - 2", "concurrency:\n  - 7"))
    again = ws.j("run", "launch", "--again", f"L{lid}")
    assert again["name"] == "again" and len(again["runs"]) == 4
    assert sorted(r["labels"]["concurrency"] for r in again["runs"]) == [1, 1, 2, 2]
    order = [(r["labels"]["concurrency"], r["labels"]["repeat"]) for r in first["runs"]]
    assert [(r["labels"]["concurrency"], r["labels"]["repeat"]) for r in again["runs"]] == order  # same seed
    rec2 = json.loads((ws.root / "launches" / f"L{again['launch']}" / "points.json").read_text())
    assert rec2["again_of"] == f"L{lid}" and rec2["order"]["seed"] == seed
    assert ws.cli("run", "launch", "--again", "L99", "--json", check=2).json["error"]["field"] == "--again"
    assert ws.cli("run", "launch", rel, "--again", f"L{lid}", "--json", check=2).code == 2
    # a fresh clone (its own, empty database) runs launch L1 again from git alone
    clone = make_ws("clone", init=False)
    subprocess.run(["git", "clone", "-q", str(ws.root), str(clone.root)], check=True, env=clone.env)
    assert not (clone.root / ".optlog").exists()
    res = clone.j("run", "launch", "--again", f"L{lid}")
    assert res["status"] == "succeeded" and len(res["runs"]) == 4 and res["name"] == "again"
    assert res["launch"] == 1  # the clone's database counts from 1 again: its record does not overwrite L1's
    mine = [p for p in (clone.root / "launches").iterdir() if p.name.startswith("L1-")]
    assert len(mine) == 1 and json.loads((mine[0] / "points.json").read_text())["again_of"] == f"L{lid}"
    assert json.loads((clone.root / "launches" / f"L{lid}" / "points.json").read_text()) == points


def test_calibrate_commits_optlog_yaml(ws):
    ws.j("calibrate", "--quick", "--device", "cpu", "--max-spread", "1000", env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    assert ws.git("status", "--porcelain", "optlog.yaml").strip() == ""
    assert "optlog: calibrate (cpu)" in ws.git("log", "-1", "--format=%s", "--", "optlog.yaml")


def test_a_spec_reads_the_environment_and_the_record_keeps_the_reference_not_the_path(ws):
    """Issue 31 item 6: machine paths came in by --set on every launch and points.json committed the
    server binary's absolute path 61 times; `--again` elsewhere ran this machine's paths."""
    here, there = str(ws.root.parent / "machine-a" / "bench-tool"), str(ws.root.parent / "machine-b" / "bench-tool")
    rel = spec(ws, "envd", server=False, matrix={"concurrency": [1]},
               bench={"cmd": bench_cmd("--echo {{ env.OPTLOG_T_TOOL }}")})
    r = ws.cli("run", "launch", rel, "--json", check=2)  # unset: refused before anything runs, naming it
    assert "OPTLOG_T_TOOL is not set" in r.json["error"]["message"] and r.json["error"]["file"] == rel
    assert not (ws.root / "launches").exists()
    first = ws.j("run", "launch", rel, env={"OPTLOG_T_TOOL": here})
    (run,) = first["runs"]
    argv = json.loads((ws.root / run["artifacts_dir"] / "argv.json").read_text())
    assert argv[argv.index("--echo") + 1] == here  # rendered where it ran
    text = (ws.root / "launches" / f"L{first['launch']}" / "points.json").read_text()
    assert here not in text and "{{ env.OPTLOG_T_TOOL }}" in text
    assert json.loads(text)["points"][0]["env"] == {"OPTLOG_T_TOOL": "{{ env.OPTLOG_T_TOOL }}"}
    assert ws.j("run", "show", str(run["id"]))["raw"]["env"] == {"OPTLOG_T_TOOL": here}  # beside, in the database
    again = ws.j("run", "launch", "--again", f"L{first['launch']}", env={"OPTLOG_T_TOOL": there})
    argv = json.loads((ws.root / again["runs"][0]["artifacts_dir"] / "argv.json").read_text())
    assert argv[argv.index("--echo") + 1] == there  # re-rendered on "the other machine"
