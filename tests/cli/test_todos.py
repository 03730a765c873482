"""Todos as coding agents write them: OpenCode `todowrite`, Claude Code `TodoWrite`."""

from __future__ import annotations

import json

import pytest

from _foundation import bad, snapshot

OPENCODE = {"todos": [
    {"id": "1", "content": "Start server with TP4+PP2 and benchmark", "status": "completed", "priority": "high"},
    {"id": "2", "content": "Investigate FP4 GEMM kernel efficiency on SM120", "status": "pending", "priority": "high"},
    {"id": "3", "content": "Check CUTLASS tactics", "status": "in_progress", "priority": "medium"},
]}
CLAUDE = {"todos": [
    {"content": "Kill the PP2 server", "status": "completed", "activeForm": "Killing the PP2 server"},
    {"content": "Go back to TP8", "status": "in_progress", "activeForm": "Going back to TP8"},
    {"content": "Profile GEMMs", "status": "pending", "activeForm": "Profiling GEMMs", "x-extra": {"n": [1, 2]}},
]}


def _same_as_written(written: list[dict], got: list[dict]) -> None:
    """Every key an agent wrote comes back with the same value, in the same order; the rest are
    optlog's (id, priority, hypothesis)."""
    assert len(written) == len(got), (written, got)
    for w, g in zip(written, got):
        for k, v in w.items():
            assert g[k] == v, (k, w, g)
        assert set(g) - set(w) <= {"id", "priority", "hypothesis"}, g
        assert {"id", "content", "status", "priority", "hypothesis"} <= set(g)


def test_opencode_todowrite_with_ids(ws, tmp_path):
    f = tmp_path / "todos.json"
    f.write_text(json.dumps(OPENCODE))
    out = ws.j("todo", "write", str(f))
    _same_as_written(OPENCODE["todos"], out["todos"])
    assert [t["id"] for t in out["todos"]] == ["1", "2", "3"]
    assert ws.j("todo", "list") == out
    # link one to a hypothesis, then the agent replaces the list (ids kept, texts changed, one gone)
    ws.cli("hypothesis", "add", "Compute-bound", "--id", "compute-bound")
    ws.j("todo", "set", "2", "--hypothesis", "compute-bound")
    second = {"todos": [
        {"id": "2", "content": "Investigate FP4 GEMM efficiency (CUTLASS, cuBLASLt)", "status": "in_progress", "priority": "high"},
        {"id": "4", "content": "Try MSCCLPP allreduce", "status": "pending", "priority": "low"},
    ]}
    out2 = ws.j("todo", "write", "-", input=json.dumps(second))
    _same_as_written(second["todos"], out2["todos"])
    assert out2["todos"][0]["hypothesis"] == "compute-bound"  # matched by id
    assert out2["todos"][1]["hypothesis"] is None
    assert ws.j("todo", "list") == out2  # replace semantics: 1 and 3 are gone
    assert ws.j("todo", "list", "--hypothesis", "compute-bound")["todos"] == [out2["todos"][0]]
    assert [t["id"] for t in ws.j("todo", "list", "--status", "pending")["todos"]] == ["4"]
    # an empty list clears it
    assert ws.j("todo", "write", "-", input='{"todos": []}') == {"todos": []}
    assert ws.j("todo", "list") == {"todos": []}


def test_claude_todowrite_without_ids_keeps_links_by_content(ws):
    out = ws.j("todo", "write", "-", input=json.dumps(CLAUDE))
    _same_as_written(CLAUDE["todos"], out["todos"])
    assert all(t["priority"] is None for t in out["todos"])
    assert out["todos"][2]["x-extra"] == {"n": [1, 2]}  # unknown keys kept and returned
    assert len({t["id"] for t in out["todos"]}) == 3
    ws.cli("hypothesis", "add", "Kernels", "--id", "kernels")
    gid = out["todos"][2]["id"]
    ws.cli("todo", "set", gid, "--hypothesis", "kernels")
    # the next write moves the item, changes its status, drops another
    nxt = {"todos": [
        {"content": "Profile GEMMs", "status": "in_progress", "activeForm": "Profiling GEMMs now"},
        {"content": "Go back to TP8", "status": "completed", "activeForm": "Going back to TP8"},
    ]}
    out2 = ws.j("todo", "write", "-", input=json.dumps(nxt))
    _same_as_written(nxt["todos"], out2["todos"])
    assert out2["todos"][0]["id"] == gid and out2["todos"][0]["hypothesis"] == "kernels"
    assert ws.j("todo", "list") == out2
    # a write that names the link itself wins
    third = {"todos": [{"content": "Profile GEMMs", "status": "completed", "hypothesis": None}]}
    out3 = ws.j("todo", "write", "-", input=json.dumps(third))
    assert out3["todos"][0]["hypothesis"] is None
    # a bare list is accepted as well
    out4 = ws.j("todo", "write", "-", input=json.dumps(CLAUDE["todos"][:1]))
    _same_as_written(CLAUDE["todos"][:1], out4["todos"])


