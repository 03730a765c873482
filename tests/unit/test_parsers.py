"""Result parsers against the real peer-tool files in tests/fixtures/peers, and edge cases.

The values asserted for the generated files are the ones their README states (real AIPerf 0.13.0 and
GuideLLM 0.8.1 runs against a server with TTFT 50 ms, ITL 10 ms, 20 output tokens).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from optlog.errors import BadInput
from optlog.core.metrics import canonical
from optlog.runs.parsers import FORMATS, detect_format, parse_bytes, parse_result

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peers"
GEN = PEERS / "generated"

pytestmark = pytest.mark.skipif(not PEERS.is_dir(), reason=f"peer fixtures not found at {PEERS}")


def one(path: Path, parser: str | None = None) -> object:
    rs = parse_result([path], parser)
    assert len(rs) == 1, rs
    return rs[0]


# ------------------------------------------------------------------------------ SGLang bench_serving

SGLANG_NEW = (
    '{"tag": null, "backend": "sglang-oai", "dataset_name": "random", "request_rate": Infinity, '
    '"max_concurrency": 256, "sharegpt_output_len": null, "random_input_len": 1024, "random_output_len": 512, '
    '"random_range_ratio": 0.0, "server_info": {"model_path": "/models/GLM-5-NVFP4", "tp_size": 8, "pp_size": 1, '
    '"ep_size": 1, "dp_size": 1, "version": "0.5.9", "api_key": "sk-should-not-matter", '
    '"internal_states": [{"avg_spec_accept_length": 2.5}]}, '
    '"duration": 50.0, "completed": 1024, "total_input_tokens": 1048576, "total_input_text_tokens": 1048576, '
    '"total_input_vision_tokens": 0, "total_output_tokens": 524288, "total_output_tokens_retokenized": 524000, '
    '"request_throughput": 20.48, "input_throughput": 20971.52, "output_throughput": 10485.76, '
    '"total_throughput": 31457.28, "mean_e2e_latency_ms": 12000.0, "median_e2e_latency_ms": 11900.0, '
    '"std_e2e_latency_ms": 300.0, "p90_e2e_latency_ms": 12400.0, "p95_e2e_latency_ms": 12600.0, '
    '"p99_e2e_latency_ms": 13000.0, "mean_ttft_ms": 800.0, "median_ttft_ms": 750.0, "std_ttft_ms": 90.0, '
    '"p90_ttft_ms": 950.0, "p95_ttft_ms": 1000.0, "p99_ttft_ms": 1200.0, "mean_tpot_ms": 22.0, '
    '"median_tpot_ms": 21.5, "std_tpot_ms": 1.0, "p90_tpot_ms": 23.0, "p95_tpot_ms": 24.0, "p99_tpot_ms": 26.0, '
    '"mean_itl_ms": 22.0, "median_itl_ms": 20.0, "std_itl_ms": 5.0, "p90_itl_ms": 25.0, "p95_itl_ms": 30.0, '
    '"p99_itl_ms": 60.0, "concurrency": 245.7, "accept_length": 2.5, "max_output_tokens_per_s": 12000.0, '
    '"max_concurrent_requests": 256}'
)
SGLANG_OLD = (
    '{"backend": "sglang", "dataset_name": "random", "request_rate": Infinity, "max_concurrency": 64, '
    '"sharegpt_output_len": null, "random_input_len": 1024, "random_output_len": 512, "random_range_ratio": 0.0, '
    '"duration": 40.0, "completed": 256, "total_input_tokens": 262144, "total_output_tokens": 131072, '
    '"total_output_tokens_retokenized": 131000, "request_throughput": 6.4, "input_throughput": 6553.6, '
    '"output_throughput": 3276.8, "mean_e2e_latency_ms": 9000.0, "median_e2e_latency_ms": 8900.0, '
    '"std_e2e_latency_ms": 100.0, "p99_e2e_latency_ms": 9500.0, "mean_ttft_ms": 300.0, "median_ttft_ms": 280.0, '
    '"std_ttft_ms": 30.0, "p99_ttft_ms": 400.0, "mean_tpot_ms": 17.0, "median_tpot_ms": 16.9, "std_tpot_ms": 0.5, '
    '"p99_tpot_ms": 18.5, "mean_itl_ms": 17.0, "median_itl_ms": 16.0, "std_itl_ms": 4.0, "p95_itl_ms": 20.0, '
    '"p99_itl_ms": 40.0, "concurrency": 63.2, "accept_length": null}'
)
SGLANG_SECOND_WRITER = (
    '{"backend": "sglang", "dataset_name": "sharegpt", "request_rate": "trace", "max_concurrency": null, '
    '"sharegpt_output_len": 256, "random_input_len": 1024, "random_output_len": 1024, "random_range_ratio": 0.0, '
    '"duration": 10.0, "completed": 100, "total_input": 20000, "total_output": 10000, '
    '"total_output_retokenized": 9990, "request_throughput": 10.0, "input_throughput": 2000.0, '
    '"output_throughput": 1000.0, "output_throughput_retokenized": 999.0, "total_throughput": 3000.0, '
    '"total_throughput_retokenized": 2999.0, "mean_ttft_ms": 50.0, "median_ttft_ms": 49.0, "std_ttft_ms": 2.0, '
    '"p99_ttft_ms": 60.0, "mean_tpot_ms": 10.0, "median_tpot_ms": 10.0, "std_tpot_ms": 0.1, "p99_tpot_ms": 11.0, '
    '"mean_itl_ms": 10.0, "median_itl_ms": 10.0, "std_itl_ms": 1.0, "p95_itl_ms": 12.0, "p99_itl_ms": 14.0, '
    '"max_itl_ms": 30.0, "mean_e2e_latency_ms": 2600.0, "median_e2e_latency_ms": 2550.0, '
    '"std_e2e_latency_ms": 100.0, "p99_e2e_latency_ms": 2900.0, "concurrency": 26.0, "accept_length": NaN}'
)


def test_sglang_new_old_and_second_writer_keys(tmp_path: Path) -> None:
    f = tmp_path / "sglang_0101_1024_random.jsonl"
    f.write_text(SGLANG_NEW + "\n" + SGLANG_OLD + "\n\n" + SGLANG_SECOND_WRITER + "\n")
    assert detect_format(f) == "sglang"
    new, old, second = parse_result([f])
    assert [r.source for r in (new, old, second)] == [f"{f}:1", f"{f}:2", f"{f}:4"]

    # new keys: total_throughput -> total_token_throughput; measured concurrency -> mean_inflight
    assert new.metrics["total_token_throughput"] == 31457.28
    assert new.metrics["mean_inflight"] == 245.7
    assert new.metrics["duration_s"] == 50.0
    assert new.metrics["p95_ttft_ms"] == 1000.0 and new.metrics["p90_itl_ms"] == 25.0
    # the tool's own keys are kept
    assert new.metrics["raw.total_throughput"] == 31457.28
    assert new.metrics["raw.concurrency"] == 245.7
    assert new.metrics["raw.std_ttft_ms"] == 90.0
    assert new.metrics["raw.max_concurrent_requests"] == 256
    assert "raw.completed" not in new.metrics  # canonical already: stored once
    # labels: max_concurrency is the configured cap; Infinity request rate
    assert new.labels["concurrency"] == 256
    assert new.labels["request_rate"] == "inf"
    assert new.labels["input_len"] == 1024 and new.labels["output_len"] == 512
    assert new.labels["dataset"] == "random"
    assert new.labels["model"] == "/models/GLM-5-NVFP4"
    assert new.labels["tp"] == 8 and new.labels["pp"] == 1
    assert new.labels["sglang_version"] == "0.5.9"
    assert new.labels["tool"] == "sglang"
    assert new.raw["server_info"]["tp_size"] == 8

    # old keys: no total_throughput -> (input + output tokens) / duration
    assert old.metrics["total_token_throughput"] == pytest.approx((262144 + 131072) / 40.0)
    assert "raw.total_throughput" not in old.metrics
    assert "p90_ttft_ms" not in old.metrics and old.metrics["p95_itl_ms"] == 20.0
    assert old.metrics["mean_inflight"] == 63.2
    assert old.labels["concurrency"] == 64

    # second writer: total_input/total_output, "trace" request rate, no cap, sharegpt output len, NaN
    assert second.metrics["total_token_throughput"] == 3000.0
    assert second.metrics["raw.total_input"] == 20000
    assert second.labels["request_rate"] == "trace"
    assert "concurrency" not in second.labels
    assert second.labels["output_len"] == 256 and "input_len" not in second.labels
    assert "accept_length" not in {k[4:] for k in second.metrics}  # NaN is not a number
    for r in (new, old, second):
        assert all(math.isfinite(v) for v in r.metrics.values())
        json.dumps(r.raw, allow_nan=False)  # raw is strict JSON (PostgreSQL's JSON rejects Infinity)


def test_sglang_old_file_total_throughput_computed_from_tokens(tmp_path: Path) -> None:
    f = tmp_path / "old.jsonl"
    f.write_text(SGLANG_OLD + "\n")
    (r,) = parse_result([f], "sglang")
    assert r.metrics["total_token_throughput"] == pytest.approx(9830.4)


def test_sglang_line_without_results_names_parser_line_and_key(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(SGLANG_OLD + "\n" + SGLANG_OLD + "\n" + '{"backend": "sglang", "duration": 3}\n')
    with pytest.raises(BadInput) as e:
        parse_result([f], "sglang")
    assert "sglang: line 3: no output_throughput or completed key" in str(e.value)
    assert e.value.file == str(f) and e.value.line == 3


def test_sglang_broken_json_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(SGLANG_OLD + "\n{\"completed\": 3,\n")
    with pytest.raises(BadInput) as e:
        parse_result([f], "sglang")
    assert "sglang: line 2: not JSON" in str(e.value)


def test_optlog_format_is_sglang_keys_with_its_own_tool_name(tmp_path: Path) -> None:
    line = json.loads(SGLANG_OLD)
    line.update(tool="optlog", optlog_version="0.1.0", failed=3, request_rate="inf")
    f = tmp_path / "bench.jsonl"
    f.write_text(json.dumps(line) + "\n")
    assert detect_format(f) == "optlog"
    (r,) = parse_result([f])
    assert r.tool == "optlog" and r.labels["tool"] == "optlog" and r.labels["tool_version"] == "0.1.0"
    assert r.metrics["failed"] == 3
    assert r.metrics["mean_inflight"] == 63.2
    assert r.labels["concurrency"] == 64 and r.labels["request_rate"] == "inf"
    # the same file read as sglang gives the same numbers
    (s,) = parse_result([f], "sglang")
    assert {k: v for k, v in s.metrics.items()} == r.metrics


# ------------------------------------------------------------------------------ bench_one_batch_server

def test_sglang_one_batch_server_real_file() -> None:
    f = PEERS / "sglang" / "bench_one_batch_server.result_te_tp4.jsonl"
    assert detect_format(f) == "sglang-one-batch"
    rs = parse_result([f])
    assert len(rs) == 3
    assert [r.labels["batch_size"] for r in rs] == [1, 16, 64]
    assert [r.labels["concurrency"] for r in rs] == [1, 16, 64]
    r = rs[2]
    assert r.labels["input_len"] == 1024 and r.labels["output_len"] == 8
    assert r.metrics["output_throughput"] == 612.36
    assert r.metrics["total_token_throughput"] == 78994.36
    assert r.metrics["duration_s"] == 0.8361
    assert r.metrics["raw.overall_throughput"] == 78994.36
    assert r.raw["run_name"] == "default"


def test_sglang_one_batch_missing_batch_size(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text('{"run_name": "x", "latency": 1.0}\n')
    with pytest.raises(BadInput, match=r"sglang-one-batch: line 1: no batch_size key"):
        parse_result([f], "sglang-one-batch")


# ------------------------------------------------------------------------------ vLLM

VLLM_NEW = {
    "date": "20260101-120000", "endpoint_type": "openai", "backend": "openai", "label": None,
    "model_id": "zai-org/GLM-5", "tokenizer_id": "zai-org/GLM-5", "num_prompts": 5, "request_rate": "inf",
    "burstiness": 1.0, "max_concurrency": 1, "duration": 20.0, "completed": 5, "failed": 0,
    "total_input_tokens": 150000, "total_output_tokens": 2500, "request_throughput": 0.25,
    "request_goodput": None, "output_throughput": 125.0, "total_token_throughput": 7625.0,
    "max_output_tokens_per_s": 30.0, "max_concurrent_requests": 1, "rtfx": 0.0,
    "latencies": [4.0, 4.0, 4.0, 4.0, 4.0], "mean_ttft_ms": 1500.0, "median_ttft_ms": 1490.0,
    "std_ttft_ms": 10.0, "p99_ttft_ms": 1520.0, "mean_tpot_ms": 48.0, "median_tpot_ms": 48.0, "std_tpot_ms": 0.2,
    "p99_tpot_ms": 48.5, "mean_itl_ms": 48.0, "median_itl_ms": 47.9, "std_itl_ms": 1.0, "p99_itl_ms": 52.0,
    "p99.9_itl_ms": 60.0, "mean_e2el_ms": 4000.0, "median_e2el_ms": 3990.0, "std_e2el_ms": 20.0, "p99_e2el_ms": 4050.0,
}
VLLM_OLD = {
    "date": "20250301-101010", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B", "tokenizer_id": "x",
    "best_of": 1, "num_prompts": 1000, "request_rate": 16.0, "burstiness": 1.0, "max_concurrency": None,
    "duration": 70.0, "completed": 1000, "total_input_tokens": 200000, "total_output_tokens": 180000,
    "request_throughput": 14.2, "request_goodput:": 12.5, "output_throughput": 2571.4,
    "total_token_throughput": 5428.5, "mean_ttft_ms": 40.0, "median_ttft_ms": 38.0, "std_ttft_ms": 5.0,
    "p99_ttft_ms": 80.0, "mean_tpot_ms": 12.0, "median_tpot_ms": 12.0, "std_tpot_ms": 1.0, "p99_tpot_ms": 15.0,
    "mean_itl_ms": 12.0, "median_itl_ms": 11.0, "std_itl_ms": 3.0, "p99_itl_ms": 30.0,
}


def test_vllm_save_result_new_and_old(tmp_path: Path) -> None:
    new = tmp_path / "openai-infqps-concurrency1-GLM-5-20260101-120000.json"
    new.write_text(json.dumps(VLLM_NEW, indent=2))  # --save-result: one pretty object
    old = tmp_path / "append.jsonl"
    old.write_text(json.dumps(VLLM_OLD) + "\n" + json.dumps(VLLM_OLD) + "\n")  # --append-result
    assert detect_format(new) == "vllm" and detect_format(old) == "vllm"
    (n,) = parse_result([new])
    assert n.labels["request_rate"] == "inf" and n.labels["concurrency"] == 1
    assert n.labels["model"] == "zai-org/GLM-5" and n.labels["num_prompts"] == 5
    assert n.metrics["total_token_throughput"] == 7625.0
    assert n.metrics["mean_e2e_latency_ms"] == 4000.0 and n.metrics["p99_e2e_latency_ms"] == 4050.0
    assert n.metrics["raw.mean_e2el_ms"] == 4000.0
    assert n.metrics["raw.p99.9_itl_ms"] == 60.0 and "p99.9_itl_ms" not in n.metrics
    assert n.metrics["input_throughput"] == pytest.approx(150000 / 20.0)
    assert n.metrics["mean_inflight"] == pytest.approx(1.0)  # sum(latencies) / duration
    assert n.metrics["failed"] == 0 and n.metrics["completed"] == 5
    rs = parse_result([old])
    assert len(rs) == 2 and rs[1].source == f"{old}:2"
    o = rs[0]
    assert o.metrics["raw.request_goodput"] == 12.5  # the old `request_goodput:` key
    assert o.labels["request_rate"] == 16 and "concurrency" not in o.labels
    assert "mean_inflight" not in o.metrics


def test_vllm_latency_statistics_only_are_read(tmp_path: Path) -> None:
    """A result holding only TTFT/TPOT/ITL statistics (no duration, counts or throughput) is read."""
    f = tmp_path / "v.json"
    f.write_text(json.dumps({k: v for k, v in VLLM_NEW.items() if k.endswith("_ms") and "_e2el_" not in k}))
    (r,) = parse_result([f], "vllm")
    assert r.metrics["mean_ttft_ms"] == 1500.0 and r.metrics["p99_itl_ms"] == 52.0
    assert "duration_s" not in r.metrics and r.status == "succeeded"
    f.write_text(json.dumps({"date": "x", "model_id": "m"}))
    with pytest.raises(BadInput, match="vllm: line 1: no output_throughput, completed or TTFT"):
        parse_result([f], "vllm")


def test_vllm_metadata_and_sweep_parameters_are_labels(tmp_path: Path) -> None:
    """`--metadata` keys (text) and `vllm bench sweep` parameters are labels in optlog's vocabulary."""
    a = {**VLLM_OLD, "framework": "vllm", "gpu": "4xL40S", "input_len": "1000"}
    b = {**VLLM_OLD, "framework": "sgl", "gpu": "4xL40S", "input_len": "1000", "mean_ttft_ms": 766.0}
    f = tmp_path / "append.jsonl"
    f.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    ra, rb = parse_result([f])
    assert (ra.labels["framework"], rb.labels["framework"]) == ("vllm", "sgl")
    assert ra.labels["gpu"] == "4xL40S" and ra.labels["input_len"] == 1000
    assert not any(k.startswith("raw.framework") for k in ra.metrics)
    run0 = {**VLLM_NEW, "run_number": 0, "max_num_seqs": 32, "max_concurrency": 8, "random_input_len": 512}
    g = tmp_path / "run=0.json"
    g.write_text(json.dumps(run0, indent=4))
    (r,) = parse_result([g])
    assert r.labels["max_num_seqs"] == 32 and r.labels["repeat"] == 0
    assert r.labels["concurrency"] == 8 and r.labels["input_len"] == 512
    assert not any(k in r.metrics for k in ("raw.max_num_seqs", "raw.run_number", "raw.random_input_len"))
    assert r.metrics["raw.max_concurrent_requests"] == 1  # vLLM's own figure stays a metric


