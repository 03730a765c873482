"""What an agent's session costs before any work and per call (issue 31 item 4): `tools/list` at
most 16 KB with every tool and its required parameters; every result at most 16 KB even with
`detail`, saying what was cut and how to ask for the rest; `initialize` in at most 1.5x the time
`import mcp` takes in the same run. One server process for all of it."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import yaml

from tests._face import face, ok

LIMIT = 16 * 1024


def _rpc(p, mid, method, params=None):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": mid, "method": method, "params": params or {}}) + "\n").encode())
    p.stdin.flush()
    line = p.stdout.readline()
    return line, json.loads(line)


def test_initialize_and_tools_list_are_cheap_and_every_tool_is_listed(ws):
    p = subprocess.Popen([sys.executable, "-m", "optlog", "mcp", "-C", str(ws.root)], env=ws.env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        t0 = time.perf_counter()
        _rpc(p, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "test", "version": "1"}})
        init_s = time.perf_counter() - t0
        p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        line, listed = _rpc(p, 2, "tools/list")
    finally:
        p.kill()
        p.wait()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp"], env=ws.env, check=True)
    import_s = time.perf_counter() - t0
    assert init_s <= 1.5 * import_s, (init_s, import_s)
    assert len(line) <= LIMIT, len(line)

    from optlog.mcp.tools import tools

    every = tools()
    got = {t["name"]: t for t in listed["result"]["tools"]}
    assert set(got) == set(every)
    for name, t in every.items():  # every required parameter is there, with its type
        schema = got[name]["inputSchema"]
        assert set(schema.get("required", [])) == {n for n, p in t.params.items() if p.required}, name
        assert all("type" in s for s in schema["properties"].values()), name
        hidden = [n for n in t.params if n not in schema["properties"] and n not in ("limit", "offset", "order",
                                                                                   "fields", "detail", "tail")]
        assert all(n in got[name]["description"] for n in hidden), (name, hidden)  # named, at least
    assert got["prediction_add"]["inputSchema"]["properties"]["a"]["description"].endswith('{"config": "tp4pp2"}.')


def test_every_result_is_bounded_even_with_detail_and_agent_tools_has_the_rest(ws, monkeypatch):
    preds = [{"id": f"big.p{i}", "version": 1, "expect": "a > b", "metric": f"metric_{i}_" + "x" * 200,
              "a": {"config": "x" * 100}, "b": {"config": "y" * 100}, "margin": 0.05, "status": "untested",
              "created": "2026-12-01T00:00:00.000Z"} for i in range(1, 121)]
    doc = {"id": "big", "title": "Big", "status": "open", "created": "2026-12-01T00:00:00.000Z", "predictions": preds}
    (ws.root / "hypotheses" / "big.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    with face(ws, monkeypatch) as call:
        shown = ok(call("hypothesis_show", {"id": "big", "detail": True}))
        assert len(json.dumps(shown, separators=(",", ":"))) <= LIMIT
        assert shown["truncated"]["cut"] and shown["truncated"]["hint"].startswith("ask for less or page")
        full = ok(call("agent_tools", {"name": "prediction_add"}))
        assert "bootstrap from 5 repeats" in full["description"] and "margin" in full["parameters"]
