"""optlog's load generator, Prometheus scraper and environment capture against llama.cpp's real
`llama-server` serving Gemma 3 270M: readiness (503 while loading), the temperature-0 sanity check,
token counts checked against the server's own counters and timings, its prompt cache, a stream with
no usage, and a context overflow. One server is shared where the test allows (2-core CI)."""

from __future__ import annotations

import json

import pytest

from _realserver import LlamaServer, get, post
from tests._loadgen import loadgen

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemma(real_server):
    binary, model = real_server
    s = LlamaServer(binary, model, parallel=2, ctx=2048)
    yield s
    s.stop()


def only(d):
    assert len(d["runs"]) == 1, d
    return d["runs"][0]


def test_health_is_503_while_loading_then_ok(real_server):
    binary, model = real_server
    s = LlamaServer(binary, model, wait=False)
    try:
        s.wait_ready()
        assert s.health[-1] == 200
        assert 503 in s.health, s.health   # it listens before the model is loaded, and says so
    finally:
        s.stop()
    assert s.proc.returncode is not None


def test_sanity_check_at_temperature_0(gemma):
    status, doc = post(gemma.url + "/v1/completions", {"prompt": "1, 2, 3, 4, 5,", "max_tokens": 4, "temperature": 0})
    assert status == 200, doc
    assert doc["choices"][0]["text"].lstrip().startswith("6"), doc


def test_counts_agree_with_the_servers_counters_and_timings(gemma):
    r = loadgen(gemma.url, "--concurrency", "1,2", "--num-prompts", "4", "--input-len", "24", "--output-len", "12",
                "--ignore-eos", timeout=300)
    assert r.code == 0, r.err
    for run in r.json["runs"]:
        m = run["metrics"]
        assert m["completed"] == 4 and m["short"] == 0 and m["failed"] == 0
        assert (m["min_output_tokens"], m["max_output_tokens"]) == (12, 12)
        assert m["server_output_tokens"] == 48
        assert m["output_tokens_agreement"] == pytest.approx(1.0, abs=0.02)
        assert m["server_predicted_tokens"] == 48 and m["server_mean_tpot_ms"] > 0
        # fresh prompts at each level: the prompt cache serves at most a few shared first tokens
        assert m["prompt_cache_hit"] == 0, m
        assert not any("output tokens" in w for w in run["warnings"])


def test_reused_prompts_hit_the_prompt_cache_and_the_level_is_flagged(gemma):
    r = loadgen(gemma.url, "--concurrency", "2,2", "--num-prompts", "2", "--input-len", "64", "--output-len", "4",
                "--reuse-prompts", "--warmup", "0", timeout=300)
    assert r.code == 0, r.err
    lv1, lv2 = r.json["runs"]
    assert lv2["metrics"]["cached_prompt_fraction"] > 0.5, lv2["metrics"]
    assert lv2["metrics"]["prompt_cache_hit"] == 1
    assert any("prompt cache" in w for w in lv2["warnings"])
    # llama.cpp processed only the uncached prompt tokens at level 2
    assert lv2["metrics"]["server_prompt_tokens"] < 0.5 * lv2["metrics"]["total_input_tokens"]


def test_usage_is_always_sent_so_input_tokens_come_from_the_server(gemma):
    # llama.cpp sends usage even when include_usage is off; the prompt's count includes its BOS token
    r = loadgen(gemma.url, "--num-prompts", "2", "--input-len", "20", "--output-len", "4",
                "--extra-body", json.dumps({"stream_options": {"include_usage": False}}), timeout=300)
    assert r.code == 0, r.err
    m = only(r.json)["metrics"]
    assert m["input_tokens_client_counted"] == 0 and m["total_input_tokens"] >= 40


def test_context_overflow_fails_some_requests(tmp_path, real_server):
    binary, model = real_server
    s = LlamaServer(binary, model, parallel=2, ctx=512)    # 256 tokens per slot (llama.cpp's least)
    try:
        short = {"prompt": "one two three four", "output_len": 4}
        long = {"prompt": " ".join(["word"] * 600), "output_len": 4}
        f = tmp_path / "mix.jsonl"
        f.write_text("\n".join(json.dumps(x) for x in (short, long, short, long)) + "\n")
        r = loadgen(s.url, "--dataset", str(f), "--num-prompts", "4", "--reuse-prompts", timeout=300)
        # ignore_eos past the slot's context: llama.cpp stops at the context and says "length"
        r2 = loadgen(s.url, "--num-prompts", "2", "--input-len", "230", "--output-len", "60", "--ignore-eos",
                     "--warmup", "0", timeout=300)
    finally:
        s.stop()
    m = only(r.json)["metrics"]
    assert m["completed"] == 2 and m["failed"] == 2
    assert only(r.json)["errors"] == {"http_4xx": 2}
    assert "exceeds the available context size" in only(r.json)["example_error"]
    m2 = only(r2.json)["metrics"]
    assert m2["short"] == 2 and m2["completed"] == 0 and m2["max_output_tokens"] < 60


def test_prometheus_dialect_and_environment(gemma):
    from optlog.runs.environment import capture
    from optlog.telemetry import prometheus

    a = prometheus.scrape(gemma.url + "/metrics")
    post(gemma.url + "/v1/completions", {"prompt": "Hello", "max_tokens": 3, "temperature": 0})
    b = prometheus.scrape(gemma.url + "/metrics")
    assert "tokens_predicted" in b["counters"] and "prompt_tokens" in b["counters"]
    assert prometheus.token_deltas(a, b)["output_tokens"] == 3
    pm = prometheus.point_metrics([a, b])
    assert "srv_running_mean" in pm and pm["srv_tokens_predicted_delta"] == 3
    status, props = get(gemma.url + "/props")
    assert status == 200 and props["build_info"]
    doc = capture(None, server_url=gemma.url, commands={"server": gemma.argv})
    assert doc["server"]["endpoint"] == "/props"
    assert doc["server"]["effective"]["build_info"] == props["build_info"]
    assert doc["server"]["effective"]["parallel"] == 2
    assert "version" in doc["server"]["binary_version"]
