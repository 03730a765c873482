"""The roofline estimate of a serving run, fixed where a real llama.cpp server on an H200 showed it wrong
(docs/gpu-proof/serving/): weights are read once per forward pass (the server's own pass count), an MoE
pass reads the experts its batch touches (not the per-token active ones), KV reads grow with the context,
and "latency-bound" says whether the GPU idled (host-bound) or ran small kernels. Numbers are the
recorded H200 points; everything goes through the real CLI (`run record`, `run show --json`)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from optlog.telemetry import prometheus as prom

H200 = """hardware:
  default: h200
  gpus:
    h200:
      peak_tflops: {fp16: 989}
      mem_bw_gbps: 4800
      measured:
        source: test
        peak_tflops: {fp16: 660.9}
        mem_bw_gbps: 4264.5
"""

DENSE = {"model": "dense", "dtype": "fp16", "active_params": 7983108096, "param_bytes": 2,
         "kv_bytes_per_token": 147456}
MOE = {"model": "moe", "dtype": "fp16", "active_params": 902400000, "param_bytes": 2, "kv_bytes_per_token": 24576,
       "expert_params": 9663676416, "n_expert": 128, "n_expert_used": 8}
# H200 run 17: MoE, concurrency 64, 128 requests of 129 prompt + 128 output tokens
MOE_C64 = {"duration_s": 15.66, "completed": 128, "total_input_tokens": 16512, "total_output_tokens": 16384,
           "output_throughput": 1046.0, "mean_inflight": 63.82, "tensor_active": 0.87, "dram_bw_util": 6.77,
           "sm_active": 13.97}
SRV_C64 = {"srv_n_decode_delta": 388, "srv_tokens_predicted_delta": 17408}


def _ws_h200(ws: Any) -> None:
    cfg = ws.root / "optlog.yaml"
    text = cfg.read_text()
    text = re.sub(r"hardware:\n(  .*\n)+", H200, text)
    cfg.write_text(text)


def _diag(ws: Any, labels: dict[str, Any], metrics: dict[str, float]) -> dict[str, Any]:
    args = ["run", "record"]
    for k, v in labels.items():
        args += ["--label", f"{k}={v}"]
    for k, v in metrics.items():
        args += ["--metric", f"{k}={v}"]
    rid = ws.j(*args)["id"]
    return ws.j("run", "show", str(rid))["telemetry"]["diagnosis"]


@pytest.fixture
def hws(ws: Any) -> Any:
    _ws_h200(ws)
    return ws


def test_moe_bytes_count_the_experts_the_batch_touches(hws: Any) -> None:
    d = _diag(hws, {**MOE, "concurrency": 64}, {**MOE_C64, **SRV_C64})
    n = d["numbers"]
    # 365 measured passes × 45 decode tokens: uniform routing touches 1 − (15/16)^45 = 94 % of the experts
    assert n["est_experts_touched_frac"] == pytest.approx(1 - (15 / 16) ** (16384 / (388 * 16384 / 17408)))
    assert n["est_weight_gb"] == pytest.approx(388 * 16384 / 17408 * 2 * (902400000 - 9663676416 / 16 + 9663676416
                                                                          * n["est_experts_touched_frac"]) / 1e9,
                                               rel=1e-6)
    # the old estimate (active params per token) read 16384/63.8 × 1.8 GB = 463 GB: 16× too few bytes
    assert n["est_weight_gb"] > 10 * 463
    assert "of the experts touched per pass" in d["reason"]


def test_weight_reads_follow_the_servers_passes_not_the_offered_batch(hws: Any) -> None:
    with_srv = _diag(hws, {**DENSE, "concurrency": 64}, {**MOE_C64, **SRV_C64})["numbers"]
    client = _diag(hws, {**DENSE, "concurrency": 64}, MOE_C64)
    # 388 decode calls × 16384/17408 measured share = 365 weight reads, not 16384 / 63.82 = 257; each
    # carries every token: prompt and generated (issue 43), 16512 + 16384 over 365
    assert with_srv["est_tokens_per_step"] == pytest.approx((16512 + 16384) / (388 * 16384 / 17408))
    assert client["numbers"]["est_tokens_per_step"] == pytest.approx((16512 + 16384) / (16384 / 63.82))
    assert "client in-flight requests" in client["reason"]


def test_kv_reads_grow_with_the_context(hws: Any) -> None:
    d = _diag(hws, {**DENSE, "concurrency": 64}, {**MOE_C64, **SRV_C64})["numbers"]
    ctx = 16512 / 128 + 0.5 * 16384 / 128      # 193 tokens of context on average
    passes = 388 * 16384 / 17408
    # one write per token, each generated token reads its context, each prefill pass the prompt before it
    kv = 147456 * (16512 + 16384) + 147456 * ctx * 16384 + 147456 * 0.5 * (16512 / 128) * 16512 / (32896 / passes)
    assert d["est_kv_gb"] == pytest.approx(kv / 1e9)
    # the old formula read 1 + 0.5 × batch ≈ 33 tokens of context per decoded token: 6× too little
    assert d["est_kv_gb"] > 4 * 147456 * 33 * 16384 / 1e9


def test_latency_bound_says_host_when_the_gpu_idles(hws: Any) -> None:
    idle = _diag(hws, {**DENSE, "concurrency": 64}, {**MOE_C64, **SRV_C64, "duration_s": 33.0, "sm_active": 8.9})
    # issue 43: host-bound is its own word (and still bound_latency, the family predictions read)
    assert idle["bound"] == "host"
    assert "GPU idles most of the time" in idle["reason"] and "host side" in idle["reason"]
    busy = _diag(hws, {**DENSE, "concurrency": 64}, {**MOE_C64, **SRV_C64, "duration_s": 33.0, "sm_active": 80})
    # busy SMs (idle 20 %) that keep no unit busier than that: latency, on that evidence
    assert busy["bound"] == "latency" and "the SMs idle 20% of the time" in busy["reason"]


def test_dense_batch1_is_memory_bound_as_on_the_h200(hws: Any) -> None:
    # H200 run 1: 8 requests, 1032 prompt + 1024 output tokens in 5.90 s, 1152 decode calls
    d = _diag(hws, {**DENSE, "concurrency": 1},
              {"duration_s": 5.904, "completed": 8, "total_input_tokens": 1032, "total_output_tokens": 1024,
               "mean_inflight": 1.0, "srv_n_decode_delta": 1152, "srv_tokens_predicted_delta": 1152,
               "dram_bw_util": 49.6, "tensor_active": 1.59, "sm_active": 70.2})
    assert d["bound"] == "memory"
    assert 0.6 < d["numbers"]["mem_frac"] < 0.7
    assert "counters agree" in d["reason"]


def test_llamacpp_metrics_are_scraped_with_short_names() -> None:
    text = ("# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total 100\n"
            "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 900\n"
            "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 8\n"
            "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 2\n")
    later = text.replace(" 100\n", " 150\n").replace(" 900\n", " 2900\n")
    m = prom.point_metrics([prom.parse(text), prom.parse(later)])
    assert m["srv_n_decode_delta"] == 50 and m["srv_tokens_predicted_delta"] == 2000
    assert m["srv_running_mean"] == 8 and m["srv_queued_max"] == 2


def test_per_token_model_facts_are_not_redacted_as_secrets(ws: Any) -> None:
    """Secret redaction read `kv_bytes_per_token` as a credential and stored "<redacted>", so the
    estimate lost its KV bytes; a unit after `per` is not a secret, `api_token` still is."""
    from optlog.runs.redact import secret_name

    assert not secret_name("kv_bytes_per_token") and secret_name("api_token") and secret_name("hf_token")
    run = ws.j("run", "record", "--label", "kv_bytes_per_token=147456", "--metric", "duration_s=1")
    assert run["labels"]["kv_bytes_per_token"] == 147456