def test_zero_completed_is_a_failed_run_without_placeholders(tmp_path: Path) -> None:
    zeros = {**VLLM_NEW, "completed": 0, "failed": 8, "num_prompts": 8, "request_throughput": 0.0,
             "output_throughput": 0.0, "total_token_throughput": 0.0, "latencies": [],
             **{k: 0.0 for k in VLLM_NEW if k.endswith("_ms")}}
    f = tmp_path / "v.json"
    f.write_text(json.dumps(zeros))
    (r,) = parse_result([f])
    assert r.status == "failed" and r.notes
    assert r.metrics["completed"] == 0 and r.metrics["failed"] == 8
    assert not [k for k in r.metrics if "ttft" in k or "tpot" in k or "itl" in k or "throughput" in k]


def test_vllm_failures_implied_by_counts(tmp_path: Path) -> None:
    f = tmp_path / "v.json"
    f.write_text(json.dumps({**VLLM_OLD, "num_prompts": 2000, "completed": 1015}))
    (r,) = parse_result([f])
    assert r.metrics["failed"] == 985 and "num_prompts" in r.notes[0]


def test_sweep_results_repeated_in_summary_are_one_measurement(tmp_path: Path) -> None:
    from optlog.runs.parsers import unique

    runs = [{**VLLM_NEW, "run_number": n, "max_num_seqs": 32, "duration": 20.0 + n} for n in (0, 1)]
    for n, o in enumerate(runs):
        (tmp_path / f"run={n}.json").write_text(json.dumps(o, indent=4))
    (tmp_path / "summary.json").write_text(json.dumps(runs, indent=4))
    rs = parse_result(sorted(tmp_path.glob("*.json")))
    assert len(rs) == 4
    kept, said = unique(rs)
    assert len(kept) == 2 and len(said) == 2 and "same measurement" in said[0]
    assert sorted(r.labels["repeat"] for r in kept) == [0, 1]


