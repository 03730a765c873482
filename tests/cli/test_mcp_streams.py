"""Streams an MCP client (or a CLI user) can aim at optlog (issue 42, item 5), against a real
`optlog mcp` process over stdio, driven line by line so a test can also stop reading:

- an import reads regular files only, of a bounded size: /dev/zero, a FIFO with no writer, a
  socket, a folder and a (sparse) file past the limit are refused by name at once, by the MCP tool
  and the CLI alike, and the server answers the next call;
- a number outside its domain (`bench` num_prompts 10**20) is refused before any work;
- a call behind a long one is answered (`busy`) within a bound, and the long one sends progress;
- at the end of input the server leaves promptly even when the client never read its answers
  (stdout and stderr pipes full), and holds no lock afterwards."""

from __future__ import annotations

import json
import os
import queue
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from _launch import bench_cmd, spec, wait_for
from optlog.core.limits import LIMITS

ANSWER_S = 30  # every answer comes within this on a loaded machine (the defects: never, or 40-60 s)


class Raw:
    """`optlog mcp` as a process; JSON-RPC lines written and read by hand. `read=False`: nobody
    reads its stdout or stderr (the pipes fill up)."""

    def __init__(self, ws: Any, *, read: bool = True, env: dict[str, str] | None = None) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "optlog", "mcp", "-C", str(ws.root)], cwd=ws.root,
                                  env={**ws.env, **(env or {})}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.q: queue.Queue[dict[str, Any]] = queue.Queue()
        self.n = 0
        self.send({"method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                      "clientInfo": {"name": "t", "version": "1"}}}, rid=0)
        assert self._line(ANSWER_S)["id"] == 0  # read by hand, before any reader thread
        self.send({"method": "notifications/initialized"}, rid=None)
        if read:
            threading.Thread(target=self._pump, daemon=True).start()
            threading.Thread(target=self._drain_err, daemon=True).start()

    def _line(self, timeout: float) -> dict[str, Any]:
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        assert r, "no answer"
        return json.loads(self.p.stdout.readline())  # type: ignore[union-attr]

    def _pump(self) -> None:
        for line in self.p.stdout:  # type: ignore[union-attr]
            self.q.put(json.loads(line))

    def _drain_err(self) -> None:
        for _ in self.p.stderr:  # type: ignore[union-attr]
            pass

    def send(self, msg: dict[str, Any], rid: int | None = -1) -> int:
        if rid == -1:
            self.n += 1
            rid = self.n
        doc = {"jsonrpc": "2.0", **msg, **({"id": rid} if rid is not None else {})}
        self.p.stdin.write((json.dumps(doc) + "\n").encode())  # type: ignore[union-attr]
        self.p.stdin.flush()  # type: ignore[union-attr]
        return rid or 0

    def call(self, name: str, args: dict[str, Any], progress: str | None = None) -> int:
        params: dict[str, Any] = {"name": name, "arguments": args}
        if progress:
            params["_meta"] = {"progressToken": progress}
        return self.send({"method": "tools/call", "params": params})

    def answer(self, rid: int, timeout: float = ANSWER_S, seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"request {rid} unanswered after {timeout}s"
            try:
                m = self.q.get(timeout=left)
            except queue.Empty:
                continue
            if m.get("id") == rid:
                return m["result"] if "result" in m else m
            if seen is not None:
                seen.append(m)

    def tool(self, name: str, args: dict[str, Any], timeout: float = ANSWER_S) -> dict[str, Any]:
        return self.answer(self.call(name, args), timeout)

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(10)


def _error(res: dict[str, Any]) -> dict[str, Any]:
    assert res.get("isError"), res
    return res["structuredContent"]["error"]


@pytest.fixture
def hostile_paths(tmp_path: Path):
    """A FIFO with no writer, a listening socket, a folder, a sparse file one byte past the limit."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(sock_path))
    srv.listen(1)
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(LIMITS.result_bytes + 1)  # no disk used: a hole
    folder = tmp_path / "folder"
    folder.mkdir()
    try:
        yield {"/dev/zero": "not_a_file", str(fifo): "not_a_file", str(sock_path): "not_a_file",
               str(folder): "not_a_file", str(big): "too_large"}
    finally:
        srv.close()


def test_imports_read_regular_files_only_through_mcp_and_the_cli(ws, hostile_paths):
    s = Raw(ws)
    try:
        for path, code in hostile_paths.items():
            t0 = time.monotonic()
            e = _error(s.tool("run_import", {"files": [path]}))
            assert e["code"] == code and e["file"] == path and e["field"] == "files", (path, e)
            assert time.monotonic() - t0 < ANSWER_S
        # the server still answers, and nothing was imported
        st = s.tool("status", {})
        assert not st.get("isError") and st["structuredContent"]["runs_total"] == 0, st
    finally:
        s.close()
    for path, code in list(hostile_paths.items())[:2]:  # the CLI goes through the same reader
        r = ws.cli("run", "import", path, "--json", check=2, subprocess=True, timeout=ANSWER_S)
        assert r.json["error"]["code"] == code, r.out


def test_a_number_outside_its_domain_is_refused_before_any_work(ws):
    s = Raw(ws)
    try:
        e = _error(s.tool("bench", {"url": "http://127.0.0.1:9", "num_prompts": 10**20}))
        assert e["field"] == "num_prompts" and e["code"] in ("usage", "out_of_range"), e  # past any integer
        for args, field in (({"num_prompts": 10**9}, "num_prompts"), ({"input_len": 10**9}, "input_len"),
                            ({"num_prompts": 100_000, "input_len": 100_000}, "num_prompts"),
                            ({"concurrency": "1,1000000000"}, "concurrency"), ({"warmup": 10**12}, "warmup")):
            e = _error(s.tool("bench", {"url": "http://127.0.0.1:9", **args}))
            assert e["code"] == "out_of_range" and e["field"] == field, (args, e)
        assert not s.tool("status", {}).get("isError")  # and the next call is answered at once
    finally:
        s.close()
    r = ws.cli("bench", "http://127.0.0.1:9", "--num-prompts", str(10**9), "--json", check=2, subprocess=True,
               timeout=ANSWER_S)
    assert r.json["error"]["code"] == "out_of_range" and r.json["error"]["field"] == "--num-prompts", r.out


def test_a_call_behind_a_long_one_is_answered_busy_and_the_long_one_sends_progress(ws, tmp_path):
    go = tmp_path / "go"
    rel = spec(ws, "held", server=False, bench={"cmd": bench_cmd(f"--until {go}")})
    lid = ws.j("run", "launch", rel, "--detach")["ref"]
    wait_for(lambda: any((ws.root / ".optlog" / "runs").glob("*/argv.json")), 60, "the bench to start")
    s = Raw(ws, env={"OPTLOG_MCP_WAIT_S": "1"})
    try:
        long = s.call("run_wait", {"ref": lid, "timeout_s": 120}, progress="p1")
        seen: list[dict[str, Any]] = []  # the long call says it is alive (so it is the one running)
        deadline = time.monotonic() + ANSWER_S
        while not any(m.get("method") == "notifications/progress" for m in seen) and time.monotonic() < deadline:
            try:
                seen.append(s.q.get(timeout=1))
            except queue.Empty:
                pass
        prog = [m for m in seen if m.get("method") == "notifications/progress"]
        assert prog and prog[0]["params"]["progressToken"] == "p1", seen
        t0 = time.monotonic()
        e = _error(s.tool("status", {}))  # a call behind it is answered, not left waiting
        assert e["code"] == "busy" and e["running"] == "run_wait", e
        assert time.monotonic() - t0 < ANSWER_S
        go.write_text("go")
        done = s.answer(long, timeout=120)
        assert done["structuredContent"]["status"] == "succeeded", done
        assert not s.tool("status", {}).get("isError")  # free again
    finally:
        go.write_text("go")
        s.close()


def test_the_server_leaves_at_end_of_input_though_the_client_never_read(ws):
    ws.cli("hypothesis", "add", "comm", "--id", "comm")
    for cfg, v in (("tp8", 100), ("tp4", 50)):
        ws.cli("run", "record", "--label", f"config={cfg}", "--metric", f"tput={v}")
    ws.cli("prediction", "add", "comm", "--expect", "a > b", "--metric", "tput", "--a", "config=tp4",
           "--b", "config=tp8")
    s = Raw(ws, read=False)
    try:
        for i in range(60):  # far more answers than a pipe holds (64 KiB), and verdicts that narrate
            s.call("verdict" if i % 3 == 0 else "agent_tools", {"all": True} if i % 3 == 0 else {})
        wait_for(lambda: _pipe_full(s.p.stdout), ANSWER_S, "the server's stdout pipe to fill")
        s.p.stdin.close()  # type: ignore[union-attr]
        t0 = time.monotonic()
        try:
            s.p.wait(ANSWER_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the server was still running {ANSWER_S}s after the end of its input") from None
        assert time.monotonic() - t0 < ANSWER_S
    finally:
        s.close()
    r = ws.cli("verdict", "--all", "--json", check=False)  # no lock is left held
    assert r.code in (0, 1) and "error" not in r.json, r.out  # (falsified is exit 0; no `locked`)
    ws.cli("hypothesis", "add", "after", "--id", "after")  # and a write commits


def _pipe_full(f: Any) -> bool:
    """The server's end of pipe `f` cannot take another answer: what waits in it is near its size."""
    import fcntl
    import termios

    size = fcntl.fcntl(f.fileno(), 1032)  # F_GETPIPE_SZ
    waiting = int.from_bytes(fcntl.ioctl(f.fileno(), termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
    return waiting > size - 16384  # an answer is up to 16 KB


def test_a_call_with_a_key_said_twice_is_refused_naming_it(ws):
    """`metrics: {"m": 1, "m": 2}` from an agent recorded m=2 without a word (the JSON-RPC line is
    read by a reader that keeps the last key): the call is answered with a usage error naming the
    key, nothing recorded, and the server goes on."""
    s = Raw(ws)
    try:
        line = ('{"jsonrpc": "2.0", "id": 70, "method": "tools/call", "params": {"name": "run_record", '
                '"arguments": {"labels": {"g": "s"}, "metrics": {"m": 1, "m": 2}}}}\n')
        s.p.stdin.write(line.encode())  # type: ignore[union-attr]
        s.p.stdin.flush()  # type: ignore[union-attr]
        err = _error(s.answer(70))
        assert err["code"] == "duplicate_key" and err["field"] == "metrics.m", err
        assert "duplicate key 'm'" in err["message"], err
        assert s.tool("run_list", {})["structuredContent"]["runs"] == []
    finally:
        s.close()


def test_any_message_with_a_key_said_twice_is_refused_naming_it(ws):
    """Only a tools/call's arguments were checked: `resources/read {"uri": a, "uri": b}`, a
    tools/call naming its tool twice, or a `tools/list` with a key twice in its params reached the
    SDK, whose reader keeps the last value. Each request is answered with a JSON-RPC error naming
    the key (optlog's duplicate_key error in its data), nothing runs, and the server goes on."""
    s = Raw(ws)
    try:
        lines = {
            71: '{"jsonrpc": "2.0", "id": 71, "method": "resources/read", "params": {"uri": "optlog://a", "uri": "optlog://b"}}',
            72: ('{"jsonrpc": "2.0", "id": 72, "method": "tools/call", "params": {"name": "run_list", "name": "run_record", '
                 '"arguments": {"labels": {"g": "s"}, "metrics": {"m": 1}}}}'),
            73: '{"jsonrpc": "2.0", "id": 73, "method": "tools/list", "params": {"cursor": "a", "cursor": "b"}}',
        }
        for rid, line in lines.items():
            s.p.stdin.write((line + "\n").encode())  # type: ignore[union-attr]
            s.p.stdin.flush()  # type: ignore[union-attr]
            res = s.answer(rid)
            assert "error" in res and "result" not in res, res
            err = res["error"]
            key = {71: "uri", 72: "name", 73: "cursor"}[rid]
            assert f"duplicate key '{key}'" in err["message"], err
            assert err["data"]["error"]["code"] == "duplicate_key", err
        s.p.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1, "progress": 2, '
                        b'"progressToken": "t"}}\n')  # type: ignore[union-attr]  # no answer to a notification
        s.p.stdin.flush()  # type: ignore[union-attr]
        assert s.tool("run_list", {})["structuredContent"]["runs"] == []  # run_record did not run; the server goes on
    finally:
        s.close()
