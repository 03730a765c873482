"""Issue 43 on a CPU target with the real llama-server (one per module): `optlog calibrate` gives the
CPU's ceilings on a busy machine, a launch against the server is diagnosed from model facts and the
server's own counters (no GPU counters): prefill and decode apart, tokens per pass from the server's
passes, and the report shows the diagnosis and draws the roofline."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from _realserver import LlamaServer, small_model_server

pytestmark = pytest.mark.slow

gguf = pytest.importorskip("gguf")

BLAS1 = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, real_server: tuple[Path, Path]) -> Iterator[tuple[LlamaServer, dict[str, Any]]]:
    yield from small_model_server(tmp_path_factory, real_server[0])


def test_a_cpu_launch_is_diagnosed_per_phase_and_the_report_shows_it(ws: Any, served: tuple[LlamaServer, dict]) -> None:
    srv, s = served
    # the CPU's ceilings from calibrate (max-spread 1: only trials that disagree by 100 % are refused)
    cal = ws.j("calibrate", "--quick", "--device", "cpu", "--max-spread", "1", env=BLAS1)
    assert cal["written"] and not cal["refused"]
    assert all(t["quantile"] == 0.9 for t in cal["measured"]["spread"].values())
    spec = {"name": "cpu-decode", "matrix": {"concurrency": [1]},
            "bench": {"cmd": "{{ py }} -m optlog.loadgen {{ server_url }} --concurrency 1 --num-prompts 3 --input-len 32 "
                             "--output-len 16 --ignore-eos --output-file {{ out }}/result.jsonl",
                      "parser": "optlog", "timeout_s": 120},
            "params": {"py": sys.executable},
            "telemetry": {"scrape": srv.url + "/metrics"},
            "labels": {"model": "small"}}
    (ws.root / "runs").mkdir(exist_ok=True)
    (ws.root / "runs" / "cpu.yaml").write_text(yaml.safe_dump(spec))
    res = ws.j("run", "launch", "runs/cpu.yaml", "--server-url", srv.url, timeout=300)
    assert res["status"] == "succeeded", res
    (run,) = res["runs"]
    m = run["metrics"]
    # the phases' windows from the load generator, the passes from the server's own counters
    assert m["prefill_window_s"] > 0 and m["decode_window_s"] > 0 and m["mean_decoding"] == pytest.approx(1.0, abs=0.05)
    assert m["srv_n_decode_delta"] > 0 and m["srv_prompt_tokens_delta"] > 0
    assert m["roofline_basis"] == 2.0
    tin, tout = m["input_throughput"] * m["duration_s"], m["output_throughput"] * m["duration_s"]
    share = min(1.0, tout / m["srv_tokens_predicted_delta"])
    # every token a pass carries: prompt + generated over the server's own passes (issue 43)
    assert m["roofline_est_tokens_per_step"] == pytest.approx((tin + tout) / (m["srv_n_decode_delta"] * share))
    show = ws.j("run", "show", str(run["id"]))
    d = show["telemetry"]["diagnosis"]
    assert d["bound"] is not None and d["efficiency"] is not None, (d["reason"], {k: v for k, v in m.items() if k.startswith(("srv_", "mean_", "telemetry"))})
    assert {p["phase"] for p in d["phases"]} == {"prefill", "decode"}
    for p in d["phases"]:
        assert p["bound"] is not None and p["would_change_its_mind"], p
    assert "peak" in d["evidence"] and "compute type fp16" in d["evidence"]
    # the report: the diagnosis section with both phases, and the roofline under the CPU's ceilings
    rep = ws.j("report", "--out", "reports/cpu.md")
    text = (ws.root / rep["file"]).read_text()
    assert "## What bounds each configuration" in text and "| prefill |" in text and "| decode |" in text
    svg = ws.root / "reports" / "cpu-roofline.svg"
    assert svg.is_file() and "arithmetic intensity" in svg.read_text()
