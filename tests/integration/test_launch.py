"""`optlog run launch` end to end: the real CLI, the real test server in its own process group,
real bench processes; every exit path checked with /proc for survivors."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from _launch import PY, TESTS, assert_no_survivors, bench_cmd, free_port, server_cmd, spec, survivors, wait_for
from tests._face import tool, use_env  # noqa: F401  (tool: a fixture)


def _runs(ws):
    return {r["id"]: r for r in ws.j("run", "list")["runs"]}


def test_sweep_matrix_include_repeats_with_server_reuse(ws):
    # concurrency is the outer axis, ttft (a server option) the inner one: the natural order would
    # restart the server 4 times; grouped by server command it starts twice.
    srv = {"cmd": server_cmd("--ttft-ms {{ ttft }}"),
           "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05},
           "check": {"prompts": ["The capital of France is"], "expect_regex": "Paris"}}
    rel = spec(ws, "sweep", server=srv, repeats=2, matrix={"concurrency": [1, 2], "ttft": [3, 4]},
               include=[{"config": "tp8", "tp": 8}, {"config": "tp4pp2", "tp": 4}],
               bench={"cmd": bench_cmd("--echo '; rm -rf ~' '{{ config }} x' {{ concurrency * 4 }} "
                                       "'{\"temperature\": 0}' {{ tp }}")},
               labels={"model": "test"})
    ws.cli("hypothesis", "add", "Comm-bound", "--id", "comm-bound")
    res = ws.j("run", "launch", rel, "--hypothesis", "comm-bound")
    assert res["status"] == "succeeded"
    runs = res["runs"]
    assert len(runs) == 2 * 2 * 2 * 2 and all(r["status"] == "succeeded" for r in runs), runs
    seen = {(r["labels"]["config"], r["labels"]["concurrency"], r["labels"]["ttft"], r["labels"]["repeat"]) for r in runs}
    assert len(seen) == 16
    assert all(r["labels"]["model"] == "test" and r["metrics"]["completed"] == 1 for r in runs)
    launch_dir = ws.root / ".optlog" / "launches" / str(res["launch"])
    logs = sorted(launch_dir.glob("server-*.stdout.log"))
    assert len(logs) == 2, logs
    assert sum(p.read_text().count("READY") for p in logs) == 2
    # each value reached the program as one literal argument; JSON untouched; arithmetic done
    r0 = next(r for r in runs if r["labels"]["config"] == "tp4pp2" and r["labels"]["concurrency"] == 2)
    argv = json.loads((ws.root / r0["artifacts_dir"] / "argv.json").read_text())
    assert argv[argv.index("--echo") + 1:] == ["; rm -rf ~", "tp4pp2 x", "8", '{"temperature": 0}', "4"]
    show = ws.j("run", "show", str(r0["id"]))
    names = {a["path"].rsplit("/", 1)[-1] for a in show["artifacts"]}
    assert {"result.json", "bench.stdout.log", "bench.stderr.log"} <= names
    assert show["environment"]["commands"]["bench"][0] == PY
    assert show["hypothesis"] == "comm-bound"
    assert_no_survivors(str(ws.root))


def test_server_url_uses_a_running_server(ws, tmp_path):
    port = free_port()
    srv = subprocess.Popen([PY, str(TESTS / "testserver.py"), "--port", str(port), "--ttft-ms", "1", "--itl-ms", "1"],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().startswith("READY")
        # the spec's own server command would fail: it must not be started
        rel = spec(ws, "ext", server={"cmd": "false {{ marker }}", "check": {"prompts": ["The capital of France is"],
                                                                              "expect_regex": "Paris"},
                                      "ready": {"url": "http://127.0.0.1:1/health"}},
                   matrix={"concurrency": [1, 2]})
        res = ws.j("run", "launch", rel, "--server-url", f"http://127.0.0.1:{port}")
        assert [r["status"] for r in res["runs"]] == ["succeeded", "succeeded"]
        assert not list((ws.root / ".optlog" / "launches" / str(res["launch"])).glob("server-*"))
        assert srv.poll() is None  # an external server is left running
    finally:
        srv.terminate()
        srv.wait(5)


@pytest.mark.parametrize("mode,words", [("garbage", "garbage output"), ("empty", "empty output")])
def test_sanity_check_fails_points_on_garbage_or_empty_text(ws, mode, words):
    srv = {"cmd": server_cmd("--mode {{ mode }}"),
           "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05},
           "check": {"prompts": ["The capital of France is"], "expect_regex": "Paris"}}
    rel = spec(ws, "sane", server=srv, params={"mode": mode}, matrix={"concurrency": [1, 2]})
    r = ws.cli("run", "launch", rel, "--json", check=1)
    runs = r.json["runs"]
    assert [x["status"] for x in runs] == ["failed", "failed"]
    assert all(x["cause"] == "sanity_check" and words in x["error"] for x in runs), runs
    assert not any((ws.root / x["artifacts_dir"] / "argv.json").exists() for x in runs)  # no bench ran
    assert_no_survivors(str(ws.root))


def test_failing_bench_exit_code_stderr_cause_and_stray_child(ws):
    rel = spec(ws, "oom", include=[
        {"config": "bad", "flags": "--exit 3 --child --stderr 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB'"},
        {"config": "good", "flags": "--requests=1"}],
        bench={"cmd": bench_cmd("{{ flags }}")})
    # flags is one argument (a value never splits): the bench's argparse sees an unknown argument
    r = ws.cli("run", "launch", rel, "--json", check=1)
    bad, good = r.json["runs"]
    assert bad["status"] == "failed" and bad["exit_code"] == 2 and "unrecognized arguments" in bad["error"]
    assert good["status"] == "succeeded"
    # now the same failure with real separate arguments, and on_error: stop
    rel = spec(ws, "oom2", on_error="stop", matrix={"concurrency": [1, 2]},
               bench={"cmd": bench_cmd("--exit 3 --child --stderr 'torch.OutOfMemoryError: CUDA out of memory. "
                                       "Tried to allocate 2 GiB'")})
    r = ws.cli("run", "launch", rel, "--json", check=1)
    first, second = r.json["runs"]
    assert first["status"] == "failed" and first["exit_code"] == 3 and first["cause"] == "out_of_memory"
    assert "CUDA out of memory" in first["error"]
    assert second["status"] == "cancelled" and "on_error is stop" in second["error"]
    assert_no_survivors(str(ws.root))  # the child the bench left behind was ended with its group


def test_server_never_ready_dies_or_port_in_use(ws):
    # 1) never ready: /health answers 503 for longer than ready.timeout_s
    srv = {"cmd": server_cmd("--ready-delay-s 60"),
           "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 1, "interval_s": 0.05}}
    rel = spec(ws, "slow", server=srv)
    r = ws.cli("run", "launch", rel, "--json", check=1)
    (run,) = r.json["runs"]
    assert run["cause"] == "ready_timeout" and "not ready after 1s" in run["error"] and "READY" in run["error"]
    assert_no_survivors(str(ws.root))
    # 2) the server dies during a point (bench still running)
    srv = {"cmd": server_cmd("--exit-after-s 1"), "ready": {"url": "http://127.0.0.1:{{ port }}/health",
                                                             "timeout_s": 15, "interval_s": 0.05}}
    rel = spec(ws, "dies", server=srv, bench={"cmd": bench_cmd("--sleep 30")})
    r = ws.cli("run", "launch", rel, "--json", check=1)
    (run,) = r.json["runs"]
    assert run["cause"] == "server_died" and "during the point" in run["error"], run
    assert_no_survivors(str(ws.root))
    # 3) the port is taken: refused before anything starts (a stale server: tests/integration/test_ports.py)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        rel = spec(ws, "port", params={"port": port})
        r = ws.cli("run", "launch", rel, "--json", check=1)
    assert r.json["error"]["code"] == "port_in_use" and f"port {port}" in r.json["error"]["message"], r.json
    assert_no_survivors(str(ws.root))


def test_bench_timeout(ws):
    # a bench that never ends by itself (it waits for a file nobody creates): the launch returns only
    # because the timeout ended it, on an idle machine or a busy one
    never = ws.root.parent / "never"
    rel = spec(ws, "slowbench", bench={"cmd": bench_cmd(f"--until {never} --child"), "timeout_s": 1})
    r = ws.cli("run", "launch", rel, "--json", check=1)
    (run,) = r.json["runs"]
    assert run["status"] == "failed" and run["cause"] == "timeout" and "timed out after 1s" in run["error"]
    assert not never.exists()
    assert_no_survivors(str(ws.root))


def _popen_launch(ws, rel):
    return subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", rel, "--json"], cwd=ws.root, env=ws.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_bench_started(ws):
    return wait_for(lambda: list((ws.root / ".optlog" / "runs").glob("*/argv.json")), 60, "the bench to start")


def test_ctrl_c_cancels_and_ends_everything(ws):
    rel = spec(ws, "ctrlc", bench={"cmd": bench_cmd("--sleep 60 --child")}, matrix={"concurrency": [1, 2]})
    p = _popen_launch(ws, rel)
    try:
        _wait_bench_started(ws)
        assert len(survivors(str(ws.root))) >= 3  # server, bench, the bench's child
        os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does to the foreground group
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    doc = json.loads(out)
    assert doc["status"] == "cancelled"
    assert [r["status"] for r in doc["runs"]] == ["cancelled", "cancelled"]
    assert_no_survivors(str(ws.root))


def test_kill_9_of_optlog_then_next_command_interrupts_and_kills(ws):
    rel = spec(ws, "kill9", bench={"cmd": bench_cmd("--sleep 60 --child")})
    p = _popen_launch(ws, rel)
    try:
        _wait_bench_started(ws)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    left = survivors(str(ws.root))
    assert len(left) >= 3, left  # the orphans are still there until an optlog command runs
    r = ws.cli("run", "list", "--json")
    assert "interrupted" in r.err
    (run,) = r.json["runs"]
    assert run["status"] == "interrupted"
    assert_no_survivors(str(ws.root))
    assert ws.j("run", "show", str(run["id"]))["cause"] == "interrupted"


def test_detach_wait_logs_cancel(ws):
    rel = spec(ws, "quick", matrix={"concurrency": [1, 2]})
    d = ws.j("run", "launch", rel, "--detach")
    assert d["detached"] and len(d["runs"]) == 2
    w = ws.cli("run", "wait", d["ref"], "--json", check=0)
    assert w.json["status"] == "succeeded"
    assert ws.cli("run", "wait", str(d["runs"][1]), check=0)
    logs = ws.cli("run", "logs", str(d["runs"][0])).out
    assert "bench: 1 requests" in logs
    assert "succeeded" in ws.cli("run", "logs", d["ref"]).out
    # a long one: cancel it from "another terminal"
    rel = spec(ws, "long", bench={"cmd": bench_cmd("--sleep 60")})
    d = ws.j("run", "launch", rel, "--detach")
    wait_for(lambda: (ws.root / ".optlog" / "runs" / str(d["runs"][0]) / "argv.json").exists(), 60, "bench start")
    assert ws.cli("run", "wait", d["ref"], "--timeout", "0.2", check=1).out.strip().endswith("(still running: timed out waiting)")
    follow = subprocess.Popen([sys.executable, "-m", "optlog", "run", "logs", d["ref"], "--follow"], cwd=ws.root,
                              env=ws.env, stdout=subprocess.PIPE, text=True)
    c = ws.j("run", "cancel", d["ref"])
    assert c["status"] == "cancelled" and c["cancelled"]
    out, _ = follow.communicate(timeout=30)
    assert "cancelled" in out
    r = ws.cli("run", "wait", str(d["runs"][0]), "--json", check=1)
    assert r.json["status"] == "cancelled"
    assert_no_survivors(str(ws.root))


def test_log_regex_readiness_and_stop_command(ws):
    srv = {"cmd": server_cmd(), "ready": {"log_regex": "^READY http", "timeout_s": 15, "interval_s": 0.05},
           "check": {"prompts": ["The capital of France is"], "expect_regex": "Paris",
                     "url": "http://127.0.0.1:{{ port }}"},
           "stop": {"cmd": "{{ py }} -c \"open('{{ out }}/stopped', 'w').write('x')\"", "signal": "SIGINT",
                    "timeout_s": 1}}
    rel = spec(ws, "logready", server=srv)
    res = ws.j("run", "launch", rel)
    assert res["status"] == "succeeded"
    assert (ws.root / ".optlog" / "launches" / str(res["launch"]) / "stopped").read_text() == "x"
    assert_no_survivors(str(ws.root))


def test_telemetry_session_is_driven_around_each_point(ws, monkeypatch):
    """The launcher's side of the telemetry interface, with a recording stand-in session (the real
    sampler is another module's; NVML needs a GPU)."""
    calls: list[tuple] = []

    class Session:
        def start(self):
            calls.append(("start",))

        def begin_point(self, run_id):
            calls.append(("begin", run_id))

        def end_point(self, run_id, metrics, windows=None, fact_sources=None, labels=None):
            calls.append(("end", run_id, "output_throughput" in metrics))
            return {"gpu_power_w": 321.0}

        def stop(self):
            calls.append(("stop",))

    def open_session(ctx, *, launch_id, settings, env, executor):
        calls.append(("open", settings.get("scrape"), settings.get("interval_s")))
        assert executor.host and hasattr(executor, "stream")
        return Session()

    from optlog.runs import launcher

    monkeypatch.setattr(launcher, "open_session", open_session)  # the launcher's one way to a session
    for k, v in ws.env.items():
        if k.startswith("OPTLOG_DB_URL"):
            monkeypatch.setenv(k, v)
    from optlog.paths import Workspace
    from optlog.service import launch as svc
    from optlog.service.context import Ctx

    rel = spec(ws, "tel", matrix={"concurrency": [1, 2]},
               telemetry={"interval_s": 0.25, "scrape": "http://127.0.0.1:{{ port }}/metrics"})
    ctx = Ctx(Workspace(ws.root))
    try:
        res = svc.launch(ctx, rel)
    finally:
        ctx.close()
    assert res["status"] == "succeeded"
    a, b = (r["id"] for r in res["runs"])
    port = yaml_port(ws, "tel")
    assert calls == [("open", f"http://127.0.0.1:{port}/metrics", 0.25), ("start",), ("begin", a), ("end", a, True),
                     ("begin", b), ("end", b, True), ("stop",)]
    assert all(r["metrics"]["gpu_power_w"] == 321.0 for r in res["runs"])
    assert_no_survivors(str(ws.root))


