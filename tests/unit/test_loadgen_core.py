"""The load generator's pure part: SSE decoding, results, aggregates, workload maths (no I/O)."""

from __future__ import annotations

import json
import math

import pytest

from optlog.loadgen import core


def ev(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def tok(text: str) -> bytes:
    return ev({"choices": [{"index": 0, "text": text, "finish_reason": None}]})


FIN = ev({"choices": [{"index": 0, "text": "", "finish_reason": "length"}]})
DONE = b"data: [DONE]\n\n"


def raw_of(pieces: list[tuple[float, bytes]], status: int = 200, **kw) -> core.Raw:
    r = core.Raw(index=0, start=1.0, end=pieces[-1][0] if pieces else 1.0, status=status, chunks=pieces, **kw)
    return r


def test_sse_split_events_comments_crlf_and_done():
    stream = b": keep-alive\r\n\r\n" + tok(" a").replace(b"\n", b"\r\n") + tok(" b") + DONE
    # cut everywhere, one byte at a time: the events and their completion times must not change
    pieces = [(10.0 + i, stream[i:i + 1]) for i in range(len(stream))]
    events = core.sse_events(pieces)
    assert [json.loads(d)["choices"][0]["text"] if d != "[DONE]" else d for _, d in events] == [" a", " b", "[DONE]"]
    # each event is timed by the piece that completed it (its blank line), not the first byte
    first_end = stream.index(b"\r\n\r\n", stream.index(b"data")) + 3
    assert events[0][0] == 10.0 + first_end
    assert events[-1][0] == 10.0 + len(stream) - 1


def test_multiline_data_and_other_fields():
    evs = core.sse_events([(1.0, b"event: x\nid: 3\ndata: {\"a\":\ndata: 1}\n\n")])
    assert evs == [(1.0, '{"a":\n1}')]


def test_decode_times_usage_and_success():
    pieces = [(1.0, b": hi\n\n"), (1.05, tok(" a")), (1.06, tok(" b") + tok(" c")), (1.07, FIN),
              (1.08, ev({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5}}) + DONE)]
    r = core.decode(raw_of(pieces))
    assert r.ok and r.error is None
    assert r.ttft == pytest.approx(0.05)           # the comment is not a token
    assert r.itls == pytest.approx([0.01, 0.0])    # two events in one piece share its arrival time
    assert r.counted_tokens == 3
    assert r.output_tokens == 5 and r.input_tokens == 7 and r.usage  # the server's usage wins
    assert r.tpot == pytest.approx((0.08 - 0.05) / 4)


def test_no_usage_counts_events():
    pieces = [(1.1, tok(" a")), (1.2, tok(" b")), (1.3, FIN + DONE)]
    r = core.decode(raw_of(pieces))
    assert r.ok and r.output_tokens == 2 and r.input_tokens is None and not r.usage


def test_cut_stream_is_a_failure_never_full_length():
    pieces = [(1.1, tok(" a")), (1.2, tok(" b"))]
    r = core.decode(raw_of(pieces, error="stream_cut", detail="closed"))
    assert not r.ok and r.error == "stream_cut"
    assert r.output_tokens == 2
    # a clean HTTP end without [DONE] or finish_reason is also cut
    r2 = core.decode(raw_of(pieces, complete=True))
    assert r2.error == "stream_cut"
    m = core.aggregate([r, r2], 1.0, 2)
    assert m["completed"] == 0 and m["failed"] == 2 and m["total_output_tokens"] == 0


def test_close_delimited_body_with_done_is_complete():
    r = core.decode(raw_of([(1.1, tok(" a")), (1.2, FIN + DONE)], error="stream_cut"))
    # the client saw EOF (a body delimited by closing the connection), but the stream said [DONE]
    assert r.ok and r.error is None and r.output_tokens == 1


def test_http_errors_and_timeouts():
    assert core.decode(raw_of([(1.1, b'{"error": "x"}')], status=503)).error == "http_5xx"
    assert core.decode(raw_of([(1.1, b"nope")], status=404)).error == "http_4xx"
    assert core.decode(raw_of([(1.1, b": ka\n\n")], error="timeout")).error == "no_first_token"
    assert core.decode(raw_of([(1.1, tok(" a"))], error="timeout")).error == "timeout"
    r = core.decode(raw_of([(1.1, ev({"error": {"message": "boom"}})), (1.2, DONE)]))
    assert r.error == "server_error" and "boom" in r.detail
    assert core.decode(raw_of([(1.1, b"data: {not json\n\n" + DONE)])).error == "bad_response"


