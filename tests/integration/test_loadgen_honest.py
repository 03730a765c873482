"""The load generator against servers that behave like real ones, not like optlog's own test server:
streams that end early with [DONE], streams without a finish_reason, no usage, a prompt cache, and
a server counter that disagrees with the streams. Each is a real subprocess on 127.0.0.1; the same
checks run against llama.cpp's server in tests/integration/test_realserver_loadgen.py."""

from __future__ import annotations

import json

from tests._loadgen import LiveServer, loadgen


def only(d):
    assert len(d["runs"]) == 1, d
    return d["runs"][0]


def test_early_done_with_ignore_eos_is_short_not_completed():
    s = LiveServer("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "16", "--mode", "early", "--cut-after", "3")
    try:
        # ignore_eos demands every one of the 8 tokens: 3 then a clean finish_reason and [DONE] is short
        r = loadgen(s.url, "--model", "m", "--num-prompts", "4", "--output-len", "8", "--input-len", "5",
                    "--ignore-eos")
        # without a demanded length, 3 tokens ending with finish_reason is an answer
        r2 = loadgen(s.url, "--model", "m", "--num-prompts", "4", "--output-len", "8", "--input-len", "5")
    finally:
        s.stop()
    run = only(r.json)
    m = run["metrics"]
    assert m["completed"] == 0 and m["failed"] == 4 and m["short"] == 4
    assert run["errors"] == {"short": 4}
    assert "3 of the 8" in run["example_error"]
    assert m["mean_ttft_ms"] is None           # excluded from the completed requests' percentiles
    assert (m["min_output_tokens"], m["median_output_tokens"], m["max_output_tokens"]) == (3, 3, 3)
    assert m["requested_output_tokens"] == 8
    assert any("short stream" in w for w in run["warnings"])
    assert r.code == 1                         # a level with no completed request fails
    assert "short" in r.err
    m2 = only(r2.json)["metrics"]
    assert m2["completed"] == 4 and m2["short"] == 0


def test_min_tokens_is_a_demanded_length():
    s = LiveServer("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "16", "--mode", "early", "--cut-after", "3")
    try:
        r = loadgen(s.url, "--model", "m", "--num-prompts", "2", "--output-len", "8", "--input-len", "5",
                    "--extra-body", '{"min_tokens": 3}')
        r4 = loadgen(s.url, "--model", "m", "--num-prompts", "2", "--output-len", "8", "--input-len", "5",
                     "--extra-body", '{"min_tokens": 4}')
    finally:
        s.stop()
    assert only(r.json)["metrics"]["completed"] == 2
    assert only(r4.json)["metrics"]["short"] == 2


def test_done_without_finish_reason_is_short():
    s = LiveServer("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "6", "--mode", "no_finish")
    try:
        r = loadgen(s.url, "--model", "m", "--num-prompts", "3", "--output-len", "6", "--input-len", "5")
    finally:
        s.stop()
    run = only(r.json)
    assert run["metrics"]["short"] == 3 and run["metrics"]["completed"] == 0
    assert "without any finish_reason" in run["example_error"]


def test_prompt_cache_fresh_prompts_by_default_and_flagged_when_reused():
    s = LiveServer("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "4", "--prompt-cache")
    try:
        fresh = loadgen(s.url, "--model", "m", "--concurrency", "1,2", "--num-prompts", "4", "--output-len", "4",
                        "--input-len", "20")
        again = loadgen(s.url, "--model", "m", "--concurrency", "1", "--num-prompts", "4", "--output-len", "4",
                        "--input-len", "20")   # a repeat: fresh prompts again
        reused = loadgen(s.url, "--model", "m", "--concurrency", "1,2", "--num-prompts", "4", "--output-len", "4",
                         "--input-len", "20", "--reuse-prompts", "--warmup", "0")
    finally:
        s.stop()
    for d in (fresh.json, again.json):
        for run in d["runs"]:
            assert run["metrics"]["cached_prompt_tokens"] == 0 and run["metrics"]["prompt_cache_hit"] == 0
    lv1, lv2 = reused.json["runs"]
    assert lv1["metrics"]["cached_prompt_tokens"] == 0
    # level 2 re-sends level 1's prompts: every prompt token is a cache hit, and the level says so
    assert lv2["metrics"]["cached_prompt_tokens"] == 80 and lv2["metrics"]["cached_prompt_fraction"] == 1.0
    assert lv2["metrics"]["prompt_cache_hit"] == 1
    assert any("prompt cache" in w for w in lv2["warnings"])


def test_output_tokens_checked_against_the_server_counter():
    ok = LiveServer("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "8")
    skew = LiveServer("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "8", "--metrics-skew", "1.05")
    try:
        a = loadgen(ok.url, "--model", "m", "--num-prompts", "5", "--output-len", "8", "--input-len", "5")
        b = loadgen(skew.url, "--model", "m", "--num-prompts", "5", "--output-len", "8", "--input-len", "5")
        c = loadgen(ok.url, "--model", "m", "--num-prompts", "2", "--output-len", "8", "--input-len", "5",
                    "--metrics-url", "none")
    finally:
        ok.stop()
        skew.stop()
    ma = only(a.json)["metrics"]
    assert ma["server_output_tokens"] == 40 and ma["output_tokens_agreement"] == 1.0
    assert not any("output tokens" in w for w in only(a.json)["warnings"])
    mb = only(b.json)["metrics"]
    assert abs(mb["output_tokens_agreement"] - 1 / 1.05) < 1e-6
    assert any("output tokens: the client counted 95.2%" in w for w in only(b.json)["warnings"])
    assert "output_tokens_agreement" not in only(c.json)["metrics"]


def test_warmup_at_the_first_level_only_and_not_after_a_warm_server():
    s = LiveServer("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "4")
    try:
        def requests() -> float:
            return s.metrics()["sglang:num_requests_total"]

        n0 = requests()
        r = loadgen(s.url, "--model", "m", "--concurrency", "2,3", "--num-prompts", "3", "--output-len", "4",
                    "--input-len", "5")
        assert r.code == 0, r.err
        n1 = requests()
        assert n1 - n0 == 6 + 2      # 3 per level + a warm-up of the first level's concurrency, once
        r = loadgen(s.url, "--model", "m", "--concurrency", "2", "--num-prompts", "3", "--output-len", "4",
                    "--input-len", "5", env={"OPTLOG_SERVER_FRESH": "0"})
        assert requests() - n1 == 3  # the launcher says the server is already warm
    finally:
        s.stop()


def test_jsonl_line_carries_the_new_fields(tmp_path):
    s = LiveServer("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "4", "--no-usage")
    out = tmp_path / "r.jsonl"
    try:
        r = loadgen(s.url, "--model", "m", "--num-prompts", "2", "--output-len", "4", "--input-len", "5",
                    "--output-file", str(out))
    finally:
        s.stop()
    assert r.code == 0, r.err
    line = json.loads(out.read_text().splitlines()[0])
    assert line["input_tokens_source"] == "client" and line["total_input_tokens"] == 10
    assert line["short"] == 0 and line["median_output_tokens"] == 4
    from optlog.runs.parsers import parse_result

    res = parse_result([out], "optlog")[0]
    assert res.metrics["short"] == 0 and res.metrics["median_output_tokens"] == 4