# the two real AIPerf 0.13.0 runs with --goodput (peers/generated/README.md): the file's limits
# (input_config.slos, ms) under optlog's names, and what the file says of its good requests
GOODPUT = [
    ("aiperf-goodput-ttft300-e2e250", {"slo_ttft_ms": 300, "slo_e2e_latency_ms": 250}, 32),
    ("aiperf-goodput-e2e200-itl12", {"slo_e2e_latency_ms": 200, "slo_tpot_ms": 12}, 13),
]


@pytest.mark.parametrize("name, slos, good", GOODPUT)
def test_aiperf_goodput_its_good_requests_and_its_limits(name: str, slos: dict[str, float], good: int) -> None:
    d = json.loads((GEN / f"{name}.json").read_text())
    r = one(GEN / f"{name}.json")
    m = r.metrics
    # the file's own figures, stored under the canonical names
    assert d["goodput"]["unit"] == "requests/sec" and m["goodput"] == d["goodput"]["avg"]
    assert m["good_requests"] == d["good_request_count"]["avg"] == good
    assert m["good_request_frac"] == d["good_request_fraction"]["avg"]
    # ... and recomputed from the file's other figures: some requests met the limits, some did not
    assert 0 < m["good_requests"] < m["completed"] == 64
    assert m["good_request_frac"] == pytest.approx(m["good_requests"] / m["completed"], rel=1e-12)
    assert m["goodput"] == pytest.approx(m["request_throughput"] * m["good_request_frac"], rel=1e-9)
    assert m["goodput"] < m["request_throughput"]
    # the limits are labels (what was asked of a request), so runs held to other limits never pool
    assert {k: v for k, v in r.labels.items() if k.startswith("slo_")} == slos
    assert {k.removeprefix("slo_") for k in slos} <= {"ttft_ms", "e2e_latency_ms", "tpot_ms"}
    for tag, v in d["input_config"]["slos"].items():
        assert d[tag]["unit"] == "ms" and v in slos.values()
    # the CSV prints the same goodput (2 places) but not the limits: kept as the tool's own key only
    c = one(GEN / f"{name}.csv")
    assert c.metrics["raw.goodput"] == pytest.approx(m["goodput"], abs=0.005)
    assert c.metrics["raw.good_request_count"] == good
    assert "goodput" not in c.metrics and not any(k.startswith("slo_") for k in c.labels)


def test_a_goodput_without_its_limits_stays_raw_and_says_so(tmp_path: Path) -> None:
    d = json.loads((GEN / "aiperf-goodput-ttft300-e2e250.json").read_text())
    del d["input_config"]["slos"]
    f = tmp_path / "profile_export_aiperf.json"
    f.write_text(json.dumps(d))
    r = one(f)
    assert r.metrics["raw.goodput"] == d["goodput"]["avg"] and "goodput" not in r.metrics
    assert "good_requests" not in r.metrics and not any(k.startswith("slo_") for k in r.labels)
    assert any("goodput kept as raw.goodput only" in n for n in r.notes), r.notes
    # genai-perf names it request_goodput and keeps its --goodput limits under input_config.goodput
    g = json.loads((PEERS.parent / "real" / "genai-perf" / "0.0.12-concurrency1" / "profile_export_genai_perf.json").read_text())
    g["request_goodput"] = {"unit": "requests/sec", "avg": 1.5}
    g["input_config"]["goodput"] = {"time_to_first_token": 100, "output_token_throughput_per_user": 20}
    f = tmp_path / "profile_export_genai_perf.json"
    f.write_text(json.dumps(g))
    r = one(f)
    assert r.tool == "genai-perf" and r.metrics["goodput"] == 1.5
    assert r.labels["slo_ttft_ms"] == 100 and r.labels["slo_output_token_throughput_per_user"] == 20