def yaml_port(ws, name):
    import yaml

    return yaml.safe_load((ws.root / "runs" / f"{name}.yaml").read_text())["params"]["port"]


def test_launch_wait_logs_cancel_over_mcp_return_the_cli_documents(ws, tool):
    """`sets` as an object with typed values: the binding gets pairs, nothing is re-serialised."""
    rel = spec(ws, "mcp", matrix={"concurrency": [1]})
    d, err, code = tool("run_launch", {"spec": rel, "sets": {"repeats": 2}})
    assert (err, code) == (False, 0) and d["detached"] and len(d["runs"]) == 2, d
    w, err, code = tool("run_wait", {"ref": d["ref"], "timeout_s": 600, "detail": True})
    assert (err, code) == (False, 0) and w == ws.j("run", "wait", d["ref"])
    logs, err, _ = tool("run_logs", {"ref": d["ref"]})
    assert not err and logs == ws.j("run", "logs", d["ref"], "--tail", "10", "--width", "160")
    c, err, code = tool("run_cancel", {"ref": d["ref"]})
    assert (err, code) == (False, 0) and c == ws.j("run", "cancel", d["ref"])
    points = json.loads(next((ws.root / "launches").glob(f"{d['ref']}*/points.json")).read_text())
    assert points["sets"] == ["repeats=2"]
    # a bad typed value is refused before anything is written, the field the tool's parameter
    before = len(ws.j("run", "list")["runs"])
    for sets in ({"repeats": 0}, {"nope": 1}, {"bad key": 1}):
        doc, err, code = tool("run_launch", {"spec": rel, "sets": sets})
        assert err and code == 2 and doc["error"]["field"] == "sets", doc
    assert len(ws.j("run", "list")["runs"]) == before