def test_chat_deltas():
    pieces = [(1.1, ev({"choices": [{"delta": {"role": "assistant"}}]})),
              (1.2, ev({"choices": [{"delta": {"content": "hi"}}]})),
              (1.3, ev({"choices": [{"delta": {}, "finish_reason": "stop"}]}) + DONE)]
    r = core.decode(raw_of(pieces), keep_text=True)
    assert r.ok and r.ttft == pytest.approx(0.2) and r.output_tokens == 1 and r.text == "hi"


def test_aggregate_names_and_values():
    rs = []
    for i in range(4):
        pieces = [(1.0 + 0.05, tok(" a")), (1.0 + 0.06, tok(" b")), (1.0 + 0.07, FIN + DONE)]
        rs.append(core.decode(raw_of(pieces)))
    m = core.aggregate(rs, 2.0, 4)
    for k in ("request_throughput", "output_throughput", "total_token_throughput", "input_throughput", "completed",
              "failed", "duration", "duration_s", "max_concurrency", "mean_inflight"):
        assert k in m
    for s in ("mean", "median", "p90", "p95", "p99"):
        for n in ("ttft", "tpot", "itl", "e2e_latency"):
            assert f"{s}_{n}_ms" in m
    assert m["request_throughput"] == 2.0 and m["output_throughput"] == 4.0
    assert m["mean_ttft_ms"] == pytest.approx(50.0) and m["p99_itl_ms"] == pytest.approx(10.0)
    assert m["mean_inflight"] == pytest.approx(4 * 0.07 / 2.0)
    assert m["max_concurrent_requests"] == 4


def test_percentile_matches_numpy_linear():
    np = pytest.importorskip("numpy")
    vals = sorted([3.0, 1.0, 7.0, 2.5, 9.0, 4.0])
    for q in (50, 90, 95, 99):
        assert core.percentile(vals, q) == pytest.approx(float(np.percentile(vals, q)))


def test_poisson_reproducible_with_seed():
    a = core.poisson_offsets(500, 100.0, seed=7)
    assert a == core.poisson_offsets(500, 100.0, seed=7)
    assert a != core.poisson_offsets(500, 100.0, seed=8)
    assert a[0] == 0.0 and all(x < y for x, y in zip(a, a[1:]))
    assert 3.5 < a[-1] < 6.5                      # ~500 arrivals at 100/s take ~5 s
    assert core.poisson_offsets(3, math.inf, 1) == [0.0, 0.0, 0.0]


def test_levels_and_rate_parsing():
    assert core.parse_levels("1, 8,64") == [1, 8, 64]
    for bad in ("1,x", "", "0", "1,,2", "-3"):
        with pytest.raises(ValueError):
            core.parse_levels(bad)
    assert math.isinf(core.parse_rate("inf")) and core.parse_rate("2.5") == 2.5
    for bad in ("0", "-1", "fast", "nan"):
        with pytest.raises(ValueError):
            core.parse_rate(bad)


def test_length_warnings():
    pieces = [(1.1, tok(" a")), (1.2, FIN), (1.3, ev({"choices": [], "usage": {"prompt_tokens": 150,
                                                                                 "completion_tokens": 1}}) + DONE)]
    r = core.decode(raw_of(pieces))
    w = core.length_warnings([r], input_len=100, output_len=64)
    assert any("input length" in x for x in w) and any("output length" in x for x in w)
    assert core.length_warnings([r], input_len=150, output_len=1) == []


def test_core_does_no_io():
    import ast
    from pathlib import Path

    src = Path(core.__file__).read_text()
    modules = {a.name for n in ast.walk(ast.parse(src)) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module or "")])}
    modules -= {"optlog.core.numfmt", "optlog.core.windows"}  # windows: pure, imports nothing  # how a number reads to a person: pure, imports only math
    names = {m.split(".")[0] for m in modules}
    assert not names & {"asyncio", "socket", "httpx", "httptools", "aiohttp", "os", "pathlib", "sqlmodel", "optlog"}


