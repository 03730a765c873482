"""Face-neutral verbs: the document a service verb returns, called in-process with typed values,
is the document `optlog … --json` prints (the CLI only parses options and renders), brief forms and
pages included."""

from __future__ import annotations

import json

import pytest

from tests._face import use_env


@pytest.fixture
def call(ws, monkeypatch):
    """A verb's call over the workspace (as the TUI makes one: no narration)."""
    use_env(ws, monkeypatch)
    ws.cli("hypothesis", "add", "Decode is comm-bound", "--id", "h", "--statement", "S")
    ws.cli("predict", "h", "--expect", "a > b", "--metric", "tput", "--a", "config=tp8", "--b", "config=tp4")
    for i in range(3):
        ws.cli("run", "record", "--label", "config=tp8", "--metric", f"tput={100 + i}", "--hypothesis", "h")
        ws.cli("run", "record", "--label", "config=tp4", "--metric", f"tput={50 + i}")
    ws.cli("todo", "add", "look at NCCL")
    ws.cli("note", "add", "an observation", "--hypothesis", "h")
    from optlog.api.session import open_session
    from optlog.api.verb import Call

    c = open_session(ws.root)
    yield Call(chdir=None, ctx=lambda: c, narrate=False, say=lambda _t: None)
    c.close()


def _same(cli_doc, verb_doc) -> None:
    assert json.loads(json.dumps(verb_doc, default=str)) == cli_doc


def test_read_verbs_return_the_cli_documents(ws, call) -> None:
    from optlog.api import hypotheses as H
    from optlog.api import notes as N
    from optlog.api import predictions as P
    from optlog.api import runs as R
    from optlog.api import todos as T

    _same(ws.j("hypothesis", "show", "h", "--brief"), H.hyp_show(call, hid="h", detail=False))
    _same(ws.j("hypothesis", "list", "--limit", "1", "--order", "newest", "--fields", "id,status"),
          H.hyp_list(call, limit=1, order="newest", fields="id,status"))
    _same(ws.j("run", "list", "--limit", "2", "--offset", "1", "--fields", "id,labels"),
          R.run_list(call, limit=2, offset=1, fields="id,labels"))
    _same(ws.j("run", "show", "1", "--brief"), R.run_show(call, run_id="1", detail=False))
    _same(ws.j("prediction", "list", "h", "--limit", "1"), P.pred_list(call, hid="h", limit=1))
    _same(ws.j("todo", "list", "--offset", "0", "--limit", "5"), T.todo_list(call, limit=5, offset=0))
    _same(ws.j("note", "list", "--order", "newest"), N.note_list(call, order="newest"))
    # without a page, the documents keep the shape the CLI always printed (no page facts)
    assert set(H.hyp_list(call)) == {"hypotheses"}


def test_write_verbs_acknowledge_in_the_brief_form(ws, call) -> None:
    from optlog.api import hypotheses as H
    from optlog.api import predictions as P
    from optlog.service import verdicts

    ack = H.hyp_add(call, title="Rival view", hid="r", detail=False)
    assert ack == {"id": "r", "status": "open", "title": "Rival view", "parent": None, "predictions": []}
    assert ws.j("hypothesis", "edit", "r", "--title", "Rival", "--brief")["title"] == "Rival"
    _same(ws.j("hypothesis", "show", "r"), H.hyp_show(call, hid="r"))
    v = P.verdict(call, hid="h", detail=False)
    assert [p["status"] for r in v["results"] for p in r["predictions"]] == ["confirmed"]
    assert "warnings_total" in v and not verdicts.any_bad(v)


def test_a_bad_page_is_refused_by_the_verb(call) -> None:
    from optlog.api import hypotheses as H
    from optlog.errors import BadInput

    with pytest.raises(BadInput) as e:
        H.hyp_list(call, limit=-1)
    assert e.value.field == "limit"
