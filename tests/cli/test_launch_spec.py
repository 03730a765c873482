"""Run specs: templating (split first, then substitute), sweep planning, failure causes, and spec
validation errors through the real CLI (file, line, field; exit 2; nothing written)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from optlog.core import template as T
from optlog.core.failure import classify
from optlog.core.sweep import expand, group_order
from optlog.runs import procs

from _launch import spec


def test_values_never_split_or_inject():
    vals = {"v": "; rm -rf ~", "a": "a b", "c": 64, "model": "/m/GLM 5"}
    argv = T.render_argv('''prog --x {{ v }} --y {{a}} "--z={{ a }}" --n {{ c * 4 }} '{"temperature": 0, "x": {"y": 1}}' --m {{   model }}''',
                         vals)
    assert argv == ["prog", "--x", "; rm -rf ~", "--y", "a b", "--z=a b", "--n", "256", '{"temperature": 0, "x": {"y": 1}}',
                    "--m", "/m/GLM 5"]


def test_placeholder_with_spaces_is_one_piece_of_its_word():
    assert T.split("run --out {{ out }}/result.jsonl x{{ a  +  b }}y") == ["run", "--out", "{{ out }}/result.jsonl",
                                                                            "x{{ a  +  b }}y"]
    assert T.render_argv("x{{ a  +  b }}y", {"a": 1, "b": 2}) == ["x3y"]


def test_arithmetic_and_its_limits():
    assert T.evaluate("concurrency * 4", {"concurrency": 64}) == 256
    assert T.evaluate("(tp * pp) // 2 + 1", {"tp": 4, "pp": 2}) == 5
    assert T.evaluate("max(c, 8)", {"c": "4"}) == 8  # --set values arrive as text
    assert T.render("{{ c / 2 }}", {"c": 64}) == "32"
    for bad in ("__import__('os').system('x')", "a.b", "[1][0]", "lambda: 1", "a if b else c", "open('f')"):
        with pytest.raises(T.TemplateError):
            T.evaluate(bad, {"a": 1, "b": 1, "c": 1})
    with pytest.raises(T.TemplateError) as e:
        T.render("--x {{ nope }}", {})
    assert e.value.names == ("nope",)
    with pytest.raises(T.TemplateError):
        T.evaluate("2 ** 100000", {})
    with pytest.raises(T.TemplateError):
        T.evaluate("x * 2", {"x": "abc"})


def test_matrix_crossed_with_include_and_grouped_by_server():
    pts = expand({"c": [1, 2]}, [{"config": "tp8", "tp": 8}, {"config": "tp4pp2", "tp": 4, "pp": 2}])
    assert pts == [{"config": "tp8", "tp": 8, "c": 1}, {"config": "tp8", "tp": 8, "c": 2},
                   {"config": "tp4pp2", "tp": 4, "pp": 2, "c": 1}, {"config": "tp4pp2", "tp": 4, "pp": 2, "c": 2}]
    assert expand({}, []) == [{}]
    assert group_order([("a", 1), ("b", 2), ("a", 3), ("b", 4)], key=lambda x: x[0]) == [("a", 1), ("a", 3), ("b", 2), ("b", 4)]


@pytest.mark.parametrize("text,cause", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "out_of_memory"),
    ("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 "
     "milliseconds before timing out", "nccl_timeout"),
    ("RuntimeError: Capture cuda graph failed: CUDA error: operation not permitted when stream is capturing",
     "cuda_graph_capture"),
    ("OSError: [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use",
     "port_in_use"),
    ("all good", None),
])
def test_failure_causes(text, cause):
    assert classify(text) == cause


def test_killed_by_signal_cause():
    assert classify("", -9) == "killed"


def test_reused_pid_is_never_hit():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        start = procs.start_ticks(p.pid)
        assert start is not None
        # a record whose start time differs (the PID was reused by this process): nothing is touched
        assert procs.ours(p.pid, start + 1) == []
        assert procs.kill_group(p.pid, start + 1, grace_s=0.1) is True
        time.sleep(0.1)
        assert p.poll() is None
        assert procs.kill_group(p.pid, start, grace_s=2.0, reap=p.poll) is True
        assert p.wait(2) == -signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()


def _nothing_written(ws):
    assert ws.j("run", "list")["runs"] == []
    assert not (ws.root / ".optlog" / "launches").exists()
    assert not (ws.root / ".optlog" / "runs").exists()


BAD = [
    (lambda t: t.replace("bench:\n  cmd:", "bench:\n  cmnd:"), "bench.cmd", "cmnd"),  # the missing key is reported
    (lambda t: t.replace("--out {{ out }}", "--out {{ outt }}"), "bench.cmd", "cmd"),
    (lambda t: t + "repeats: 0\n", "repeats", "repeats"),
    (lambda t: t + "on_error: maybe\n", "on_error", "on_error"),
    (lambda t: t.replace("expect_regex: Paris", "expect_regex: '(Paris'"), "server.check.expect_regex", "expect_regex"),
    (lambda t: t + "executor: {kubernetes: {}}\n", "executor", "executor"),
    (lambda t: t + "matrix: {concurrency: []}\n".replace("matrix", "matrix2"), "matrix2", "matrix2"),
]


def test_bad_specs_name_file_line_field_and_write_nothing(ws):
    rel = spec(ws, "bad")
    p = ws.root / rel
    good = p.read_text()
    for mutate, field, line_has in BAD:
        text = mutate(good)
        assert text != good
        p.write_text(text)
        r = ws.cli("run", "launch", rel, "--json", check=2)
        err = r.json["error"]
        assert err["file"] == rel and err["field"] == field, err
        assert line_has in text.splitlines()[err["line"] - 1], (err, text)
        assert not (ws.root / ".optlog" / "launches").exists()
    _nothing_written(ws)


def test_unknown_placeholder_in_include_only_point_and_bad_set(ws):
    rel = spec(ws, "inc", include=[{"config": "a", "extra": 1}, {"config": "b"}],
               bench={"cmd": "{{ py }} -c pass {{ extra }} {{ out }}"})
    r = ws.cli("run", "launch", rel, "--json", check=2)
    assert r.json["error"]["field"] == "bench.cmd" and "extra" in r.json["error"]["message"]
    rel = spec(ws, "ok")
    r = ws.cli("run", "launch", rel, "--set", "out=/etc", "--json", check=2)
    assert r.json["error"]["field"] == "--set"
    r = ws.cli("run", "launch", rel, "--hypothesis", "nope", "--json", check=2)
    r = ws.cli("run", "launch", "runs/missing.yaml", "--json", check=2)
    assert r.json["error"]["field"] == "SPEC"
    r = ws.cli("run", "launch", rel, "--server-url", "localhost", "--json", check=2)
    assert r.json["error"]["field"] == "--server-url"
    _nothing_written(ws)