def test_todo_add_set_and_human_list(ws):
    a = ws.j("todo", "add", "Check if server is running", "--priority", "high")
    assert a["status"] == "pending" and a["priority"] == "high"
    b = ws.j("todo", "add", "Benchmark TP8")
    s = ws.j("todo", "set", a["id"], "--status", "completed")
    assert s["status"] == "completed"
    assert [t["id"] for t in ws.j("todo", "list")["todos"]] == [a["id"], b["id"]]
    out = ws.cli("todo", "list").out
    assert "[x]" in out and "[ ]" in out and "Benchmark TP8" in out


def test_bad_todo_input_writes_nothing(ws, tmp_path):
    ws.j("todo", "write", "-", input=json.dumps(OPENCODE))
    before = snapshot(ws)
    wrong = json.loads(json.dumps(OPENCODE))
    wrong["todos"][2]["status"] = "done"
    err = bad(ws, "todo", "write", "-", input=json.dumps(wrong), field="todos[2].status")
    assert "done" in err["message"] and "in_progress" in err["message"]
    bad(ws, "todo", "write", "-", input=json.dumps({"items": OPENCODE["todos"]}), field="todos")
    bad(ws, "todo", "write", "-", input='{"todos": {"content": "x"}}', field="todos")
    bad(ws, "todo", "write", "-", input='{"todos": [{"status": "pending"}]}', field="todos[0].content")
    bad(ws, "todo", "write", "-", input='{"todos": [{"content": "x", "status": "pending", "priority": "urgent"}]}',
        field="todos[0].priority")
    dup = {"todos": [{"id": "a", "content": "x", "status": "pending"}, {"id": "a", "content": "y", "status": "pending"}]}
    bad(ws, "todo", "write", "-", input=json.dumps(dup), field="todos[1].id")
    err = bad(ws, "todo", "write", "-", input='{"todos": [\n  {"content": "x",, }\n]}')
    assert err["code"] == "malformed_json" and err["line"] == 2 and err["column"]
    f = tmp_path / "t.json"
    f.write_text('{"todos": [{"content": "x", "status": "pending", "hypothesis": "nope"}]}')
    err = bad(ws, "todo", "write", str(f))
    assert err["code"] == "not_found" and "nope" in err["message"]
    bad(ws, "todo", "write", str(tmp_path / "missing.json"), field="FILE")
    bad(ws, "todo", "set", "no-such-id", "--status", "completed", field="ID")
    bad(ws, "todo", "set", "1", "--status", "finished", field="--status")
    bad(ws, "todo", "set", "1", field="--status")
    bad(ws, "todo", "add", "x", "--hypothesis", "nope", field="--hypothesis")
    bad(ws, "todo", "add", "x", "--priority", "urgent", field="--priority")
    bad(ws, "todo", "list", "--status", "done", field="--status")
    assert snapshot(ws) == before


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_number_in_a_todo_document_is_refused_on_every_database(ws, token):
    """Issue 34.3: JSON has no NaN or Infinity; Python's reader takes them, PostgreSQL's JSON does
    not (an internal error there) and SQLite stored them and printed invalid JSON back. Refused
    where the document is read, exit 2, its line named, nothing written."""
    doc = '{"todos": [\n  {"content": "a", "status": "pending", "x": %s}\n]}' % token
    r = ws.cli("todo", "write", "-", "--json", input=doc, check=2)
    err = r.json["error"]
    assert err["code"] == "malformed_json" and err["line"] == 2 and token.lstrip("-") in err["message"], err
    assert ws.j("todo", "list")["todos"] == []