def test_request_payload_and_target_parsing():
    from optlog.loadgen import runner

    t = runner.parse_target("http://127.0.0.1:8000/v1", "chat")
    assert (t.path, t.api, t.port) == ("/v1/chat/completions", "chat", 8000)
    assert runner.parse_target("https://h.example/x/v1/completions", None).port == 443
    assert runner.parse_target("http://h:1", None).path == "/v1/completions"
    spec = runner.Spec(target=t, model="glm", prompts=[], levels=[1], ignore_eos=True,
                       headers={"Authorization": "Bearer k"}, extra_body={"top_k": 1})
    raw = runner.build_payload(spec, "hi there", 7)
    head, body = raw.split(b"\r\n\r\n", 1)
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n")
    assert b"\r\nAuthorization: Bearer k" in head and f"Content-Length: {len(body)}".encode() in head
    b = json.loads(body)
    assert b == {"model": "glm", "max_tokens": 7, "stream": True, "temperature": 0.0,
                 "messages": [{"role": "user", "content": "hi there"}],
                 "stream_options": {"include_usage": True}, "ignore_eos": True, "top_k": 1}
    for bad in ("ftp://h", "h:80", "http://", "http://h:99999"):
        with pytest.raises(ValueError):
            runner.parse_target(bad, None)


# ---------------------------------------------------------------- what real servers send


def _llama_final(n: int, cached: int) -> bytes:
    """llama.cpp's last chunk with include_usage: usage with cached tokens, and its own timings."""
    return ev({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n,
                                        "prompt_tokens_details": {"cached_tokens": cached}},
               "timings": {"cache_n": cached, "prompt_n": 10 - cached, "prompt_ms": 12.5, "predicted_n": n,
                           "predicted_ms": 30.0 * n, "predicted_per_second": 33.3}})


def test_decode_reads_llamacpp_timings_and_cached_tokens():
    pieces = [(1.1, tok(" a")), (1.2, tok(" b")), (1.3, FIN + _llama_final(2, 4) + DONE)]
    r = core.decode(raw_of(pieces, max_tokens=2, min_tokens=2))
    assert r.ok and r.finish_reason == "length" and r.cached_tokens == 4 and r.input_source == "server"
    assert r.timings == {"prompt_n": 6.0, "prompt_ms": 12.5, "predicted_n": 2.0, "predicted_ms": 60.0, "cache_n": 4.0}
    m = core.aggregate([r], 1.0, 1)
    assert m["server_mean_tpot_ms"] == 30.0 and m["server_median_prompt_ms"] == 12.5
    assert m["cached_prompt_tokens"] == 4 and m["cached_prompt_fraction"] == 0.4
    assert core.cache_warning(m) is not None


@pytest.mark.parametrize("tail, why", [
    (DONE, "without any finish_reason"),                                  # [DONE], no finish_reason
    (FIN + DONE, "2 of the 5 tokens"),                                  # early, with ignore_eos
    (FIN, "2 of the 5 tokens"),                                         # early, no [DONE] either
])
def test_short_streams_are_failures_with_their_reason(tail, why):
    pieces = [(1.1, tok(" a")), (1.2, tok(" b")), (1.3, tail)]
    r = core.decode(raw_of(pieces, max_tokens=5, min_tokens=5 if FIN in tail else 0, complete=True))
    assert not r.ok and r.error == "short" and why in r.detail
    assert r.output_tokens == 2
    ok = core.decode(raw_of([(1.1, tok(" a")), (1.2, FIN + DONE)], max_tokens=5))
    m = core.aggregate([r, ok], 1.0, 2)
    assert m["short"] == 1 and m["failed"] == 1 and m["completed"] == 1
    assert m["mean_ttft_ms"] == pytest.approx(100.0)   # only the completed request's TTFT
    assert (m["min_output_tokens"], m["max_output_tokens"]) == (1, 2)


def test_unknown_input_tokens_are_none_not_zero():
    r = core.decode(raw_of([(1.1, tok(" a")), (1.2, FIN + DONE)]))
    assert r.input_tokens is None and r.input_source is None
    m = core.aggregate([r], 1.0, 1)
    assert m["total_input_tokens"] is None and m["input_throughput"] is None
    r2 = core.decode(raw_of([(1.1, tok(" a")), (1.2, FIN + DONE)], prompt_tokens=7))
    m2 = core.aggregate([r2], 1.0, 1)
    assert m2["total_input_tokens"] == 7 and m2["input_tokens_client_counted"] == 1


def test_agreement_and_its_warning():
    assert core.agreement(98, 100) == 0.98 and core.agreement_warning(0.98, "x") is None
    assert "97.0%" in core.agreement_warning(core.agreement(97, 100), "tokens_predicted")
    assert core.agreement(10, 0) is None and core.agreement(10, None) is None