def test_a_matrix_axis_given_as_a_list_is_the_axis(ws, monkeypatch):
    """`sets` pairs may hold a typed list (an MCP call's `{"matrix.concurrency": [1, 2]}`): the same
    axis as the CLI's `--set matrix.concurrency=[1,2]`, recorded so that `--again` replays it."""
    from optlog.api import verb as V
    from optlog.api.launches import run_launch
    from optlog.service.context import Ctx

    use_env(ws, monkeypatch)
    rel = spec(ws, "axis", matrix={"concurrency": [1]})
    cli = ws.j("run", "launch", rel, "--set", "matrix.concurrency=[1,2]")
    c = Ctx.find(str(ws.root))
    try:
        call = V.Call(chdir=str(ws.root), ctx=lambda: c, narrate=False, say=lambda t: None)
        bound = V.of(run_launch)
        assert bound is not None
        doc = bound.fn(call, spec=rel, again=None, hypothesis=None, sets=(("matrix.concurrency", [1, 2]),),
                       server_url=None, detach=False, allow_concurrent=False)
        assert bound.exit_code(doc, {}) == 0
        with pytest.raises(Exception) as e:
            bound.fn(call, spec=rel, again=None, hypothesis=None, sets=(("matrix.concurrency", [[1], {"a": 2}]),),
                     server_url=None, detach=False, allow_concurrent=False)
        assert getattr(e.value, "field", None) == "sets" and getattr(e.value, "exit_code", None) == 2
    finally:
        c.close()
    assert [r["labels"]["concurrency"] for r in doc["runs"]] == [r["labels"]["concurrency"] for r in cli["runs"]] == [1, 2]
    rec = json.loads(next((ws.root / "launches").glob(f"L{doc['launch']}*/points.json")).read_text())
    assert rec["sets"] == ["matrix.concurrency=[1, 2]"]
    again = ws.j("run", "launch", "--again", f"L{doc['launch']}")
    assert [r["labels"]["concurrency"] for r in again["runs"]] == [1, 2] and again["status"] == "succeeded"


def test_a_matrix_axis_as_a_json_list_over_mcp(ws, tool):
    rel = spec(ws, "axis2", matrix={"concurrency": [1]})
    d, err, code = tool("run_launch", {"spec": rel, "sets": {"matrix.concurrency": [1, 2]}, "detach": False})
    assert (err, code) == (False, 0), d
    assert [r["labels"]["concurrency"] for r in d["runs"]] == [1, 2]
    # a list is an axis only where the option takes one: a label's value stays a scalar
    d, err, code = tool("run_record", {"labels": {"concurrency": [1, 2]}, "metrics": {"x": 1}})
    assert (err, code) == (True, 2) and d["error"]["field"] == "labels", d