def test_goodput_is_canonical_with_its_unit() -> None:
    from optlog.core.units import higher_is_better, unit

    for k in ("goodput", "good_requests", "good_request_frac"):
        assert k in canonical()
    assert unit("goodput") == "req/s" and unit("good_requests") == "requests"
    assert unit("good_request_frac") == "fraction" and unit("slo_ttft_ms") == "ms"
    assert higher_is_better("goodput") and higher_is_better("good_request_frac")
    # a file without --goodput says nothing of goodput
    r = one(GEN / "aiperf-A-c1.json")
    assert not {"goodput", "good_requests", "good_request_frac"} & r.metrics.keys()
    assert not any(k.startswith("slo_") for k in r.labels)


def test_genai_perf_command_line_input_config(tmp_path: Path) -> None:
    d = json.loads((GEN / "aiperf-A-c1.json").read_text())
    for k in ("aiperf_version", "schema_version"):
        d.pop(k, None)
    d["input_config"] = {"model": ["gpt2_vllm"], "service_kind": "openai", "endpoint_type": "chat",
                         "concurrency": 4, "request_rate": None, "synthetic_input_tokens_mean": 550,
                         "output_tokens_mean": 150, "num_prompts": 100, "subcommand": "profile"}
    f = tmp_path / "profile_export_genai_perf.json"
    f.write_text(json.dumps(d))
    for fmt in (None, "genai-perf", "aiperf"):
        (r,) = parse_result([f], fmt)
        assert r.tool == "genai-perf" and r.labels["tool"] == "genai-perf"
        assert r.labels["concurrency"] == 4 and r.labels["model"] == "gpt2_vllm"
        assert r.labels["input_len"] == 550 and r.labels["output_len"] == 150


def test_aiperf_dataset_is_its_name_not_its_type(tmp_path: Path) -> None:
    d = json.loads((GEN / "aiperf-A-c1.json").read_text())
    # AIPerf 0.10's own layout for --public-dataset sharegpt, as its real files have it
    # (tests/fixtures/real/aiperf/aiperf-0.10.0-chatbot-c2.cut.json)
    d["input_config"]["datasets"] = [{"name": "main", "type": "public", "dataset": "sharegpt", "entries": 96}]
    f = tmp_path / "profile_export_aiperf.json"
    f.write_text(json.dumps(d))
    assert one(f).labels["dataset"] == "sharegpt"
    # the older `input_config.input` layout (AIPerf ≤ 0.3): `--public-dataset sharegpt`
    d["input_config"] = {"endpoint": {"model_names": ["m"]}, "loadgen": {"concurrency": 4},
                         "input": {"public_dataset": "sharegpt"}}
    f.write_text(json.dumps(d))
    assert one(f).labels["dataset"] == "sharegpt"


def test_guidellm_rates_and_inflight_that_contradict_the_file(tmp_path: Path) -> None:
    d = json.loads((GEN / "guidellm-A-c1.json").read_text())
    b = d["benchmarks"][0]
    m = b["metrics"]
    m["prompt_tokens_per_second"]["successful"]["mean"] = 1411168.0
    tin = m["prompt_token_count"]["successful"]["total_sum"]
    f = tmp_path / "benchmarks.json"
    f.write_text(json.dumps(d))
    r = one(f)
    assert r.metrics["input_throughput"] == pytest.approx(tin / b["duration"])
    assert any("input_throughput 1,411,168 tok/s contradicts" in n for n in r.notes), r.notes
    assert r.metrics["mean_inflight"] == pytest.approx(m["request_concurrency"]["successful"]["mean"])
    assert r.metrics["mean_inflight"] <= 1.0


# ------------------------------------------------------------------------------ AIPerf / genai-perf

@pytest.mark.parametrize("name, ttft_p50, ttft_mean, tpot_p50, tpot_mean, rps, otps, conc", [
    ("aiperf-A-c1", 54.29, 54.34, 10.05, 10.04, 3.99, 79.9, 1),
    ("aiperf-A-c64", 70.64, 72.75, 10.28, 10.32, 199.56, 3991.1, 64),
    ("aiperf-A-c1-clienttok", 55.77, 55.93, 4.77, 4.77, 3.96, 162.2, 1),
    ("aiperf-A-c64-clienttok", 77.79, 77.43, 4.94, 4.90, 199.49, 8179.0, 64),
])
def test_aiperf_generated_json_and_csv(name: str, ttft_p50: float, ttft_mean: float, tpot_p50: float,
                                       tpot_mean: float, rps: float, otps: float, conc: int) -> None:
    j = one(GEN / f"{name}.json")
    c = one(GEN / f"{name}.csv")
    for r in (j, c):
        assert r.tool == "aiperf"
        assert r.metrics["median_ttft_ms"] == pytest.approx(ttft_p50, abs=0.006)
        assert r.metrics["mean_ttft_ms"] == pytest.approx(ttft_mean, abs=0.006)
        # AIPerf's inter_token_latency is per request (latency - ttft)/(osl - 1): SGLang's TPOT
        assert r.metrics["median_tpot_ms"] == pytest.approx(tpot_p50, abs=0.006)
        assert r.metrics["mean_tpot_ms"] == pytest.approx(tpot_mean, abs=0.006)
        assert r.metrics["request_throughput"] == pytest.approx(rps, abs=0.006)
        assert r.metrics["output_throughput"] == pytest.approx(otps, rel=1e-3)
        assert r.metrics["completed"] == 128
        # ITL is the gap between streamed chunks: the server's 10 ms, whatever the client tokenizer says
        assert 9.5 < r.metrics["mean_itl_ms"] < 10.6
        for k in ("total_token_throughput", "input_throughput", "duration_s", "p99_ttft_ms", "p90_e2e_latency_ms",
                  "mean_inflight"):
            assert k in r.metrics, k
    assert j.labels["concurrency"] == conc
    assert j.labels == {"concurrency": conc, "num_prompts": 128, "model": "m", "input_len": 32, "output_len": 20,
                        "dataset": "synthetic", "endpoint": "completions", "tool": "aiperf", "tool_version": "0.13.0"}
    assert j.metrics["failed"] == 0
    assert j.metrics["raw.time_to_first_token.p50"] == pytest.approx(j.metrics["median_ttft_ms"])
    assert j.metrics["raw.usage_completion_tokens"] == 20
    assert j.raw["input_config"]["phases"][0]["concurrency"] == conc
    # the JSON's duration and the CSV's (rounded to 2 places) agree
    assert c.metrics["duration_s"] == pytest.approx(j.metrics["duration_s"], abs=0.006)


def test_aiperf_080_real_release_output() -> None:
    f = PEERS / "aiperf" / "profile_export_aiperf.aiperf-0.8.0-baseline-chat.json"
    assert detect_format(f) == "aiperf"
    r = one(f)
    assert r.labels["concurrency"] == 4 and r.labels["model"] == "mock-model" and r.labels["tool_version"] == "0.8.0"
    assert r.labels["num_prompts"] == 64 and r.labels["input_len"] == 550
    assert r.metrics["completed"] == 64
    assert r.metrics["request_throughput"] == pytest.approx(1854.93, abs=0.01)
    assert r.metrics["total_token_throughput"] == pytest.approx(2042654.4, rel=1e-6)  # given by the file
    assert r.metrics["duration_s"] == pytest.approx(0.034502655)
    assert "mean_ttft_ms" not in r.metrics  # non-streaming run: no TTFT in the file
    assert r.metrics["failed"] == 0  # empty error_summary


def test_aiperf_synthetic_fixture_runtime_concurrency() -> None:
    r = one(PEERS / "aiperf" / "profile_export_aiperf.synthetic-fixture-c128.json")
    assert r.labels["concurrency"] == 128 and r.labels["model"] == "llama3-8b"
    assert r.metrics["median_ttft_ms"] == 142.5 and r.metrics["mean_itl_ms"] == 25.0
    assert r.raw["status"] == "Succeeded"


def test_aiperf_prerelease_csv_without_p10() -> None:
    r = one(PEERS / "aiperf" / "profile_export_aiperf.example-run1.csv")
    assert r.metrics["completed"] == 89 and r.metrics["failed"] == 11
    assert r.metrics["request_throughput"] == 9.55 and r.metrics["output_throughput"] == 2320.72
    assert r.metrics["duration_s"] == 9.32
    assert r.metrics["total_token_throughput"] == pytest.approx((48950 + 21624) / 9.32)
    assert r.metrics["median_ttft_ms"] == 2369.32 and r.metrics["p99_ttft_ms"] == 3833.39
    assert r.metrics["median_itl_ms"] == 22.67  # inter chunk latency
    assert r.metrics["median_tpot_ms"] == 27.62
    assert r.metrics["raw.time_to_second_token.p99"] == 142.92


