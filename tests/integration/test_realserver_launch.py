"""`optlog run launch` with llama.cpp's real `llama-server` and a real model (Gemma 3 270M): a sweep
over `--parallel` slots and concurrency with server reuse, a model file that does not exist, a kill -9
of the server mid-bench, and teardown leaving nothing behind. See tests/_realserver.py for where the
binary and the model come from (scripts/llama-server.sh) and when these tests skip."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from _launch import assert_no_survivors, free_port, survivors, wait_for

pytestmark = pytest.mark.slow
PY = sys.executable


def _spec(ws, name: str, model: str, binary: str, *, matrix: dict, bench_extra: str = "", check: bool = True,
          ready_timeout: int = 120) -> str:
    """A run spec the way a user writes one for llama-server; the workspace path rides in --alias so
    every process of the run is found in /proc."""
    srv = {"cmd": "{{ bin }} -m {{ model }} --host 127.0.0.1 --port {{ port }} -t 1 -c {{ 512 * parallel }} "
                  "--parallel {{ parallel }} --metrics --alias {{ marker }}",
           "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": ready_timeout, "interval_s": 0.05},
           "stop": {"timeout_s": 10}}
    if check:
        srv["check"] = {"prompts": ["1, 2, 3, 4, 5,"], "expect_regex": r"^\s*6", "max_tokens": 4}
    d = {"name": name,
         "params": {"bin": binary, "model": model, "port": free_port(), "marker": str(ws.root), "py": PY},
         "matrix": matrix,
         "server": srv,
         "bench": {"cmd": "{{ py }} -m optlog.loadgen http://127.0.0.1:{{ port }} --concurrency {{ concurrency }} "
                          "--num-prompts {{ concurrency * 2 }} --input-len 16 --output-len 8 --ignore-eos "
                          "--output-file {{ out }}/result.jsonl " + bench_extra,
                   "parser": "optlog", "timeout_s": 300},
         "telemetry": {"scrape": "http://127.0.0.1:{{ port }}/metrics"},
         "labels": {"server": "llama.cpp", "model": "gemma3-270m"}}
    p = ws.root / "runs" / f"{name}.yaml"
    p.write_text(yaml.safe_dump(d, sort_keys=False, width=10000))
    return f"runs/{name}.yaml"


def test_sweep_over_parallel_slots_and_concurrency_with_server_reuse(ws, real_server):
    binary, model = real_server
    rel = _spec(ws, "slots", str(model), str(binary), matrix={"concurrency": [1, 2], "parallel": [1, 2]})
    res = ws.j("run", "launch", rel, timeout=900)
    assert res["status"] == "succeeded", json.dumps(res)[:3000]
    runs = res["runs"]
    assert len(runs) == 4 and all(r["status"] == "succeeded" for r in runs)
    assert {(r["labels"]["parallel"], r["labels"]["concurrency"]) for r in runs} == {(1, 1), (1, 2), (2, 1), (2, 2)}
    # grouped by the rendered server command: two servers (one per --parallel), each reused twice
    launch_dir = ws.root / ".optlog" / "launches" / str(res["launch"])
    assert len(list(launch_dir.glob("server-*.stderr.log"))) == 2
    text = (launch_dir / "launch.log").read_text()
    assert text.count("sanity check passed") == 2
    for r in runs:
        m = r["metrics"]
        assert r["labels"]["server"] == "llama.cpp"
        assert m["completed"] == 2 * r["labels"]["concurrency"] and m["failed"] == 0 and m["short"] == 0
        assert m["median_output_tokens"] == 8
        # optlog's own count against llama.cpp's tokens_predicted_total over the same level
        assert 0.98 <= m["output_tokens_agreement"] <= 1.02, m
        assert m["server_mean_tpot_ms"] > 0          # llama.cpp's per-response timings
        assert m["srv_tokens_predicted_delta"] >= 8  # the telemetry scrape of llamacpp:* counters
    show = ws.j("run", "show", str(runs[0]["id"]))
    srv = show["environment"]["server"]
    assert srv["endpoint"] == "/props" and srv["effective"]["build_info"]
    assert "version" in srv["binary_version"]
    # issue 30: the model's work counts from its GGUF header (a Q4_K_M file mixes five storage types)
    mf = show["environment"]["model_facts"]
    assert {"Q4_K", "Q6_K", "Q8_0", "F32"} <= set(mf["by_type"]) and "GGUF header" in mf["sources"]["param_bytes"]
    assert show["metrics"]["model_total_params"] == mf["facts"]["total_params"] > 2e8
    assert 0.5 < show["metrics"]["model_param_bytes"] < 1.2 and show["metrics"]["model_kv_bytes_per_token"] > 0
    assert_no_survivors(str(ws.root), timeout=15)


def test_a_model_file_that_does_not_exist(ws, real_server):
    binary, _ = real_server
    rel = _spec(ws, "nomodel", str(ws.root / "no-such-model.gguf"), str(binary),
                matrix={"concurrency": [1], "parallel": [1]}, ready_timeout=60)
    r = ws.cli("run", "launch", rel, "--json", check=False, timeout=300)
    assert r.code == 1, r.err
    (run,) = r.json["runs"]
    assert run["status"] == "failed"
    assert "server exited with code" in run["error"] and "before it was ready" in run["error"]
    assert "no-such-model.gguf" in run["error"]   # the server's own words, from its log tail
    assert_no_survivors(str(ws.root), timeout=15)


def test_kill_9_of_the_server_mid_bench(ws, real_server):
    binary, model = real_server
    # long enough to be killed in the middle: 12 requests of 64 tokens at concurrency 2
    rel = _spec(ws, "kill", str(model), str(binary), matrix={"concurrency": [2], "parallel": [2]},
                bench_extra="--num-prompts 12 --output-len 64", check=False)
    p = subprocess.Popen([PY, "-m", "optlog", "run", "launch", rel, "--json"], cwd=ws.root, env=ws.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        def bench_running() -> bool:  # its --output-file is under the workspace
            return p.poll() is not None or any("optlog.loadgen" in cmd for _, cmd in survivors(str(ws.root)))

        wait_for(bench_running, 180, "the bench to start")
        assert p.poll() is None, p.communicate()
        time.sleep(2.0)  # requests in flight
        servers = [pid for pid, cmd in survivors(str(ws.root)) if "llama-server" in cmd.split(" ", 1)[0]]
        assert len(servers) == 1, survivors(str(ws.root))
        os.kill(servers[0], signal.SIGKILL)
        out, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
            # a failed test must not leave its llama-server behind (the launcher starts it in a group
            # of its own, so killing the driver alone would orphan it)
            for pid, _ in survivors(str(ws.root)):
                os.kill(pid, signal.SIGKILL)
    doc = json.loads(out)
    (run,) = doc["runs"]
    assert run["status"] == "failed", run
    assert "server exited" in run["error"] and "during the point" in run["error"]
    assert_no_survivors(str(ws.root), timeout=15)
