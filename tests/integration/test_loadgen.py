"""`optlog bench` / `python -m optlog.loadgen` against the real test server (a subprocess on 127.0.0.1)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests._face import use_env
from tests._loadgen import LiveServer, loadgen


@pytest.fixture(scope="module")
def sched():
    """TTFT 50 ms, ITL 10 ms, 8 tokens: the schedule the accuracy test checks against."""
    s = LiveServer("--ttft-ms", "50", "--itl-ms", "10", "--tokens", "8")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def fast():
    s = LiveServer("--ttft-ms", "5", "--itl-ms", "1", "--tokens", "8")
    yield s
    s.stop()


def only(d):
    assert len(d["runs"]) == 1, d
    return d["runs"][0]


def test_schedule_accuracy_at_concurrency_1(sched):
    r = loadgen(sched.url, "--model", "m", "--concurrency", "1", "--num-prompts", "12", "--output-len", "8",
                "--input-len", "16", "--warmup", "2")
    assert r.code == 0, r.err
    m = only(r.json)["metrics"]
    assert m["completed"] == 12 and m["failed"] == 0
    # Never earlier than the schedule (the keep-alive comment is not a token; timing starts at send),
    # and at most a few ms late even on a loaded two-core machine (the bench checks 3 ms / 0.5 ms).
    assert 49.5 <= m["median_ttft_ms"] <= 62, m
    assert 9.0 <= m["median_itl_ms"] <= 12.0, m
    assert 9.0 <= m["mean_tpot_ms"] <= 12.5, m
    assert 50 + 7 * 10 - 1 <= m["median_e2e_latency_ms"] <= 50 + 7 * 10 + 20, m
    assert m["total_output_tokens"] == 12 * 8 and m["total_input_tokens"] == 12 * 16   # from usage
    assert 0.9 <= m["mean_inflight"] <= 1.0001


def test_sweep_records_one_run_per_level(ws, fast):
    d = ws.j("bench", fast.url, "--model", "m", "--concurrency", "1,4", "--num-prompts", "8", "--output-len", "4",
             "--input-len", "8", "--label", "config=tp8")
    assert [r["labels"]["concurrency"] for r in d["runs"]] == [1, 4]
    runs = ws.j("run", "list")["runs"]
    assert [r["id"] for r in runs] == [r["id"] for r in d["runs"]]
    for r, c in zip(runs, (1, 4)):
        assert r["source"] == "bench" and r["status"] == "succeeded"
        assert r["labels"] == {"concurrency": c, "request_rate": "inf", "dataset": "random", "model": "m",
                               "api": "completions", "input_len": 8, "output_len": 4, "num_prompts": 8,
                               "config": "tp8"}
        assert r["metrics"]["completed"] == 8 and r["metrics"]["max_concurrency"] == c
        assert r["metrics"]["output_throughput"] > 0 and "p99_ttft_ms" in r["metrics"]
    assert ws.j("run", "list", "--label", "concurrency=4")["runs"][0]["id"] == runs[1]["id"]


def _face(ws, monkeypatch):
    """The MCP face in-process on `ws`, with the environment the CLI subprocesses get."""
    from optlog.mcp.face import Face

    use_env(ws, monkeypatch, "XDG_RUNTIME_DIR")
    return Face(str(ws.root))


def test_the_bench_tool_takes_labels_and_extra_body_as_objects_and_gives_the_cli_document(ws, fast, monkeypatch):
    """The MCP tool gets labels as an object (a number among them) and the extra body as an object,
    not as `K=V` or JSON text: its document is the CLI's for the same values, and so are the runs it
    records (the measured figures differ run to run; everything else is equal)."""
    common = ["--model", "m", "--concurrency", "1", "--num-prompts", "2", "--input-len", "4", "--output-len", "2"]
    cli = ws.j("bench", fast.url, *common, "--label", "config=tp8", "--label", "n=8",
               "--extra-body", '{"min_tokens": 2}')
    face = _face(ws, monkeypatch)
    try:
        doc, is_error, code = face.call("bench", {
            "url": fast.url, "model": "m", "concurrency": "1", "num_prompts": 2, "input_len": 4, "output_len": 2,
            "labels": {"config": "tp8", "n": 8}, "extra_body": {"min_tokens": 2}})
        assert not is_error and code == 0, doc
        bad, is_error, code = face.call("bench", {"url": fast.url, "model": "m", "extra_body": [1]})
        assert is_error and code == 2 and bad["error"]["field"] == "extra_body", bad
        bad, is_error, code = face.call("bench", {"url": fast.url, "model": "m", "labels": {"n": "a\nb"}})
        assert is_error and code == 2 and bad["error"]["field"] == "labels", bad
    finally:
        face.close()

    def same(d):
        return [{k: v for k, v in r.items() if k not in ("id", "metrics", "recorded_at")} for r in d["runs"]]

    assert same(doc) == same(cli) and doc["recorded"] is cli["recorded"] is True
    # the metrics named alike, but for the phase windows: a 2-token decode has a window of its own only
    # when the tokens arrived in two reads, which depends on timing (it differed once on a busy machine)
    phase = ("decode_", "prefill_", "mean_decoding", "mean_prefilling")
    names = lambda d: {k for k in d["runs"][0]["metrics"] if not k.startswith(phase)}  # noqa: E731
    assert names(doc) == names(cli) and "output_throughput" in names(doc)
    assert doc["runs"][0]["labels"]["n"] == "8" and doc["runs"][0]["metrics"]["completed"] == 2
    runs = ws.j("run", "list")["runs"]
    assert len(runs) == 2 and runs[0]["labels"] == runs[1]["labels"] and runs[1]["labels"]["n"] == 8
    assert ws.j("run", "show", str(runs[1]["id"]))["raw"]["labels"]["n"] == "8"


def test_no_workspace_runs_with_a_notice_and_records_nothing(tmp_path, fast):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "optlog", "bench", fast.url, "--model", "m", "--num-prompts", "3",
                        "--output-len", "2", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "no optlog workspace" in p.stderr
    d = json.loads(p.stdout)
    assert d["recorded"] is False and d["runs"][0]["id"] is None and d["runs"][0]["metrics"]["completed"] == 3
    assert list(tmp_path.iterdir()) == []


def test_poisson_arrivals_follow_the_seeded_schedule(fast):
    from optlog.loadgen import core

    args = (fast.url, "--model", "m", "--concurrency", "64", "--num-prompts", "20", "--output-len", "2",
            "--request-rate", "40", "--seed", "3")
    r = loadgen(*args)
    assert r.code == 0, r.err
    m = only(r.json)["metrics"]
    offsets = core.poisson_offsets(20, 40.0, 3)
    # the level lasts the last arrival plus one short request; arrivals were not all at once
    assert offsets[-1] <= m["duration"] <= offsets[-1] + 0.5, (offsets[-1], m["duration"])
    assert m["mean_inflight"] < 3
    assert only(r.json)["labels"]["request_rate"] == 40


@pytest.mark.parametrize("mode,kind", [("500", "http_5xx"), ("refuse", "disconnected"), ("cut", "stream_cut")])
def test_error_kinds_are_counted_and_the_run_completes(fast, mode, kind):
    r = loadgen(fast.url, "--model", "m", "--concurrency", "2", "--num-prompts", "4", "--output-len", "6",
                "--header", f"X-Test-Mode:{mode}")
    assert r.code == 1, r.err     # no request succeeded: exit 1, but a full report
    run = only(r.json)
    assert run["metrics"]["failed"] == 4 and run["metrics"]["completed"] == 0
    assert run["errors"] == {kind: 4}
    assert run["status"] == "failed" and kind in run["example_error"]
    assert run["metrics"]["total_output_tokens"] == 0   # a cut stream is never counted as full length


def test_http_4xx(fast):
    r = loadgen(fast.url + "/nope/completions", "--model", "m", "--num-prompts", "2", "--output-len", "2")
    assert r.code == 1 and only(r.json)["errors"] == {"http_4xx": 2}


def test_stalled_server_is_no_first_token(fast):
    r = loadgen(fast.url, "--model", "m", "--concurrency", "2", "--num-prompts", "2", "--timeout", "0.5",
                "--header", "X-Test-Mode:stall")
    assert r.code == 1
    run = only(r.json)
    assert run["errors"] == {"no_first_token": 2}
    assert 400 <= run["metrics"]["duration"] * 1000 <= 3000


def test_connection_refused():
    s = LiveServer("--refuse")
    try:
        r = loadgen(s.url, "--model", "m", "--num-prompts", "3", "--concurrency", "1")
    finally:
        s.stop()
    assert r.code == 1
    assert only(r.json)["errors"] == {"connect": 3}


def test_cut_stream_counts_what_arrived_and_mixed_levels_succeed(tmp_path):
    s = LiveServer("--ttft-ms", "2", "--itl-ms", "1", "--tokens", "16", "--mode", "cut", "--cut-after", "3")
    try:
        r = loadgen(s.url, "--model", "m", "--num-prompts", "3", "--output-len", "16")
    finally:
        s.stop()
    run = only(r.json)
    assert run["errors"] == {"stream_cut": 3} and run["metrics"]["total_output_tokens"] == 0
    from optlog.loadgen import core  # the decoder, per request: 3 tokens arrived, not 16

    pieces = [(1.0 + i, b'data: {"choices":[{"text":" t"}]}\n\n') for i in range(3)]
    res = core.decode(core.Raw(index=0, start=1.0, end=4.0, status=200, chunks=pieces, error="stream_cut"))
    assert not res.ok and res.output_tokens == 3


def test_max_failures_aborts_and_skips_levels(fast):
    r = loadgen(fast.url, "--model", "m", "--concurrency", "1,2", "--num-prompts", "200", "--max-failures", "3",
                "--header", "X-Test-Mode:500")
    assert r.code == 1
    d = r.json
    assert len(d["runs"]) == 1
    run = d["runs"][0]
    assert run["aborted"] and run["metrics"]["failed"] == 4 and run["metrics"]["completed"] == 0


def test_usage_versus_counted_tokens():
    s = LiveServer("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "8", "--no-usage")
    try:
        r = loadgen(s.url, "--model", "m", "--num-prompts", "4", "--output-len", "5", "--input-len", "10")
    finally:
        s.stop()
    m = only(r.json)["metrics"]
    assert m["total_output_tokens"] == 20          # counted from the stream
    # no usage: counted client-side from the prompts optlog built (10 words each), never reported as 0
    assert m["total_input_tokens"] == 40 and m["input_throughput"] > 0
    assert m["input_tokens_client_counted"] == 4
    assert any("no usage" in w and "client-side" in w for w in only(r.json)["warnings"])


def test_length_warnings_from_usage(fast):
    # the test server counts prompt words as tokens: 40 words are 40 tokens, no warning
    r = loadgen(fast.url, "--model", "m", "--num-prompts", "3", "--output-len", "8", "--input-len", "40")
    assert only(r.json)["warnings"] == []
    # the server stops early (--extra-body overrides max_tokens): usage says 2, --output-len 8
    r = loadgen(fast.url, "--model", "m", "--num-prompts", "3", "--output-len", "8", "--input-len", "40",
                "--extra-body", '{"max_tokens": 2}')
    w = only(r.json)["warnings"]
    assert len(w) == 1 and "output length" in w[0] and "(-75%)" in w[0]


def test_chat_api_and_warmup_not_counted(fast):
    before = fast.metrics()["sglang:num_requests_total"]
    r = loadgen(fast.url, "--model", "m", "--api", "chat", "--num-prompts", "5", "--warmup", "3",
                "--output-len", "3", "--concurrency", "2")
    assert r.code == 0, r.err
    run = only(r.json)
    assert run["metrics"]["completed"] == 5 and run["labels"]["api"] == "chat"
    assert fast.metrics()["sglang:num_requests_total"] - before == 8


def test_dataset_sharegpt_json_and_jsonl(fast, tmp_path):
    conv = [{"conversations": [{"from": "human", "value": "one two three"}, {"from": "gpt", "value": "a b c d e f"}]},
            {"conversations": [{"from": "system", "value": "x"}, {"from": "human", "value": "four five"},
                               {"from": "gpt", "value": "g h i"}]},
            {"conversations": []}]
    f = tmp_path / "share.json"
    f.write_text(json.dumps(conv))
    # --reuse-prompts: the records' text as it is (by default each level's prompts carry a fresh tag)
    r = loadgen(fast.url, "--model", "m", "--dataset", str(f), "--num-prompts", "4", "--reuse-prompts")
    assert r.code == 0, r.err
    run = only(r.json)
    assert run["labels"]["dataset"] == "share.json" and "input_len" not in run["labels"]
    m = run["metrics"]
    assert m["completed"] == 4
    # prompts are 3 and 2 words; replies ~6 and 3 words → max_tokens 8 and 4
    assert m["total_input_tokens"] in (3 * 2 + 2 * 2, 3 * 3 + 2, 3 + 2 * 3)
    g = tmp_path / "msgs.jsonl"
    g.write_text('{"messages": [{"role": "user", "content": "hello there"}]}\n\n{"prompt": "a b c", "output_len": 2}\n')
    r = loadgen(fast.url, "--model", "m", "--dataset", str(g), "--output-len", "3")
    assert r.code == 0, r.err
    m = only(r.json)["metrics"]
    # 5 words of prompts, plus one fresh tag per prompt (the default: no level is served from a prompt cache)
    assert m["completed"] == 2 and m["total_output_tokens"] == 6 and m["total_input_tokens"] == 5 + 2


def test_output_file_jsonl_round_trip(fast, tmp_path):
    out = tmp_path / "res.jsonl"
    r = loadgen(fast.url, "--model", "m", "--concurrency", "1,3", "--num-prompts", "6", "--output-len", "4",
                "--input-len", "10", "--output-file", str(out), "--tag", "t1")
    assert r.code == 0, r.err
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["max_concurrency"] for x in lines] == [1, 3]
    for x, run in zip(lines, r.json["runs"]):
        for k in ("backend", "dataset_name", "request_rate", "duration", "completed", "total_input_tokens",
                  "total_output_tokens", "request_throughput", "input_throughput", "output_throughput",
                  "total_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
                  "mean_itl_ms", "p95_itl_ms", "mean_e2e_latency_ms", "concurrency", "random_input_len",
                  "random_output_len"):
            assert k in x, k
        assert x["tag"] == "t1" and x["request_rate"] == float("inf") and x["total_output_tokens"] == 24
        assert x["mean_ttft_ms"] == pytest.approx(run["metrics"]["mean_ttft_ms"])
        assert x["labels"]["concurrency"] == x["max_concurrency"]
    # a second run appends, as SGLang's --output-file does
    loadgen(fast.url, "--model", "m", "--num-prompts", "1", "--output-len", "1", "--output-file", str(out))
    assert len(out.read_text().splitlines()) == 3


def test_output_file_reads_back_through_run_import(make_ws, fast, tmp_path):
    import importlib.util

    if importlib.util.find_spec("optlog.api.imports") is None:
        pytest.skip("run import (branch parsers, format optlog = sglang) is not merged here")
    ws = make_ws()
    out = tmp_path / "res.jsonl"
    loadgen(fast.url, "--model", "m", "--concurrency", "2", "--num-prompts", "4", "--output-len", "3",
            "--output-file", str(out))
    r = ws.cli("run", "import", str(out), "--format", "optlog", "--json", check=False)
    assert r.code == 0, r.err
    runs = ws.j("run", "list")["runs"]
    assert runs and runs[0]["metrics"]["completed"] == 4


@pytest.mark.parametrize("args,field", [
    (["ftp://127.0.0.1:1", "--model", "m"], "URL"),
    (["not a url", "--model", "m"], "URL"),
    (["http://127.0.0.1:1", "--model", "m", "--concurrency", "1,x"], "--concurrency"),
    (["http://127.0.0.1:1", "--model", "m", "--request-rate", "fast"], "--request-rate"),
    (["http://127.0.0.1:1", "--model", "m", "--num-prompts", "0"], "--num-prompts"),
    (["http://127.0.0.1:1", "--model", "m", "--header", "X-Key:${OPTLOG_TEST_SURELY_UNSET}"], "--header"),
    (["http://127.0.0.1:1", "--model", "m", "--extra-body", "[1]"], "--extra-body"),
    (["http://127.0.0.1:1", "--model", "m", "--extra-body", "{broken"], "--extra-body"),
    (["http://127.0.0.1:1", "--model", "m", "--label", "bad key=v"], "--label"),
    (["http://127.0.0.1:1", "--model", "m", "--label", "novalue"], "--label"),
    (["http://127.0.0.1:1/v1/completions", "--model", "m", "--api", "chat"], "URL"),
])
def test_bad_input_exit_2_writes_nothing(tmp_path, args, field):
    out = tmp_path / "o.jsonl"
    r = loadgen(*args, "--output-file", str(out))
    assert r.code == 2, r.err
    assert r.json["error"]["field"] == field, r.json
    assert not out.exists()


def test_bad_input_in_a_workspace_records_nothing(ws, fast, tmp_path):
    g = tmp_path / "bad.jsonl"
    g.write_text('{"prompt": "ok"}\n{broken\n')
    out = tmp_path / "o.jsonl"
    r = ws.cli("bench", fast.url, "--model", "m", "--dataset", str(g), "--output-file", str(out), "--json", check=2)
    e = r.json["error"]
    assert e["line"] == 2 and e["file"] == str(g) and e["field"] == "--dataset"
    r = ws.cli("bench", fast.url, "--model", "m", "--concurrency", "1,x", "--output-file", str(out), "--json", check=2)
    assert r.json["error"]["field"] == "--concurrency"
    assert not out.exists() and ws.j("run", "list")["runs"] == []
    assert fast.metrics()["sglang:num_requests_total"] >= 0


def test_secrets_are_sent_never_stored(ws, fast, tmp_path):
    out = tmp_path / "o.jsonl"
    env = {"OPTLOG_BENCH_API_KEY": "sk-sekrit-1", "MY_TOKEN": "tok-sekrit-2"}
    ws.cli("bench", fast.url, "--model", "m", "--num-prompts", "2", "--output-len", "2", "--output-file", str(out),
           "--header", "X-Extra: ${MY_TOKEN}", env=env)
    blob = ws.cli("run", "show", "1", "--json").out + out.read_text()
    assert "sekrit" not in blob
    db = ws.root / ".optlog" / "optlog.db"
    if db.exists():
        con = sqlite3.connect(db)
        dump = "\n".join(con.iterdump())
        con.close()
        assert "sekrit" not in dump


def test_1024_concurrent_streams_without_errors():
    s = LiveServer("--ttft-ms", "20", "--itl-ms", "1", "--tokens", "16")
    try:
        r = loadgen(s.url, "--model", "m", "--concurrency", "1024", "--num-prompts", "1024", "--output-len", "16",
                    "--input-len", "4", timeout=180)
    finally:
        s.stop()
    assert r.code == 0, r.err
    m = only(r.json)["metrics"]
    assert m["completed"] == 1024 and m["failed"] == 0 and m["total_output_tokens"] == 1024 * 16
    assert m["max_concurrent_requests"] >= 512


def test_python_m_loadgen_help_and_module_import_cost():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "optlog.loadgen", "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "--concurrency" in p.stdout
    # `optlog bench` is lazy: other commands do not import the load generator
    code = "import sys, optlog.cli.main; print('optlog.loadgen.client' in sys.modules, 'httptools' in sys.modules)"
    q = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert q.stdout.split() == ["False", "False"]
    assert Path(__file__).resolve().parents[1].joinpath("testserver.py").is_file()


def test_result_line_carries_the_measured_phase_on_the_wall_clock(tmp_path):
    """Issue 30: telemetry summarises counters over the requests' decode stretches, so the result line
    gives them (unix seconds, inside the measured start/end, joined where they overlap)."""
    import subprocess
    import sys
    import time

    srv = LiveServer("--ttft-ms", "5", "--itl-ms", "20", "--tokens", "6")   # tokens in separate reads
    t0 = time.time()
    out = tmp_path / "r.jsonl"
    try:
        p = subprocess.run([sys.executable, "-m", "optlog.loadgen", srv.url, "--model", "m", "--num-prompts", "3",
                            "--output-len", "6", "--output-file", str(out)], capture_output=True, text=True, timeout=60)
    finally:
        srv.stop()
    assert p.returncode == 0, p.stderr
    w = json.loads(out.read_text().splitlines()[0])["windows"]
    a, b = w["measured"]
    assert t0 < a < b < time.time()
    assert w["decode"] and all(a <= x < y <= b + 1e-3 for x, y in w["decode"])
    assert all(w["decode"][i][1] < w["decode"][i + 1][0] for i in range(len(w["decode"]) - 1))
