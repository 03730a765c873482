"""Face-neutral verbs: the document a service verb returns, called in-process with typed values,
is the document `optlog … --json` prints (the CLI only parses options and renders), brief forms and
pages included."""

from __future__ import annotations

import json

import pytest

from tests._face import use_env


@pytest.fixture
def ctx(ws, monkeypatch):
    use_env(ws, monkeypatch)
    ws.cli("hypothesis", "add", "Decode is comm-bound", "--id", "h", "--statement", "S")
    ws.cli("predict", "h", "--expect", "a > b", "--metric", "tput", "--a", "config=tp8", "--b", "config=tp4")
    for i in range(3):
        ws.cli("run", "record", "--label", "config=tp8", "--metric", f"tput={100 + i}", "--hypothesis", "h")
        ws.cli("run", "record", "--label", "config=tp4", "--metric", f"tput={50 + i}")
    ws.cli("todo", "add", "look at NCCL")
    ws.cli("note", "add", "an observation", "--hypothesis", "h")
    from optlog.service.context import Ctx

    c = Ctx.find(ws.root)
    yield c
    c.close()


def _same(cli_doc, verb_doc) -> None:
    assert json.loads(json.dumps(verb_doc, default=str)) == cli_doc


def test_read_verbs_return_the_cli_documents(ws, ctx) -> None:
    from optlog.service import evidence, hypotheses, predictions, todos

    _same(ws.j("hypothesis", "show", "h", "--brief"), hypotheses.show_doc(ctx, "h", detail=False))
    _same(ws.j("hypothesis", "list", "--limit", "1", "--order", "newest", "--fields", "id,status"),
          hypotheses.list_doc(ctx, limit=1, order="newest", fields="id,status"))
    _same(ws.j("run", "list", "--limit", "2", "--offset", "1", "--fields", "id,labels"),
          evidence.runs_doc(ctx, limit=2, offset=1, fields="id,labels"))
    _same(ws.j("run", "show", "1", "--brief"), evidence.show_run_doc(ctx, 1, detail=False))
    _same(ws.j("prediction", "list", "h", "--limit", "1"), predictions.list_doc(ctx, "h", limit=1))
    _same(ws.j("todo", "list", "--offset", "0", "--limit", "5"), todos.list_doc(ctx, limit=5, offset=0))
    _same(ws.j("note", "list", "--order", "newest"), evidence.notes_doc(ctx, order="newest"))
    # without a page, the documents keep the shape the CLI always printed (no page facts)
    assert set(hypotheses.list_doc(ctx)) == {"hypotheses"}


def test_write_verbs_acknowledge_in_the_brief_form(ws, ctx) -> None:
    from optlog.service import hypotheses, verdicts

    ack = hypotheses.add_doc(ctx, "Rival view", hid="r", detail=False)
    assert ack == {"id": "r", "status": "open", "title": "Rival view", "parent": None, "predictions": []}
    assert ws.j("hypothesis", "edit", "r", "--title", "Rival", "--brief")["title"] == "Rival"
    _same(ws.j("hypothesis", "show", "r"), hypotheses.show_doc(ctx, "r"))
    v = verdicts.verdict_doc(ctx, "h", detail=False)
    assert [p["status"] for r in v["results"] for p in r["predictions"]] == ["confirmed"]
    assert "warnings_total" in v and not verdicts.any_bad(v)


def test_a_bad_page_is_refused_by_the_verb(ctx) -> None:
    from optlog.errors import BadInput
    from optlog.service import hypotheses

    with pytest.raises(BadInput) as e:
        hypotheses.list_doc(ctx, limit=-1)
    assert e.value.field == "limit"