def test_genai_perf_json(tmp_path: Path) -> None:
    d = {
        "request_throughput": {"unit": "requests/sec", "avg": 12.5},
        "request_latency": {"unit": "ms", "avg": 800.0, "p50": 790.0, "p90": 850.0, "p95": 870.0, "p99": 900.0,
                            "min": 700.0, "max": 950.0, "std": 30.0},
        "time_to_first_token": {"unit": "ms", "avg": 100.0, "p50": 95.0, "p99": 150.0},
        "inter_token_latency": {"unit": "ms", "avg": 7.0, "p50": 6.9, "p99": 9.0},
        "output_token_throughput": {"unit": "tokens/sec", "avg": 1500.0},
        "output_sequence_length": {"unit": "tokens", "avg": 120.0},
        "request_count": {"unit": "count", "avg": 100},
        "input_config": {"model_names": ["llama"], "endpoint": {"type": "chat", "streaming": True},
                         "perf_analyzer": {"stimulus": {"concurrency": 16}},
                         "input": {"synthetic_tokens": {"mean": 550}, "output_tokens": {"mean": 120}}},
    }
    f = tmp_path / "profile_export_genai_perf.json"
    f.write_text(json.dumps(d))
    assert detect_format(f) == "genai-perf"
    r = one(f)
    assert r.tool == "genai-perf" and r.labels["tool"] == "genai-perf"
    assert r.labels["concurrency"] == 16 and r.labels["model"] == "llama"
    assert r.labels["input_len"] == 550 and r.labels["output_len"] == 120
    assert r.metrics["median_ttft_ms"] == 95.0 and r.metrics["mean_itl_ms"] == 7.0 and r.metrics["mean_tpot_ms"] == 7.0
    assert r.metrics["p90_e2e_latency_ms"] == 850.0 and r.metrics["completed"] == 100
    assert r.metrics["mean_inflight"] == pytest.approx(0.8 * 12.5)  # Little's law: latency x throughput


def test_aiperf_wrong_file() -> None:
    with pytest.raises(BadInput) as e:
        parse_result([GEN / "guidellm-A-c1.json"], "aiperf")
    assert "aiperf: no request_throughput, output_token_throughput or request_count metric" in str(e.value)
    assert e.value.file.endswith("guidellm-A-c1.json")


def test_aiperf_seconds_are_converted(tmp_path: Path) -> None:
    d = {"aiperf_version": "9", "request_throughput": {"unit": "requests/sec", "avg": 2.0},
         "time_to_first_token": {"unit": "sec", "avg": 0.05, "p50": 0.04},
         "benchmark_duration": {"unit": "ms", "avg": 5000.0}}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(d))
    r = one(f)
    assert r.metrics["mean_ttft_ms"] == pytest.approx(50.0) and r.metrics["median_ttft_ms"] == pytest.approx(40.0)
    assert r.metrics["duration_s"] == pytest.approx(5.0)


# ------------------------------------------------------------------------------ GuideLLM

@pytest.mark.parametrize("name, ttft_p50, ttft_mean, itl_p50, itl_mean, rps, otps, conc", [
    ("guidellm-A-c1", 52.12, 52.53, 10.04, 10.04, 4.03, 80.56, 1),
    ("guidellm-A-c64", 80.01, 81.60, 9.61, 9.62, 161.16, 3223.28, 64),
])
def test_guidellm_current_schema(name: str, ttft_p50: float, ttft_mean: float, itl_p50: float, itl_mean: float,
                                 rps: float, otps: float, conc: int) -> None:
    f = GEN / f"{name}.json"
    assert detect_format(f) == "guidellm"
    r = one(f)
    assert r.source == f"{f}#benchmark 1"
    assert r.metrics["median_ttft_ms"] == pytest.approx(ttft_p50, abs=0.006)
    assert r.metrics["mean_ttft_ms"] == pytest.approx(ttft_mean, abs=0.006)
    assert r.metrics["median_itl_ms"] == pytest.approx(itl_p50, abs=0.006)
    assert r.metrics["mean_itl_ms"] == pytest.approx(itl_mean, abs=0.006)
    assert r.metrics["mean_tpot_ms"] == r.metrics["mean_itl_ms"]  # GuideLLM's ITL is SGLang's TPOT definition
    assert r.metrics["request_throughput"] == pytest.approx(rps, abs=0.006)  # .mean, not the time-series median
    assert r.metrics["output_throughput"] == pytest.approx(otps, abs=0.006)
    assert r.metrics["completed"] == 128 and r.metrics["failed"] == 0
    assert r.metrics["mean_e2e_latency_ms"] == pytest.approx(r.metrics["raw.request_latency"] * 1000)
    assert 200 < r.metrics["median_e2e_latency_ms"] < 350
    assert r.metrics["total_token_throughput"] == pytest.approx(
        r.metrics["input_throughput"] + r.metrics["output_throughput"], rel=1e-6)
    assert r.labels == {"strategy": "concurrent", "concurrency": conc, "model": "m", "input_len": 32, "output_len": 20,
                        "dataset": "synthetic_text", "num_prompts": 128, "tool": "guidellm", "tool_version": "0.8.1"}
    assert "requests" not in r.raw  # per-request records are not kept
    assert r.raw["schema"] == "v2"
    assert len(json.dumps(r.raw)) < 60_000


def test_guidellm_legacy_schema() -> None:
    f = PEERS / "guidellm" / "benchmarks_stripped.v0.3-legacy.json"
    assert detect_format(f) == "guidellm"
    r = one(f)
    assert r.raw["schema"] == "legacy"
    assert r.labels["strategy"] == "synchronous" and r.labels["concurrency"] == 1
    assert r.labels["model"] == "example_model"
    assert r.labels["input_len"] == 256 and r.labels["output_len"] == 128
    assert r.metrics["completed"] == 46 and r.metrics["failed"] == 0 and r.metrics["raw.incomplete"] == 1
    assert r.metrics["duration_s"] == pytest.approx(29.9972, abs=1e-3)
    assert r.metrics["request_throughput"] == pytest.approx(1.5482, abs=1e-3)
    assert r.metrics["output_throughput"] == pytest.approx(198.133, abs=1e-3)
    assert r.metrics["mean_ttft_ms"] == pytest.approx(16.7925, abs=1e-3)
    # legacy percentiles have no p50: the distribution's median is used
    assert r.metrics["median_ttft_ms"] == pytest.approx(16.3805, abs=1e-3)
    assert r.metrics["p99_e2e_latency_ms"] == pytest.approx(689.185, abs=1e-2)


def test_guidellm_several_benchmarks_one_run_each(tmp_path: Path) -> None:
    d = json.loads((GEN / "guidellm-A-c1.json").read_text())
    d64 = json.loads((GEN / "guidellm-A-c64.json").read_text())
    d["benchmarks"].append(d64["benchmarks"][0])
    f = tmp_path / "benchmarks.json"
    f.write_text(json.dumps(d))
    rs = parse_result([f])
    assert [r.labels["concurrency"] for r in rs] == [1, 64]
    assert [r.source for r in rs] == [f"{f}#benchmark 1", f"{f}#benchmark 2"]


def test_guidellm_csv_reads_as_its_json() -> None:
    (c,) = parse_result([GEN / "guidellm-A-c1.csv"])
    (j,) = parse_result([GEN / "guidellm-A-c1.json"])
    for k in ("completed", "duration_s", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_itl_ms",
              "request_throughput", "output_throughput", "mean_e2e_latency_ms"):
        assert c.metrics[k] == pytest.approx(j.metrics[k], rel=1e-9), k
    assert c.measurement() == j.measurement()  # one run, two exports: imported once


def test_guidellm_benchmark_without_metrics(tmp_path: Path) -> None:
    f = tmp_path / "benchmarks.json"
    f.write_text(json.dumps({"benchmarks": [{"type_": "generative_benchmark"}]}))
    with pytest.raises(BadInput, match="guidellm: benchmark 1: no metrics object"):
        parse_result([f])


