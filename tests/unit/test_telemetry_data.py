"""Summaries, storage, diagnosis, nvidia-smi parsing and Prometheus parsing."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from optlog.core.diagnosis import diagnose
from optlog.telemetry import prometheus as prom
from optlog.telemetry import smi
from optlog.telemetry.store import TIME_FIELD, columns, pack_times, pack_values, unpack
from optlog.telemetry.summary import summarize
from tests._telemetry import PROOF, complete, ctx_for, run_test_server

H200 = {"measured_peak_tflops_bf16": 714.0, "peak_tflops": 989.0, "measured_mem_bw_gbps": 4280.0, "mem_bw_gbps": 4800.0}


# ------------------------------------------------------------------ summaries


def _cols(t: list[float], **fields: list[float]) -> dict[str, dict[str, np.ndarray]]:
    return {"GPU-a": {TIME_FIELD: np.array(t), **{k: np.array(v, dtype=float) for k, v in fields.items()}}}


def test_summary_excludes_warmup_and_times_throttle_reasons() -> None:
    t = [100.0 + 0.5 * i for i in range(10)]  # 100.0 … 104.5
    power = [50, 60, 500, 500, 500, 500, 520, 540, 560, 600]
    thr = [1, 1, 4, 4, 4, 0, 0, 4 | 0x40, 0, 0]
    m = summarize(_cols(t, gpu_power_w=power, throttle=thr), start=100.0, end=104.5, warmup_s=1.0)
    kept = np.array(power[2:], dtype=float)  # the first 1 s is warm-up
    assert m["gpu_power_w"] == m["gpu_power_w_mean"] == pytest.approx(kept.mean())
    assert m["gpu_power_w_max"] == 600 and m["gpu_power_w_p50"] == pytest.approx(np.percentile(kept, 50))
    assert m["gpu_power_w_p5"] < m["gpu_power_w_p95"]
    assert m["throttle_sw_power_cap_s"] == pytest.approx(2.0)  # 4 samples × 0.5 s
    assert m["throttle_hw_thermal_s"] == pytest.approx(0.5)
    assert m["throttle_gpu_idle_s"] == 0.0  # the idle samples were in the warm-up
    assert m["telemetry_samples"] == 8 and m["telemetry_gpus"] == 1


def test_summary_pools_gpus_and_ignores_missing_values() -> None:
    cols = {"A": {TIME_FIELD: np.array([0.0, 1.0]), "tensor_active": np.array([10.0, math.nan])},
            "B": {TIME_FIELD: np.array([0.0, 1.0]), "tensor_active": np.array([30.0, 50.0])}}
    m = summarize(cols)
    assert m["tensor_active"] == pytest.approx(30.0) and m["telemetry_gpus"] == 2


# ------------------------------------------------------------------ storage


def test_pack_round_trip_and_size() -> None:
    t = 1.8e9 + np.arange(5000) * 0.1 + np.random.default_rng(0).normal(0, 0.001, 5000)
    back = unpack(pack_times(t, t[0]), t[0])
    assert np.max(np.abs(back - t)) < 0.0006  # millisecond resolution
    v = np.round(np.random.default_rng(1).uniform(0, 700, 5000), 3)
    data = pack_values(v)
    assert np.allclose(unpack(data), v, rtol=1e-6)
    assert len(pack_values(np.full(5000, 1980.0))) < 200  # a constant compresses to almost nothing


def test_store_round_trip_through_the_database(ws, monkeypatch) -> None:
    from optlog.service.evidence import insert_run
    from optlog.telemetry.store import read_columns, write_samples

    samples = [{"t": 1000.0 + 0.1 * i, "gpu": g, "uuid": f"GPU-{g}", "gpu_power_w": 100.0 + i + g,
                "throttle": 4 if i % 2 else 0, **({"tensor_active": 50.0} if i % 3 == 0 else {})}
               for i in range(10_000) for g in range(2)]
    with ctx_for(ws, monkeypatch) as ctx:
        with ctx.db.write() as s:
            rid = insert_run(s, labels={"x": 1}, metrics={"m": 1.0})
            write_samples(s, samples, run_id=rid, launch_id=None)
        with ctx.db.read() as s:
            cols = read_columns(s, run_id=rid)
    assert set(cols) == {"GPU-0", "GPU-1"}
    c = cols["GPU-1"]
    assert len(c[TIME_FIELD]) == 10_000  # spans two chunks of 8192
    assert c["gpu_power_w"][9999] == pytest.approx(100.0 + 9999 + 1)
    assert np.isnan(c["tensor_active"][1]) and c["tensor_active"][3] == 50.0
    assert c[TIME_FIELD][9000] == pytest.approx(1900.0, abs=0.001)
    assert columns(samples)["GPU-0"]["throttle"][1] == 4


# ------------------------------------------------------------------ diagnosis


def test_diagnosis_roofline_from_probe_counts_matches_the_h200() -> None:
    # numbers from the H200 proof (docs/gpu-proof/)
    small = diagnose({"flops": 2.147e9, "bytes": 1.347e8, "time_s": 3.44e-5, "tensor_active": 6.4, "dram_bw_util": 81,
                      "gpu_util": 98}, H200, {"dtype": "bf16"})
    assert small.bound == "memory" and small.basis == "roofline"
    assert small.numbers["ridge"] == pytest.approx(714e12 / 4280e9)
    assert small.numbers["intensity"] < small.numbers["ridge"] and "counters agree" in small.reason
    big = diagnose({"flops": 1.0995e12, "bytes": 4.03e8, "time_s": 1.62e-3, "tensor_active": 92, "dram_bw_util": 17},
                   H200, {"dtype": "bf16"})
    assert big.bound == "compute" and big.numbers["compute_frac"] > 0.9
    copy = diagnose({"flops": 0.0, "bytes": 8.59e9, "time_s": 2.0e-3}, H200)
    assert copy.bound == "memory" and copy.numbers["mem_frac"] == pytest.approx(1.0, abs=0.01)
    m = big.metrics()
    assert m["bound_compute"] == 1.0 and m["bound_memory"] == 0.0 and "roofline_intensity" in m


def test_util_high_but_tensor_low_is_not_compute_bound() -> None:
    d = diagnose({"gpu_util": 98, "gpu_power_frac": 0.9, "tensor_active": 6, "dram_bw_util": 30, "sm_active": 85}, {})
    assert d.bound != "compute" and d.basis == "telemetry-only"
    d = diagnose({"gpu_util": 98, "gpu_power_frac": 0.95, "tensor_active": 6, "dram_bw_util": 80}, {})
    assert d.bound == "memory"
    # util and power alone never decide
    d = diagnose({"gpu_util": 100, "gpu_power_frac": 0.99}, H200)
    assert d.bound is None and "cannot tell" in d.reason and d.metrics() == {}


def test_latency_bound_when_far_from_both_ceilings_and_serving_estimate() -> None:
    d = diagnose({"flops": 2e9, "bytes": 1e8, "time_s": 1e-3}, H200)  # 2 TFLOP/s, 100 GB/s
    # issue 43: far from both ceilings is not evidence of latency (a 1-ms kernel is no launch loop) …
    assert d.bound is None and "not told apart" in d.reason
    # … SMs that idle more than the busiest unit works are
    d = diagnose({"flops": 2e9, "bytes": 1e8, "time_s": 1e-3, "sm_active_steady": 30.0, "sm_active": 20.0}, H200)
    assert d.bound == "latency" and "the SMs idle 70% of the time" in d.reason
    d = diagnose({"flops": 2e12, "bytes": 1e8, "time_s": 1e-3}, H200)  # 2000 TFLOP/s: impossible
    assert "WARNING" in d.reason
    # a serving run: model facts in labels × tokens from the metrics
    labels = {"active_params": 32e9, "kv_bytes_per_token": 1.4e5, "concurrency": 8}
    met = {"output_throughput": 400.0, "input_throughput": 400.0, "duration_s": 60.0}
    d = diagnose(met, H200, labels)
    assert d.basis == "roofline-estimate" and d.bound in ("memory", "latency")
    assert d.numbers["intensity"] < d.numbers["ridge"]


# ------------------------------------------------------------------ nvidia-smi


def test_nvidia_smi_query_stream_recorded_on_the_h200() -> None:
    text = (PROOF / "smi_query.txt").read_text().splitlines()
    fields = text[0].split("--query-gpu=")[1].split()[0].split(",")
    rows = [smi.parse_query_line(l, fields) for l in text[1:] if l.strip()]
    rows = [r for r in rows if r]
    assert len(rows) >= 4
    r = rows[0]
    assert r["gpu"] == 0 and r["uuid"].startswith("GPU-f60328d5")
    assert r["gpu_power_w"] == pytest.approx(220.90) and r["gpu_power_avg_w"] == pytest.approx(221.20)
    assert r["gpu_power_limit_w"] == 700 and r["gpu_util"] == 100 and r["throttle"] == 0
    assert r["mem_used_gib"] == pytest.approx(10161 / 1024) and r["hbm_temp_c"] == 46
    assert r["t"] > 1.7e9
    assert smi.parse_query_line("garbage", fields) is None
    na = smi.parse_query_line("2026/11/29 18:31:14.130, 0, GPU-x, [N/A], 80.5, 700.00, 0, 0, 345, 3201, 30, [N/A], 0, 0x1",
                              fields)
    assert na["gpu_power_w"] == 80.5 and "hbm_temp_c" not in na and na["throttle"] == 1
    note = smi.missing_notice(fields, gpm=False)
    assert "energy" in note and "tensor_active" in note


def test_nvidia_smi_dmon_with_gpm_columns_recorded_on_the_h200() -> None:
    p = smi.DmonParser()
    got = []
    for line in (PROOF / "dmon.txt").read_text().split("# nvidia-smi dmon -s pucmt -c 2 --gpm-metrics")[1].splitlines()[1:7]:
        s = p.feed(line, now=5.0)
        if s:
            got.append(s)
    assert [g["gpu"] for g in got] == [0, 1, 0, 1]
    assert got[0]["gpu_power_avg_w"] == 124 and got[0]["mem_clock_mhz"] == 3201 and "tensor_active" not in got[0]
    assert "smutil" in p.cols and "mmaact" in p.cols
    p.feed("# gpu pwr smutil mmaact dram")
    s = p.feed("0 500 88 91 17")
    assert s["sm_active"] == 88 and s["tensor_active"] == 91 and s["dram_bw_util"] == 17


def test_help_query_gpu_lists_fields() -> None:
    ref = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi" / "nvidia-smi-help-query-gpu-580.159.txt"
    avail = smi.help_fields(ref.read_text())
    assert {"power.draw.instant", "clocks_event_reasons.active", "clocks_throttle_reasons.active"} <= avail
    assert smi.query_fields(avail) == smi.query_fields()


# ------------------------------------------------------------------ Prometheus


def test_prometheus_deltas_gauges_and_ttft_percentiles_from_the_test_server() -> None:
    with run_test_server("--ttft-ms", "30", "--itl-ms", "1", "--tokens", "4") as base:
        complete(base, n=2)
        a = prom.scrape(base + "/metrics")
        complete(base, "one two three", n=6)
        b = prom.scrape(base + "/metrics")
    m = prom.point_metrics([a, b])
    assert m["srv_num_requests_delta"] == 6
    assert m["srv_generation_tokens_delta"] == 24 and m["srv_prompt_tokens_delta"] == 18
    assert m["srv_ttft_ms_count"] == 6
    # The server's schedule puts TTFT at 30 ms, in the (25, 50] ms bucket; on a loaded machine a few
    # requests land in the next bucket, so the percentiles are checked against the bucket bounds
    # they must interpolate within, not against one bucket.
    assert 25.0 <= m["srv_ttft_ms_p50"] <= 100.0 and m["srv_ttft_ms_p50"] <= m["srv_ttft_ms_p99"] <= 250.0
    assert m["srv_ttft_ms_mean"] >= 29.0 and m["srv_ttft_ms_mean"] == pytest.approx(30.0, abs=40)
    assert m["srv_running_max"] >= 0 and "srv_queued_mean" in m and "srv_kv_usage_mean" in m


def test_histogram_quantile_interpolates_like_prometheus() -> None:
    b = {0.1: 10.0, 0.2: 20.0, 0.5: 20.0, math.inf: 20.0}
    assert prom.quantile(0.5, b) == pytest.approx(0.1)
    assert prom.quantile(0.75, b) == pytest.approx(0.15)
    assert prom.quantile(0.5, {0.1: 0.0, math.inf: 0.0}) is None
    assert prom.quantile(0.99, {0.1: 0.0, math.inf: 5.0}) == 0.1  # all above the top bucket → its bound
    vllm = ("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 3\n"
            "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n")
    p = prom.parse(vllm)
    m = prom.point_metrics([p, p])
    assert m["srv_running_mean"] == 3 and m["srv_kv_usage_max"] == 0.5
