"""Item 2 of issue 13: no text can forge the decision history, and control characters are refused
at the boundary (CLI arguments, hypothesis files, todowrite JSON, MCP calls), through the real CLI.
"""

from __future__ import annotations

import json
import subprocess

import pytest

RS, FS = "\x1e", "\x1f"
FORGED = f"x{RS}deadbeef{FS}2020-01-01T00:00:00Z{FS}m{FS}m@x{FS}optlog: h → confirmed{FS}{FS}Optlog-Event: verdict\nOptlog-Status: confirmed{RS}"


def _state(ws) -> tuple[str, str]:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws.root, capture_output=True, text=True).stdout
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ws.root, capture_output=True, text=True).stdout
    return head, status


@pytest.mark.parametrize("args", [
    ["hypothesis", "add", "T", "--id", "h2", "--statement", FORGED],
    ["hypothesis", "add", "T" + RS, "--id", "h2"],
    ["hypothesis", "set", "h", "--status", "testing", "--why", FORGED],
    ["hypothesis", "edit", "h", "--rationale", "a\x07b"],
    ["note", "add", "n" + FS, "--hypothesis", "h"],
    ["todo", "add", "\x1b[2J clear the screen"],
    ["run", "record", "--label", f"cfg=tp8{RS}x", "--metric", "tps=1"],
    ["hypothesis", "add", "T", "--id", "h3\n"],
])
def test_control_characters_refused_on_the_command_line(ws, args):
    ws.cli("hypothesis", "add", "H", "--id", "h")
    before = _state(ws)
    r = ws.cli(*args, "--json", check=2)
    doc = json.loads(r.out)
    assert doc["error"]["code"] in ("bad_text", "bad_input", "invalid_field"), doc
    assert "Traceback" not in r.err
    assert _state(ws) == before


def test_id_ending_in_newline_is_refused(ws):
    r = ws.cli("hypothesis", "add", "T", "--id", "abc\n", "--json", check=2)
    assert r.json["error"]["field"] == "--id"
    assert not (ws.root / "hypotheses" / "abc\n.yaml").exists()
    ws.cli("hypothesis", "add", "T", "--id", "abc")
    r = ws.cli("hypothesis", "show", "abc\n", "--json", check=2)
    assert "error" in r.json


def test_hand_edited_title_with_separators_is_refused_by_sync(ws):
    ws.cli("hypothesis", "add", "H", "--id", "h")
    f = ws.root / "hypotheses" / "h.yaml"
    f.write_text(f.read_text().replace("title: H", 'title: "H\\x1e\\x1fforged"'))
    before = _state(ws)
    r = ws.cli("sync", "--json", check=2)
    err = r.json["error"]
    assert err["file"] == "hypotheses/h.yaml" and err["line"] == 2 and err["field"] == "title"
    assert _state(ws) == before


def test_log_cannot_be_forged_by_commit_text(ws):
    """Even a commit that carries the old separators (written by hand, or by an older optlog) is
    read as one event: the parser splits on NUL, which git never stores in a message."""
    ws.cli("hypothesis", "add", "H", "--id", "h")
    msg = (f"optlog: h → testing (override)\n\nwhy{FORGED}\n\nOptlog-Event: override\n"
           "Optlog-Hypothesis: h\nOptlog-Status: testing\n")
    (ws.root / "x.txt").write_text("x")
    ws.git("add", "x.txt")
    ws.git("commit", "-q", "-m", msg)
    sha = ws.git("rev-parse", "HEAD").strip()
    events = ws.j("log")["events"]
    assert [e["event"] for e in events][-2:] == ["hypothesis-add", "override"]
    assert events[-1]["sha"] == sha and events[-1]["status"] == "testing"
    assert events and not any(e.get("status") == "confirmed" or "confirmed" in e.get("subject", "") for e in events)


@pytest.mark.parametrize("content", ["nul\x00here", "esc\x1b[2J", "x\x1ey"])
def test_todowrite_payload_with_control_characters_is_refused(ws, content):
    before = ws.j("todo", "list")
    payload = json.dumps({"todos": [{"content": content, "status": "pending", "priority": "high"}]})
    r = ws.cli("todo", "write", "-", "--json", input=payload, check=2)
    assert r.json["error"]["code"] == "bad_text" and r.json["error"]["field"] == "todos.0.content"
    assert ws.j("todo", "list") == before


@pytest.mark.sqlite_only
def test_index_row_from_an_older_optlog_is_judged_again_not_a_crash(ws):
    """A row indexed before the text rule existed (same file mtime, so it is not re-read) holding
    a control character: the file is read and judged again instead of a validation traceback."""
    import sqlite3

    ws.cli("hypothesis", "add", "H", "--id", "h")
    db = sqlite3.connect(ws.root / ".optlog" / "optlog.db")
    doc = json.loads(db.execute("SELECT doc FROM hypothesis WHERE id = 'h'").fetchone()[0])
    doc["title"] = "H\x1e"
    db.execute("UPDATE hypothesis SET doc = ? WHERE id = 'h'", (json.dumps(doc),))
    db.commit()
    db.close()
    r = ws.cli("hypothesis", "list", "--json")
    assert [h["title"] for h in r.json["hypotheses"]] == ["H"]
    assert "Traceback" not in r.err


def test_mcp_arguments_pass_the_same_text_rule(ws):
    """An MCP call is input like any other: the tool wrapper applies the text rule to every argument."""
    import sys

    import anyio

    async def calls():
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=sys.executable, args=["-m", "optlog", "mcp", "-C", str(ws.root)],
                                       env=ws.env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                out = [await s.call_tool("hypothesis_add", {"title": "T", "id": "t", "statement": FORGED}),
                       await s.call_tool("todo_write", {"todos": [{"content": "a\x00b", "status": "pending"}]}),
                       await s.call_tool("run_record", {"labels": {"cfg": f"tp8{RS}x"}, "metrics": {"tps": 1}}),
                       await s.call_tool("hypothesis_set", {"id": "h", "status": "confirmed", "why": FORGED})]
                log = await s.call_tool("log", {})
                return out, log

    ws.cli("hypothesis", "add", "H", "--id", "h")
    before = _state(ws)
    out, log = anyio.run(calls)
    for r in out:
        assert r.is_error and "bad_text" in r.content[0].text, r.content
    assert _state(ws) == before
    events = (log.structured_content or json.loads(log.content[0].text))["events"]
    assert events and not any(e.get("status") == "confirmed" or "confirmed" in e.get("subject", "") for e in events)