# ------------------------------------------------------------------------------ generic JSON

def test_generic_json_with_key_map(tmp_path: Path) -> None:
    f = tmp_path / "custom.json"
    f.write_text(json.dumps({"meta": {"model": "glm", "conc": 256}, "res": {"tps": 1867.0, "ttft": {"p99": 900}},
                             "note": "x"}))
    (r,) = parse_result([f], "json", {"total_token_throughput": "res.tps", "p99_ttft_ms": "res.ttft.p99",
                                      "label.model": "meta.model", "label.concurrency": "meta.conc"})
    assert r.metrics["total_token_throughput"] == 1867.0 and r.metrics["p99_ttft_ms"] == 900
    assert r.labels == {"model": "glm", "concurrency": 256, "tool": "json"}
    assert r.metrics["raw.res.tps"] == 1867.0
    assert r.raw["note"] == "x"


def test_generic_json_canonical_names_without_map_and_missing_key(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text('{"output_throughput": 10, "x": 1}\n{"output_throughput": 12}\n')
    rs = parse_result([f], "json")
    assert [r.metrics["output_throughput"] for r in rs] == [10, 12]
    with pytest.raises(BadInput, match=r"json: line 2: key map total_token_throughput=x: no 'x'"):
        parse_result([f], "json", {"total_token_throughput": "x"})
    g = tmp_path / "nothing.json"
    g.write_text('{"a": 1}')
    with pytest.raises(BadInput, match="json: line 1: no canonical metric"):
        parse_result([g], "json")


def test_key_map_overrides_in_a_named_format(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text(SGLANG_OLD + "\n")
    (r,) = parse_result([f], "sglang", {"output_throughput": "total_output_tokens"})
    assert r.metrics["output_throughput"] == 131072


# ------------------------------------------------------------------------------ detection and API

def test_detection_of_every_real_fixture() -> None:
    want = {
        "aiperf": ["aiperf/profile_export_aiperf.aiperf-0.8.0-baseline-chat.json",
                   "aiperf/profile_export_aiperf.synthetic-fixture-c128.json",
                   "aiperf/profile_export_aiperf.example-run1.csv", "generated/aiperf-A-c1.csv",
                   "generated/aiperf-A-c64-clienttok.json"],
        "guidellm": ["guidellm/benchmarks_stripped.v0.3-legacy.json", "generated/guidellm-A-c64.json"],
        "sglang-one-batch": ["sglang/bench_one_batch_server.result_te_tp4.jsonl"],
    }
    for fmt, files in want.items():
        for name in files:
            assert detect_format(PEERS / name) == fmt, name


def test_undetectable_and_missing_files(tmp_path: Path) -> None:
    f = tmp_path / "what.json"
    f.write_text('{"hello": "world"}')
    with pytest.raises(BadInput, match="cannot tell which tool wrote this file; pass fmt"):
        parse_result([f])
    with pytest.raises(BadInput, match="no such file"):
        parse_result([tmp_path / "missing.jsonl"])
    e = tmp_path / "empty.jsonl"
    e.write_text("\n")
    with pytest.raises(BadInput, match="sglang: the file is empty"):
        parse_result([e], "sglang")
    with pytest.raises(BadInput, match="unknown result format 'nope'"):
        parse_result([f], "nope")


def test_formats_and_canonical_names() -> None:
    assert set(FORMATS) == {"sglang", "sglang-one-batch", "vllm", "aiperf", "genai-perf", "guidellm", "json", "optlog",
                            "probe", "llama-bench", "llama-batched-bench", "llmperf", "vllm-throughput", "vllm-latency"}
    assert len(canonical()) == 8 + 3 + 25  # counts and rates, goodput's three, latency statistics
    # every parser's canonical output uses only canonical names or raw.*
    for f in [GEN / "aiperf-A-c64.json", GEN / "aiperf-A-c64.csv", GEN / "guidellm-A-c64.json",
              GEN / "aiperf-goodput-e2e200-itl12.json",
              PEERS / "sglang" / "bench_one_batch_server.result_te_tp4.jsonl",
              PEERS / "guidellm" / "benchmarks_stripped.v0.3-legacy.json"]:
        for r in parse_result([f]):
            bad = [k for k in r.metrics if k not in canonical() and not k.startswith("raw.")]
            assert not bad, (f, bad)


def test_parse_bytes_is_pure(tmp_path: Path) -> None:
    data = (GEN / "aiperf-A-c1.json").read_bytes()
    (r,) = parse_bytes("virtual.json", data)
    assert r.source == "virtual.json" and r.metrics["completed"] == 128
    assert list(tmp_path.iterdir()) == []


def test_select_result_files_from_a_bench_folder(tmp_path: Path) -> None:
    (tmp_path / "argv.json").write_text('["--url", "x"]')
    (tmp_path / "bench.stdout.log").write_text("hello")
    (tmp_path / "inputs.json").write_text('{"data": []}')
    (tmp_path / "result.json").write_text('{"completed": 1}')
    a = tmp_path / "aiperf"
    a.mkdir()
    for name in ("profile_export_aiperf.json", "profile_export_aiperf.csv"):
        (a / name).write_bytes((GEN / name.replace("profile_export_aiperf", "aiperf-A-c1")).read_bytes())
    s = tmp_path / "sg.jsonl"
    s.write_text(SGLANG_OLD + "\n")
    v = tmp_path / "openai-16qps.pytorch.json"
    v.write_text('[{"benchmark": {"name": "x"}, "metric": {"name": "y"}}]')
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    from optlog.runs.parsers import select_result_files

    assert select_result_files(files, "aiperf") == [a / "profile_export_aiperf.json"]
    assert select_result_files(files, "json") == [tmp_path / "result.json"]
    assert select_result_files(files, "sglang") == [s]
    assert select_result_files([tmp_path / "argv.json", tmp_path / "inputs.json"], "sglang") == \
        [tmp_path / "argv.json", tmp_path / "inputs.json"]  # nothing matches: the parser will say why
    assert set(select_result_files(files)) == {a / "profile_export_aiperf.json", a / "profile_export_aiperf.csv", s}


def test_probe_output_is_parsed_and_detected(tmp_path):
    """The GEMM probe's JSON: rates and work counts as metrics, the shape as labels."""
    import json
    import subprocess
    import sys

    out = tmp_path / "result.json"
    subprocess.run([sys.executable, "-m", "optlog.probes.gemm", "--m", "8", "--k", "64", "--n", "64", "--dtype", "fp32",
                    "--device", "cpu", "--repeats", "2", "--output", str(out)], check=True, capture_output=True)
    from optlog.runs.parsers import detect_format, parse_result

    assert detect_format(out) == "probe"
    (r,) = parse_result([out], "probe")
    assert r.labels["op"] == "gemm" and r.labels["m"] == 8 and r.labels["dtype"] == "fp32"
    doc = json.loads(out.read_text())
    assert r.metrics["flops"] == doc["flops"] == 2 * 8 * 64 * 64 and r.metrics["tflops"] > 0


def test_run_import_format_accepts_every_registered_name_and_alias(ws, tmp_path):
    """`run import --format` takes every name and alias the parser registry knows (one vocabulary):
    on 6190f40 `--format probe` and `--format generic` exited 2 though the registry accepts both.
    The choice list is checked in-process for every name; two CLI calls (one workspace) check that an
    alias reaches its parser and that a registered format not matching the file gets the parser's
    message, not click's."""
    import subprocess
    import sys

    from optlog.api import verb as V
    from optlog.api.imports import FORMAT_NAMES, run_import
    from optlog.cli.commands import command
    from optlog.runs.parsers import ALIASES, FORMATS

    v = V.of(run_import)
    assert v is not None
    fmt = next(p for p in command(v).params if p.name == "fmt")
    assert set(fmt.type.choices) == set(FORMAT_NAMES) == set(FORMATS) | set(ALIASES)  # type: ignore[attr-defined]
    out = tmp_path / "probe.json"
    subprocess.run([sys.executable, "-m", "optlog.probes.gemm", "--m", "8", "--k", "64", "--n", "64", "--dtype", "fp32",
                    "--device", "cpu", "--repeats", "2", "--output", str(out)], check=True, capture_output=True)
    r = ws.cli("run", "import", str(out), "--format", "gemm", "--json", check=False)
    assert r.code == 0 and len(r.json["runs"]) == 1, r.out + r.err
    r = ws.cli("run", "import", str(out), "--format", "one-batch", "--json", check=False)
    assert r.code == 2 and r.json["error"]["code"] != "usage" and "invalid choice" not in r.err.lower(), r.out


# ------------------------------------------------------------------------------ readers of issue 29

LLAMA_BENCH_MD = """\
| model                          |       size |     params | backend    | ngl | fa |          test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | -: | ------------: | -------------------: |
| gpt-oss 20B MXFP4 MoE          |  11.27 GiB |    20.91 B | ROCm       |  99 |  1 |         pp512 |       1847.26 ± 29.68 |
| gpt-oss 20B MXFP4 MoE          |  11.27 GiB |    20.91 B | ROCm       |  99 |  1 |         tg128 |        168.13 ± 0.28 |
| gpt-oss 20B MXFP4 MoE          |  11.27 GiB |    20.91 B | ROCm       |  99 |  1 |  pp512 @ d4096 |       1204.10 ± 3.10 |

build: 01ec0cc (7951)
"""
BATCHED_MD = """\
main: n_kv_max = 16384, n_batch = 2048, n_ubatch = 512, flash_attn = 1, is_pp_shared = 0, n_gpu_layers = 99, n_threads = 8, n_threads_batch = 8

|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
|   512 |    128 |    1 |    640 |    0.246 |  2081.30 |    1.010 |   126.73 |    1.256 |   509.55 |
|   512 |    128 |    8 |   5120 |    2.155 |  1900.69 |    2.300 |   445.22 |    4.455 |  1149.27 |
"""


def test_llama_bench_markdown_and_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "bench.md"
    f.write_text("some notes\n\n" + LLAMA_BENCH_MD)
    assert detect_format(f) == "llama-bench"
    pp, tg, deep = parse_result([f])
    assert pp.metrics["input_throughput"] == 1847.26 and pp.metrics["raw.stddev_ts"] == 29.68
    assert tg.metrics["output_throughput"] == 168.13 and "input_throughput" not in tg.metrics
    assert pp.labels == {"model": "gpt-oss 20B MXFP4 MoE", "backend": "ROCm", "n_gpu_layers": 99, "flash_attn": 1,
                         "test": "pp512", "input_len": 512, "build": "01ec0cc", "tool_version": 7951, "tool": "llama-bench",
                         "depth": 0}  # issue 48: depth 0 is a depth (the baseline of the table's depths)
    # the test label names the test, not its depth: pp512 compares across depths
    assert deep.labels["depth"] == 4096 and deep.labels["test"] == "pp512" and pp.source == f"{f}:5"
    rows = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "real" / "llama-bench" /
                       "amd-7900xtx-rocm-7.12-b7951.json").read_text())[:2]
    j = tmp_path / "bench.jsonl"
    j.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert detect_format(j) == "llama-bench"
    assert [r.metrics["input_throughput"] for r in parse_result([j])] == [r["avg_ts"] for r in rows]
    bad = tmp_path / "bad.md"
    bad.write_text(LLAMA_BENCH_MD.replace("tg128", "xx128"))
    with pytest.raises(BadInput) as e:
        parse_result([bad], "llama-bench")
    assert e.value.line == 4 and e.value.field == "test"


