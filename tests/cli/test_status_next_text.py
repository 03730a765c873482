"""`optlog status` ends with what to do next (issue 44): the text face says each suggestion as the CLI
command a person types, with the reason the JSON carries (`why`); never a Python repr, never the
tool-call syntax, and never `next` on a child and the parent it refines (nothing to tell apart)."""

from __future__ import annotations

from tests.integration.test_demo_branches import _demo


def test_status_text_says_each_suggestion_as_a_command_with_its_reason(ws, monkeypatch):
    _demo(ws, monkeypatch, "does not pay")  # memory-bound falsified; compute-bound and its child confirmed
    doc = ws.j("status")
    text = ws.cli("status").out
    tail = text[text.index("\nnext:"):]
    assert "['" not in tail and "=…" not in tail and "title=" not in tail, tail
    assert doc["next"], doc
    for n in doc["next"]:
        assert n["why"] in tail, (n, tail)
    # memory-bound's rival compute-bound is confirmed: that is its pivot, none proposed again
    assert "--parent memory-bound" not in tail and "optlog plan add TITLE" in tail, tail
    assert not any(n["call"] == "next" for n in doc["next"]), doc["next"]  # a child refines its parent


def test_a_suggested_call_reads_as_a_command():
    from optlog.cli.render.text import command_line

    assert command_line("plan_add", {"title": "…", "gain": "10-30%", "effort": "M", "confidence": 0.5,
                                     "needs": ["a-b", "c=falsified"]}) == \
        "optlog plan add TITLE --gain 10-30% --effort M --confidence 0.5 --needs a-b --needs c=falsified"
    assert command_line("prediction_add", {"hypothesis": "h", "expect": "a > b"}) == \
        "optlog prediction add h --expect 'a > b'"
    assert command_line("next", {"id": "h"}) == "optlog next h"
    assert command_line("run_wait", {"ref": "L3"}) == "optlog run wait L3"
    assert command_line("todo_set", {"id": "t1", "status": "completed"}) == "optlog todo set t1 --status completed"
    assert command_line("verdict", {"id": "h"}) == "optlog verdict h"


def test_no_status_word_said_twice_in_the_text_faces(ws, monkeypatch):
    """`confirmed (auto, root): confirmed: …` and `**falsified**: falsified: …` (issue 44): a verdict's
    summary beside its status goes through core.statuses.reader_text in every text face."""
    import re

    _demo(ws, monkeypatch, "does not pay")
    twice = re.compile(r"\b(confirmed|falsified|inconclusive)\b\**(?:,[^:()]*)? \([^)]*\): \1\b|"
                       r"\*\*(confirmed|falsified|inconclusive)\*\*: \2\b")
    texts = {"status": ws.cli("status").out, "hypothesis show": ws.cli("hypothesis", "show", "memory-bound").out}
    ws.cli("plan", "render")
    texts |= {p.name: p.read_text() for p in sorted((ws.root / "glb5improvement").glob("*.md"))}
    for name, text in texts.items():
        assert not twice.search(text), (name, twice.search(text).group(0))
    assert "memory-bound → falsified (auto" in texts["status"]
