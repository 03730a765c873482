"""The MCP face over a real stdio connection: the same verbs and JSON documents as the CLI."""

from __future__ import annotations

import json
import sys

import anyio
import pytest


async def _session(ws, calls):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "optlog", "mcp", "-C", str(ws.root)],
                                   env=ws.env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await calls(session)


def _data(result):
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def test_mcp_tools_share_the_service_layer(ws):
    async def calls(s):
        tools = {t.name for t in (await s.list_tools()).tools}
        h = _data(await s.call_tool("hypothesis_add", {"title": "Communication-bound", "id": "comm-bound"}))
        todos = _data(await s.call_tool("todo_write", {"todos": [
            {"content": "Start TP4+PP2", "status": "in_progress", "priority": "high", "hypothesis": "comm-bound"},
            {"content": "Investigate FP4 GEMM", "status": "pending", "activeForm": "Investigating"}]}))
        todos = _data(await s.call_tool("todo_list", {"limit": None}))  # the write acknowledged ids; the list has all
        bad = await s.call_tool("hypothesis_show", {"id": "nope"})
        st = _data(await s.call_tool("status", {}))
        for cfg, c, v in (("tp8", 64, 700), ("tp4pp2", 64, 213), ("tp8", 256, 1867), ("tp4pp2", 256, 727)):
            _data(await s.call_tool("run_record", {"labels": {"config": cfg, "concurrency": c},
                                                   "metrics": {"total_token_throughput": v}}))
        _data(await s.call_tool("prediction_add", {"hypothesis": "comm-bound", "expect": "a > b",
                                                   "metric": "total_token_throughput", "a": ["config=tp4pp2"],
                                                   "b": ["config=tp8"], "per": "concurrency"}))
        verdict = _data(await s.call_tool("verdict", {"id": "comm-bound"}))
        table = _data(await s.call_tool("compare", {"metric": "total_token_throughput", "by": "config",
                                                   "per": "concurrency", "baseline": "tp8"}))
        _data(await s.call_tool("plan_add", {"title": "MSCCLPP allreduce", "gain": "5-15%", "effort": "M",
                                             "confidence": 0.6, "needs": ["comm-bound"]}))
        plans = _data(await s.call_tool("plan_list", {}))
        log = _data(await s.call_tool("log", {}))
        return tools, h, todos, bad, st, verdict, table, plans, log

    tools, h, todos, bad, st, verdict, table, plans, log = anyio.run(_session, ws, calls)
    assert verdict["results"][0]["status"] == "falsified"
    assert [r["level"] for r in table["rows"]] == [{"concurrency": 64}, {"concurrency": 256}]
    assert "falsified" in plans["plans"][0]["reason"]
    assert any(e["subject"] == "optlog: comm-bound → falsified" for e in log["events"])
    assert {"status", "hypothesis_add", "todo_write", "run_record", "verdict", "prediction_add"} <= tools
    assert h["id"] == "comm-bound"
    assert todos["todos"][1]["activeForm"] == "Investigating"
    # the CLI reads back exactly what the agent wrote through MCP
    assert ws.j("todo", "list")["todos"] == todos["todos"]
    assert bad.is_error and bad.content[0].text.startswith("not_found: ")
    assert bad.structured_content["error"]["code"] == "not_found" and bad.structured_content["error"]["field"] == "id"
    assert [x["id"] for x in st["hypotheses"]["open"]] == ["comm-bound"]
    assert "optlog: add hypothesis comm-bound" in ws.git("log", "--format=%s")