def test_llama_batched_bench_table_and_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "batched.txt"
    f.write_text(BATCHED_MD)
    assert detect_format(f) == "llama-batched-bench"
    one_, eight = parse_result([f])
    assert eight.metrics["output_throughput"] == 445.22 and eight.metrics["total_token_throughput"] == 1149.27
    assert eight.metrics["input_throughput"] == 1900.69 and eight.metrics["duration_s"] == 4.455
    assert eight.labels["concurrency"] == 8 and eight.labels["input_len"] == 512 and eight.labels["n_ubatch"] == 512
    j = tmp_path / "batched.jsonl"
    j.write_text(json.dumps({"n_kv_max": 16384, "n_batch": 2048, "n_ubatch": 512, "flash_attn": 1, "is_pp_shared": 0,
                             "n_gpu_layers": 99, "n_threads": 8, "n_threads_batch": 8, "pp": 512, "tg": 128, "pl": 8,
                             "n_kv": 5120, "t_pp": 2.155, "speed_pp": 1900.69, "t_tg": 2.3, "speed_tg": 445.22,
                             "t": 4.455, "speed": 1149.27}) + "\n")
    assert detect_format(j) == "llama-batched-bench"
    (r,) = parse_result([j])
    assert r.metrics["output_throughput"] == 445.22 and r.labels["concurrency"] == 8


def test_llama_batched_bench_log_of_two_invocations_keeps_each_ones_settings(tmp_path: Path) -> None:
    """A log of two llama-batched-bench runs (the real DGX Spark table, then a second run with
    n_ubatch 512): each row has the settings of the `main:` line above it, not the last one's, and
    the two runs are told apart (the same class as llama-bench's per-invocation build line)."""
    real = (PEERS.parent / "real" / "llama-batched-bench" / "dgx-spark-gpt-oss-20b.cut.md").read_text()
    second = real.replace("n_ubatch = 2048", "n_ubatch = 512")
    f = tmp_path / "two-runs.log"
    f.write_text(real + "\n" + second)
    rows = parse_result([f])
    assert len(rows) == 36
    assert {r.labels["n_ubatch"] for r in rows[:18]} == {2048} and {r.labels["n_ubatch"] for r in rows[18:]} == {512}
    assert {r.labels["invocation"] for r in rows[:18]} == {1} and {r.labels["invocation"] for r in rows[18:]} == {2}
    (alone,) = [r for r in parse_result([PEERS.parent / "real" / "llama-batched-bench" / "dgx-spark-gpt-oss-20b.cut.md"])
                if r.labels["concurrency"] == 1 and r.labels["input_len"] == 512]
    assert "invocation" not in alone.labels  # one run: nothing to tell apart


def test_vllm_bench_throughput_and_latency(tmp_path: Path) -> None:
    t = tmp_path / "throughput.json"
    t.write_text(json.dumps({"elapsed_time": 50.0, "num_requests": 1000, "total_num_tokens": 500000,
                             "requests_per_second": 20.0, "tokens_per_second": 10000.0}))
    lat = tmp_path / "latency.json"
    lat.write_text(json.dumps({"avg_latency": 1.5, "latencies": [1.4, 1.5, 1.6],
                               "percentiles": {"10": 1.4, "25": 1.45, "50": 1.5, "75": 1.55, "90": 1.58, "99": 1.6}}))
    assert detect_format(t) == "vllm-throughput" and detect_format(lat) == "vllm-latency"
    (a,) = parse_result([t])
    assert a.metrics["total_token_throughput"] == 10000.0 and a.metrics["duration_s"] == 50.0 and a.metrics["completed"] == 1000
    (b,) = parse_result([lat])
    assert b.metrics["mean_e2e_latency_ms"] == 1500.0 and b.metrics["p99_e2e_latency_ms"] == 1600.0
    assert b.metrics["raw.iterations"] == 3


