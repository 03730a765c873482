"""Issue 30 with the real CPU llama-server (one per module) serving a GGUF written by
optlog.testing.gguf_model: optlog finds the model's work counts from the server's own endpoints and the
file it names, a launch against it stores them (with their sources) beside counters summarised over the
load generator's decode windows, and an older run diagnosed without them is re-made once they can be read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from _realserver import LlamaServer, small_model_server
from tests._telemetry import ctx_for, fake_env

pytestmark = pytest.mark.slow

gguf = pytest.importorskip("gguf")

GPU = {"gpus": [{"uuid": "GPU-aaaaaaaa-1111", "power_w": 300, "limit_w": 700, "util": 90, "tensor": 2, "dram": 40,
                 "sm_active": 60}]}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, real_server: tuple[Path, Path]) -> Iterator[tuple[LlamaServer, dict[str, Any]]]:
    yield from small_model_server(tmp_path_factory, real_server[0])


def test_the_servers_endpoints_and_the_file_they_name_give_the_work_counts(served: tuple[LlamaServer, dict]) -> None:
    from optlog.runs.modelfacts import discover

    srv, s = served
    mf = discover(srv.url, srv.argv)
    for k in ("total_params", "active_params", "kv_bytes_per_token", "n_layer", "n_embd"):
        assert mf.facts[k] == s["facts"][k], k
    assert mf.sources["active_params"] == f"GGUF header of {s['path']} (named by llama-server /props model_path)"
    assert set(mf.by_type) == {"F16", "F32"}
    # where the files are on another host: the server's own /v1/models meta
    remote = discover(srv.url, srv.argv, local=False)
    assert remote.facts["total_params"] == s["facts"]["total_params"]
    assert remote.sources["total_params"] == "llama-server /v1/models meta"
    assert 2.0 <= remote.facts["param_bytes"] < 2.1   # the file's bytes over its parameters: F16 + F32 norms
    assert any("not read here" in n for n in remote.notes)


def test_a_launch_stores_the_facts_the_decode_windows_and_says_what_decided(ws: Any, served: tuple[LlamaServer, dict],
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    srv, s = served
    cfg = ws.root / "optlog.yaml"   # an H200's ceilings: the estimate is held against them
    cfg.write_text(re.sub(r"hardware:\n(  .*\n)+", "hardware:\n  default: h200\n  gpus:\n    h200:\n"
                          "      peak_tflops: {fp16: 989}\n      mem_bw_gbps: 4800\n", cfg.read_text()))
    spec = {"name": "facts", "matrix": {"concurrency": [1]},
            "bench": {"cmd": "{{ py }} -m optlog.loadgen {{ server_url }} --concurrency 1 --num-prompts 4 --input-len 8 "
                             "--output-len 128 --ignore-eos --output-file {{ out }}/result.jsonl",
                      "parser": "optlog", "timeout_s": 120},
            "params": {"py": __import__("sys").executable},
            # decode windows of several sampling intervals however fast the machine: 3 requests of 16
            # tokens took 0.06 s on an idle one, under the 0.05-s interval, and left decode unjudged
            "telemetry": {"interval_s": 0.02, "gpm_interval_s": 0.1},
            "labels": {"model": "small"}}
    (ws.root / "runs").mkdir(exist_ok=True)
    (ws.root / "runs" / "facts.yaml").write_text(yaml.safe_dump(spec))
    res = ws.j("run", "launch", "runs/facts.yaml", "--server-url", srv.url, env=fake_env(GPU), timeout=300)
    assert res["status"] == "succeeded", res
    (run,) = res["runs"]
    m = run["metrics"]
    assert m["model_active_params"] == s["facts"]["active_params"] and "active_params" not in run["labels"]
    assert m["model_kv_bytes_per_token"] == s["facts"]["kv_bytes_per_token"]
    assert m["telemetry_steady_windows"] >= 1 and 0 < m["telemetry_steady_s"] < m["telemetry_window_s"]
    assert m["dram_bw_util_steady"] == pytest.approx(40) and m["dram_bw_util"] == pytest.approx(40)
    # a tiny model on a CPU with fake GPU counters (SMs 60 % busy, DRAM 40 %): a call on that evidence,
    # for the whole point and each phase (issue 43)
    assert m["roofline_basis"] == 2.0 and sum(m[f"bound_{w}"] for w in ("compute", "memory", "latency",
                                                                          "communication")) == 1.0
    assert any(k.startswith("bound_decode_") for k in m), ({k: v for k, v in m.items() if "window" in k or "duration" in k}, run.get("telemetry", {}).get("diagnosis", {}).get("window"))
    show = ws.j("run", "show", str(run["id"]))
    assert "GGUF header of" in show["environment"]["model_facts"]["sources"]["active_params"]
    d = show["telemetry"]["diagnosis"]
    assert f"GGUF header of {s['path']}" in d["evidence"] and "decode windows" in d["window"]
    assert d["would_change_its_mind"] and "stored_differs" not in d

    # an older optlog stored a counters-only diagnosis and no facts: the next re-diagnosis reads the
    # model file the run's environment names and re-makes it
    from optlog.service.diagnoses import refresh
    from optlog.store.runrows import labels_metrics, replace_metrics

    with ctx_for(ws, monkeypatch) as ctx:
        with ctx.db.write() as db:
            drop = [k for k in m if k.startswith(("model_", "roofline_", "bound_"))]
            replace_metrics(db, run["id"], drop, {"bound_latency": 1.0, "bound_memory": 0.0, "bound_compute": 0.0})
        changes = refresh(ctx)
        assert [c["run"] for c in changes] == [run["id"]] and "GGUF header" in changes[0]["facts_from"]
        with ctx.db.read() as db:
            after = labels_metrics(db, [run["id"]])[1][run["id"]]
        assert after["model_active_params"] == s["facts"]["active_params"] and after["roofline_basis"] == 2.0
        assert refresh(ctx) == []   # nothing changed since
