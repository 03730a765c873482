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


def test_next_proposes_optlog_next_while_rivals_are_undecided():
    """Issue 36: a hypothesis with predictions whose rival (or pivot parent) is not told apart from it
    → `next` for it; once one is confirmed and the other falsified, no more."""
    from optlog.core.hypothesis import HypothesisDoc, Prediction
    from optlog.service.status import _next

    pred = Prediction(id="x.p1", expect="a > b", metric="m", a={"c": "1"}, b={"c": "2"})
    mem = HypothesisDoc(id="memory-bound", title="Memory-bound", predictions=[pred], created="2026-01-01")
    cmp_ = HypothesisDoc(id="compute-bound", title="Compute-bound", rivals=["memory-bound"], predictions=[pred],
                         created="2026-01-02")
    runs = {"launches": []}
    calls = _next({"memory-bound": mem, "compute-bound": cmp_}, runs, [], [])
    assert {"call": "next", "arguments": {"id": "compute-bound"},
            "why": "compute-bound and memory-bound are not told apart yet: name the experiment that would"} in calls
    mem.status, cmp_.status = "confirmed", "falsified"
    assert not any(c["call"] == "next" for c in _next({"memory-bound": mem, "compute-bound": cmp_}, runs, [], []))


def test_no_pivot_is_proposed_where_a_rival_already_won():
    """A falsified hypothesis whose rival is confirmed has its pivot: the rival is what the evidence
    points at (the real demo: memory-bound falsified, its rival compute-bound confirmed, and status
    still said "memory-bound is falsified: pivot to what the evidence points at"). Either side may
    name the rivalry; a rival still open or also falsified leaves the pivot to propose."""
    from optlog.core.hypothesis import HypothesisDoc, Override
    from optlog.service.status import _next

    def hyp(hid, status, rivals=(), created="2026-01-01"):
        return HypothesisDoc(id=hid, title=hid, rivals=list(rivals), created=created,
                             override=Override(status=status, why="by hand", by="t", at="2026-01-03")
                             if status != "open" else None)

    runs = {"launches": []}
    for mem_rivals, cmp_rivals in (((), ("memory-bound",)), (("compute-bound",), ())):
        docs = {"memory-bound": hyp("memory-bound", "falsified", mem_rivals),
                "compute-bound": hyp("compute-bound", "confirmed", cmp_rivals, "2026-01-02")}
        calls = _next(docs, runs, [], [])
        assert not any(c["call"] == "hypothesis_add" for c in calls), calls
    for other in ("open", "falsified"):  # (both falsified: the newer one's pivot is proposed first)
        docs = {"memory-bound": hyp("memory-bound", "falsified", created="2026-01-02"),
                "compute-bound": hyp("compute-bound", other, ("memory-bound",))}
        calls = _next(docs, runs, [], [])
        assert {"call": "hypothesis_add", "arguments": {"title": "…", "parent": "memory-bound"},
                "why": "memory-bound is falsified: pivot to what the evidence points at"} in calls, (other, calls)
