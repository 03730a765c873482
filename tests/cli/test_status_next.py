"""`status.next` follows the loop (issue 31 item 5): a falsified hypothesis without a child → the
pivot; a decided one that no plan needs → a plan; a todo list owned by an agent's TodoWrite (its
hook mirrors it) → no `todo_set`, which the next TodoWrite would undo."""

from __future__ import annotations

import json

from tests._face import face, ok


def _calls(doc):
    return [(n["call"], n["arguments"]) for n in doc["next"]]


def test_next_proposes_the_pivot_then_a_plan_and_no_todo_set_on_a_todowrite_list(ws, monkeypatch):
    payload = {"tool_name": "TodoWrite", "tool_input": {"todos": [
        {"content": "measure tp8", "status": "in_progress", "activeForm": "Measuring tp8"}]}}
    ws.cli("todo", "write", "-", input=json.dumps(payload))
    with face(ws, monkeypatch) as call:
        ok(call("hypothesis_add", {"title": "Communication-bound", "id": "comm-bound"}))
        ok(call("hypothesis_set", {"id": "comm-bound", "status": "falsified", "why": "tp8 is 3x faster"}))
        nxt = _calls(ok(call("status", {})))
        assert ("hypothesis_add", {"title": "…", "parent": "comm-bound"}) in nxt, nxt
        assert any(c == "plan_add" and a["needs"] == ["comm-bound=falsified"] for c, a in nxt), nxt
        assert not any(c == "todo_set" for c, _ in nxt), nxt  # TodoWrite owns the list
        ok(call("hypothesis_add", {"title": "Compute-bound", "id": "compute-bound", "parent": "comm-bound"}))
        ok(call("plan_add", {"title": "FP4 GEMM tuning", "gain": "10-30%", "effort": "M", "confidence": 0.5,
                             "needs": ["comm-bound=falsified"]}))
        nxt = _calls(ok(call("status", {})))
        assert not any(c == "plan_add" or a.get("parent") for c, a in nxt), nxt
        # a list the agent keeps with optlog's own tools: todo_set is proposed
        ok(call("todo_write", {"todos": [{"content": "measure tp4", "status": "in_progress"}]}))
        assert any(c == "todo_set" for c, _ in _calls(ok(call("status", {}))))
