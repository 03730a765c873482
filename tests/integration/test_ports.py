"""The server you benchmark is the server you started (issue 14.4): a stale server on the spec's
port (optlog.testing.fakeserver, started by the test) is never benchmarked under the new labels."""

from __future__ import annotations

import subprocess
import sys
import time

from _launch import PY, TESTS, assert_no_survivors, spec, wait_for


def _stale(port: int) -> subprocess.Popen:
    p = subprocess.Popen([PY, "-m", "optlog.testing.fakeserver", "--port", str(port), "--model", "STALE-old-model",
                          "--itl-ms", "30"], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().startswith("READY")
    return p


def _port(ws, rel) -> int:
    import yaml

    return int(yaml.safe_load((ws.root / rel).read_text())["params"]["port"])


def test_a_taken_port_refuses_the_launch_naming_the_holder(ws):
    rel = spec(ws, "stale", labels={"model": "new-model"})
    port = _port(ws, rel)
    stale = _stale(port)
    try:
        commits = ws.commits()
        r = ws.cli("run", "launch", rel, "--json", check=1)
        err = r.json["error"]
        assert err["code"] == "port_in_use" and err["port"] == port, err
        assert f"port {port}" in err["message"] and f"pid {stale.pid}" in err["message"], err
        assert "fakeserver" in err["message"]
        assert ws.j("run", "list")["runs"] == [] and ws.commits() == commits  # nothing recorded
        h = ws.cli("run", "launch", rel, check=1)  # the human form says the same on stderr
        assert f"port {port} is already in use by pid {stale.pid}" in h.err and "Traceback" not in h.err
        assert stale.poll() is None  # not ours: left alone
    finally:
        stale.terminate()
        stale.wait(5)
    # once the port is free, the same spec runs with its own server
    assert ws.j("run", "launch", rel)["status"] == "succeeded"


def test_readiness_from_another_process_is_not_our_server(ws):
    # the port is free when the launch is planned; a stale server takes it while ours starts slowly
    srv = {"cmd": ["sh", "-c", "sleep 6; exec {{ py }} {{ tests }}/testserver.py --port {{ port }} --model {{ marker }}"],
           "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 30, "interval_s": 0.05},
           "check": {"prompts": ["The capital of France is"], "expect_regex": "Paris"}, "stop": {"timeout_s": 2}}
    rel = spec(ws, "late", server=srv, labels={"model": "new-model"})
    port = _port(ws, rel)
    p = subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", rel, "--json"], cwd=ws.root, env=ws.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stale = None
    try:
        wait_for(lambda: any("starting server" in f.read_text() for f in (ws.root / ".optlog" / "launches").glob("*/launch.log")),
                 60, "the server start")
        stale = _stale(port)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 1, err
        import json

        (run,) = json.loads(out)["runs"]
        assert run["status"] == "failed" and run["cause"] == "not_our_server", run
        assert f"pid {stale.pid}" in run["error"] and "not the one optlog started" in run["error"]
        assert stale.poll() is None  # a process optlog did not start is never killed
        assert ws.j("run", "show", str(run["id"]))["metrics"] == {}
    finally:
        if p.poll() is None:
            p.kill()
        if stale is not None:
            stale.terminate()
            stale.wait(5)
    assert_no_survivors(str(ws.root))