def test_aiperf_sweep_aggregate(tmp_path: Path) -> None:
    def stat(mean: float, unit: str) -> dict:
        return {"mean": mean, "std": mean / 10, "min": mean * 0.9, "max": mean * 1.1, "cv": 0.1,
                "ci_low": mean * 0.95, "ci_high": mean * 1.05, "unit": unit}
    combos = [{"parameters": {"concurrency": c},
               "metrics": {"request_throughput_avg": stat(10.0 * c, "requests/sec"),
                           "time_to_first_token_p99": stat(100.0 + c, "ms"),
                           "time_to_first_token_avg": stat(50.0 + c, "ms"),
                           "output_token_throughput_avg": stat(200.0 * c, "tokens/sec")}} for c in (10, 20)]
    f = tmp_path / "profile_export_aiperf_sweep.json"
    f.write_text(json.dumps({"aggregation_type": "sweep", "num_profile_runs": 6, "num_successful_runs": 6,
                             "failed_runs": [], "metadata": {"sweep_parameters": [{"name": "concurrency", "values": [10, 20]}]},
                             "per_combination_metrics": combos, "best_configurations": {}, "pareto_optimal": []}))
    assert detect_format(f) == "aiperf"
    a, b = parse_result([f])
    assert b.labels == {"concurrency": 20, "trials": 3, "aggregation": "sweep", "tool": "aiperf"}
    assert b.metrics["request_throughput"] == 200.0 and b.metrics["p99_ttft_ms"] == 120.0
    assert b.metrics["mean_ttft_ms"] == 70.0 and b.metrics["output_throughput"] == 4000.0
    assert b.metrics["raw.time_to_first_token_p99.ci_high"] == pytest.approx(126.0)


def test_guidellm_yaml_is_the_json_tree(tmp_path: Path) -> None:
    import yaml

    d = json.loads((GEN / "guidellm-A-c1.json").read_text())
    for b in d["benchmarks"]:
        b.pop("requests", None)
    f = tmp_path / "benchmarks.yaml"
    f.write_text(yaml.safe_dump(d))
    assert detect_format(f) == "guidellm"
    (y,) = parse_result([f])
    (j,) = parse_result([GEN / "guidellm-A-c1.json"])
    assert y.metrics == j.metrics and y.labels == j.labels


def test_key_map_units_and_seconds_refused(tmp_path: Path) -> None:
    f = tmp_path / "llmperf-like.json"
    f.write_text(json.dumps({"results_ttft_s_mean": 0.228, "ttft": 0.3, "lat": 250.0}))
    (r,) = parse_result([f], "json", {"mean_ttft_ms": "results_ttft_s_mean:s", "median_e2e_latency_ms": "lat:ms"})
    assert r.metrics["mean_ttft_ms"] == pytest.approx(228.0) and r.metrics["median_e2e_latency_ms"] == 250.0
    for km in ({"mean_ttft_ms": "results_ttft_s_mean"}, {"mean_ttft_ms": "ttft"}):
        with pytest.raises(BadInput) as e:
            parse_result([f], "json", km)
        assert e.value.field == "key_map" and "looks like seconds" in e.value.message and ":s" in e.value.message


def test_a_rounded_csv_export_is_its_json_run_once_and_only_its_own() -> None:
    """AIPerf and genai-perf write each run as JSON and as CSV (figures rounded to 2 places): the CSV
    of a run read with its JSON is that run; a CSV of another run, or of another tool, is not."""
    from optlog.runs.parsers import unique

    real = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "genai-perf"
    c1, c64 = GEN / "aiperf-A-c1", GEN / "aiperf-A-c64"
    g12, g16 = real / "0.0.12-concurrency1" / "profile_export_genai_perf", real / "0.0.16-concurrency2" / "profile_export_genai_perf"
    runs = parse_result([c1.with_suffix(".json"), c1.with_suffix(".csv"), g16.with_suffix(".json"), g16.with_suffix(".csv")])
    assert runs[1].decimals == 2 and runs[0].decimals is None
    kept, said = unique(runs)
    assert kept == [runs[0], runs[2]] and len(said) == 2 and "rounded to 2 places" in said[0]
    others = parse_result([c64.with_suffix(".json"), c1.with_suffix(".csv"), g12.with_suffix(".json"), g16.with_suffix(".csv")])
    assert unique(others) == (others, [])


def test_llama_bench_older_table_layout_and_depths_compare(tmp_path: Path) -> None:
    """Issue 48 item 7: `pp 64` (older builds, a space) was refused; depth 0 had no label (so
    `compare --by depth` dropped the baseline) and `tg128 @ d512` was a test of its own."""
    real = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "llama-bench" / "readme-threads-pp64.cut.md"
    rows = parse_result([real])
    assert [(r.labels["test"], r.labels["n_threads"]) for r in rows[:2]] == [("pp64", 1), ("tg16", 1)]
    assert rows[0].metrics["input_throughput"] == 6.17 and rows[1].metrics["output_throughput"] == 4.05
    assert "depth" not in rows[0].labels  # a table that names no depth says nothing about one
    f = tmp_path / "bench.md"
    f.write_text(LLAMA_BENCH_MD)
    by_depth = {(r.labels["test"], r.labels["depth"]) for r in parse_result([f])}
    assert by_depth == {("pp512", 0), ("tg128", 0), ("pp512", 4096)}
    rows = json.loads((real.parent / "amd-7900xtx-rocm-7.12-b7951.json").read_text())
    j = tmp_path / "bench.json"
    j.write_text(json.dumps([{**rows[0], "n_depth": 0}, {**rows[0], "n_depth": 512}]))
    assert [(r.labels["test"], r.labels["depth"]) for r in parse_result([j])] == [("pp128", 0), ("pp128", 512)]


def test_llmperf_inter_token_latency_is_ntpot_not_itl() -> None:
    """llmperf's `inter_token_latency_s` is, per request, the TTFT plus every later gap between
    content chunks, over the output tokens (ray-project/llmperf token_benchmark_ray.py and
    openai_chat_completions_client.py): a request's latency per output token, TTFT included
    (NTPOT), neither ITL (the gaps alone) nor TPOT (after the first token). Stored under that name;
    checked against the real files' own per-request values: each one times its output tokens lies
    between the request's TTFT and its end-to-end latency."""
    from optlog.core.units import unit

    real = PEERS.parent / "real" / "llmperf"
    rows = json.loads((real / "individual" / "groq_70b.json").read_text())
    ok = [x for x in rows if not x["error_code"] and x["number_output_tokens"]]
    assert all(x["ttft_s"] <= x["inter_token_latency_s"] * x["number_output_tokens"] <= x["end_to_end_latency_s"] * 1.0001
               for x in ok)
    r = one(real / "individual" / "groq_70b.json")
    assert r.metrics["mean_ntpot_ms"] == pytest.approx(sum(x["inter_token_latency_s"] for x in ok) / len(ok) * 1000)
    d = json.loads((real / "summary" / "groq_70b.json").read_text())
    s = one(real / "summary" / "groq_70b.json")
    assert s.metrics["mean_ntpot_ms"] == pytest.approx(d["results_inter_token_latency_s_mean"] * 1000)
    assert s.metrics["p99_ntpot_ms"] == pytest.approx(d["results_inter_token_latency_s_quantiles_p99"] * 1000)
    for res in (r, s):
        assert not [k for k in res.metrics if k.endswith(("_itl_ms", "_tpot_ms"))], res.metrics
    assert "mean_ntpot_ms" in canonical() and unit("p99_ntpot_ms") == "ms"


@pytest.mark.parametrize("name", ["guidellm-A-c1", "guidellm-A-c64"])
def test_guidellm_time_per_output_token_is_ntpot(name: str) -> None:
    """GuideLLM's `time_per_output_token_ms` is the same quantity as llmperf's: in its own per-request
    records it is exactly (TTFT + (N − 1) × ITL) / N, the time to the last token over the output
    tokens. Stored as `*_ntpot_ms` from the JSON and the CSV alike (it was raw only)."""
    d = json.loads((GEN / f"{name}.json").read_text())
    b = d["benchmarks"][0]
    for x in b["requests"]["successful"]:
        n = x["output_tokens"]
        assert x["time_per_output_token_ms"] * n == pytest.approx(x["time_to_first_token_ms"] + (n - 1) * x["inter_token_latency_ms"])
    s = b["metrics"]["time_per_output_token_ms"]["successful"]
    j, c = one(GEN / f"{name}.json"), one(GEN / f"{name}.csv")
    assert j.metrics["mean_ntpot_ms"] == s["mean"] and j.metrics["median_ntpot_ms"] == s["median"]
    assert c.metrics["mean_ntpot_ms"] == pytest.approx(s["mean"], rel=1e-6)
    # above the TPOT by the TTFT spread over the tokens, never taken for it
    assert j.metrics["mean_ntpot_ms"] > j.metrics["mean_tpot_ms"]
