"""Errors name the verb's parameters; each face spells them in one place (issue 35): the layers
below the faces raise `field="since"` and say `param("since")` in the message, the CLI writes
`--since` (from the command's click options, `optlog.cli.binding.cli_spelling`), a tool call
`since` (the tool's parameter, `optlog.mcp.tools.Tool.spelling`)."""

from __future__ import annotations

import json

from optlog.errors import BadInput, param
from tests._face import face

SINCE = "since takes a time (ISO 8601, e.g. 2026-12-01 or 2026-12-01T08:00), got 'yesterday'"


def test_a_tool_call_is_told_its_own_parameter_not_the_cli_option(ws, monkeypatch):
    with face(ws, monkeypatch) as call:
        doc, is_error, code = call("report", {"since": "yesterday"})
    assert is_error and code == 2, doc
    assert doc["error"]["field"] == "since" and doc["error"]["message"] == SINCE, doc
    with face(ws, monkeypatch) as call:  # a renamed parameter: the binding's `folder` is the tool's `dir`
        doc, is_error, code = call("agent_setup", {"agent": "opencode", "dir": str(ws.root / "nowhere")})
    assert is_error and code == 2 and doc["error"]["field"] == "dir", doc
    assert "--" not in doc["error"]["message"], doc


def test_the_cli_says_the_same_error_in_its_options_as_before(ws):
    r = ws.cli("report", "--since", "yesterday", "--json", check=2)
    assert r.json["error"]["field"] == "--since" and r.json["error"]["message"] == "--" + SINCE, r.json
    assert r.err.strip() == f"optlog: error: --since: --{SINCE}"
    r = ws.cli("agent", "setup", "opencode", "--dir", str(ws.root / "nowhere"), "--json", check=2)
    assert r.json["error"]["field"] == "--dir", r.json


def test_an_error_spelt_by_no_face_reads_as_the_parameter_names():
    e = BadInput(f"{param('sets')} names no key {param('key_map')}", field="sets.0")
    assert str(e) == "sets.0: sets names no key key_map" and e.to_json()["error"]["message"] == "sets names no key key_map"
    e.spell({"sets": "--set"}.get)
    assert str(e) == "--set.0: --set names no key key_map" and e.field == "--set.0"
    e = BadInput("x", field="setsx")
    assert e.spell({"sets": "--set"}.get).field == "setsx"


def test_an_argument_is_named_by_the_verb_and_spelt_by_each_face(ws, monkeypatch):
    """A positional argument is a verb parameter like an option: the layer below names `tid` (the
    verb's), the CLI spells it by its metavar (`ID`, as before), a tool call by the tool's
    parameter (`id`)."""
    from optlog.service import todos
    from optlog.service.context import Ctx

    c = Ctx.find(ws.root)
    try:
        todos.set_(c, "nope", "completed", None, None, None)
    except BadInput as e:
        assert e.field == "tid", e.field  # the verb's parameter, not a face's spelling
    else:
        raise AssertionError("no error for an unknown todo")
    finally:
        c.close()
    r = ws.cli("todo", "set", "nope", "--status", "completed", "--json", check=2)
    assert r.json["error"]["field"] == "ID", r.json
    with face(ws, monkeypatch) as call:
        doc, is_error, code = call("todo_set", {"id": "nope", "status": "completed"})
    assert is_error and code == 2 and doc["error"]["field"] == "id", doc


def test_an_argument_without_a_metavar_is_spelt_as_click_shows_it(ws, monkeypatch):
    """`agent tools NAME`: the argument has no metavar of its own; the CLI spells it as its usage
    line does (click's upper-cased name, `NAME`, as before the catalogue), a tool call `name`."""
    r = ws.cli("agent", "tools", "nope", "--json", check=2)
    assert r.json["error"]["field"] == "NAME", r.json
    with face(ws, monkeypatch) as call:
        doc, is_error, code = call("agent_tools", {"name": "nope"})
    assert is_error and code == 2 and doc["error"]["field"] == "name", doc


def test_the_hypothesis_and_prediction_verbs_name_their_arguments(ws, monkeypatch):
    """The layer below names the verb's argument (`title`, `hid`, `pid`), never a face's metavar
    (`TITLE`, `HYP`, `ID`); the CLI still says the metavar, a tool call its own parameter."""
    from optlog.api import hypotheses as H
    from optlog.api import predictions as P
    from optlog.api.verb import Call
    from optlog.errors import OptlogError
    from optlog.service.context import Ctx

    c = Ctx.find(ws.root)
    call = Call(chdir=None, ctx=lambda: c, narrate=False, say=lambda _t: None)
    # (verb, its arguments, the field below the faces, the CLI's words, the CLI's field, tool, arguments, its field)
    cases = [
        (H.hyp_add, {"title": "   "}, "title", ["hypothesis", "add", "   "], "TITLE", "hypothesis_add", {"title": "   "}, "title"),
        (P.pred_add, {"hid": "nope", "expect": "a > b"}, "hid", ["predict", "nope", "--expect", "a > b"], "HYP",
         "prediction_add", {"hypothesis": "nope", "expect": "a > b"}, "hypothesis"),
        (P.pred_list, {"hid": "nope"}, "hid", ["prediction", "list", "nope"], "HYP", "prediction_list",
         {"hypothesis": "nope"}, "hypothesis"),
        (P.pred_show, {"pid": "bad id"}, "pid", ["prediction", "show", "bad id"], "ID", "prediction_show",
         {"id": "bad id"}, "id"),
        (P.pred_show, {"pid": "nope.p1"}, "pid", ["prediction", "show", "nope.p1"], "ID", "prediction_show",
         {"id": "nope.p1"}, "id"),
        (P.verdict, {"hid": "nope"}, "hid", ["verdict", "nope"], "ID", "verdict", {"id": "nope"}, "id"),
    ]
    try:
        for fn, kw, field, *_ in cases:
            try:
                fn(call, **kw)
            except OptlogError as e:
                assert e.field == field, (fn.__name__, kw, e.field)
            else:
                raise AssertionError(f"no error from {fn.__name__}({kw})")
    finally:
        c.close()
    for *_, argv, cli_field, _tool, _args, _field in cases:
        r = ws.cli(*argv, "--json", check=2)
        assert r.json["error"]["field"] == cli_field, (argv, r.json)
    with face(ws, monkeypatch) as tool_call:
        for *_, tool, args, tool_field in cases:
            doc, is_error, code = tool_call(tool, args)
            assert is_error and code == 2 and doc["error"]["field"] == tool_field, (tool, doc)


# Every verb argument given a value that names nothing (the class, not one example): the CLI names
# the argument by its metavar's name, a tool call by the tool's parameter; never another parameter,
# a noun ("hypothesis") or nothing. (CLI words, CLI field, tool, tool arguments, tool field)
BAD_ARGUMENTS = [
    (["hypothesis", "show", "nope"], "ID", "hypothesis_show", {"id": "nope"}, "id"),
    (["hypothesis", "set", "nope", "--status", "open", "--why", "x"], "ID", "hypothesis_set",
     {"id": "nope", "status": "open", "why": "x"}, "id"),
    (["hypothesis", "edit", "nope", "--title", "x"], "ID", "hypothesis_edit", {"id": "nope", "title": "x"}, "id"),
    (["run", "show", "abc"], "ID", "run_show", {"id": "abc"}, "id"),
    (["run", "show", "999"], "ID", "run_show", {"id": "999"}, "id"),
    (["run", "wait", "Lx"], "REF", "run_wait", {"ref": "Lx"}, "ref"),
    (["run", "cancel", "L99"], "REF", "run_cancel", {"ref": "L99"}, "ref"),
    (["run", "logs", "999"], "REF", "run_logs", {"ref": "999"}, "ref"),
    (["run", "invalidate", "999", "--why", "x"], "ID", "run_invalidate", {"refs": ["999"], "why": "x"}, "refs"),
    (["run", "invalidate", "L99", "--why", "x"], "ID", "run_invalidate", {"refs": ["L99"], "why": "x"}, "refs"),
    (["run", "diff", "1", "999"], "B", "run_diff", {"a": "1", "b": "999"}, "b"),
    (["run", "launch", "no-such-spec"], "SPEC", "run_launch", {"spec": "no-such-spec"}, "spec"),
    (["run", "import", "no-such-file.json"], "FILE", "run_import", {"files": ["no-such-file.json"]}, "files"),
    (["plan", "show", "7"], "ID", "plan_show", {"id": "7"}, "id"),
    (["plan", "set", "x", "--status", "done"], "ID", "plan_set", {"id": "x", "status": "done"}, "id"),
    (["plan", "add", "  ", "--gain", "1-2%", "--effort", "S", "--confidence", "0.5"], "TITLE", "plan_add",
     {"title": "  ", "gain": "1-2%", "effort": "S", "confidence": "0.5"}, "title"),
    (["note", "add", "  "], "TEXT", "note_add", {"text": "  "}, "text"),
    (["tune", "show", "nope"], "STUDY", "tune_show", {"study": "nope"}, "study"),
    (["agent", "setup", "nobody"], "AGENT", "agent_setup", {"agent": "nobody"}, "agent"),
]


def test_every_argument_is_named_by_each_face_in_its_own_spelling(ws, monkeypatch):
    ws.cli("run", "record", "--label", "m=1", "--metric", "x=1")
    for argv, cli_field, *_ in BAD_ARGUMENTS:
        r = ws.cli(*argv, "--json", check=False)
        assert r.code in (1, 2) and r.json["error"]["field"] == cli_field, (argv, r.json)
    with face(ws, monkeypatch) as call:
        for _argv, _f, tool, args, tool_field in BAD_ARGUMENTS:
            doc, is_error, _code = call(tool, args)
            assert is_error and doc["error"]["field"] == tool_field, (tool, args, doc)


def test_an_inline_json_value_is_no_file_to_a_tool(ws, monkeypatch):
    """`todo_write {"todos": 5}`: the place is the tool's parameter; the CLI's `--todos` (the inline
    value's name on the command line) is no file an agent could open."""
    with face(ws, monkeypatch) as call:
        doc, is_error, code = call("todo_write", {"todos": 5})
        bad, _e, _c = call("todo_write", {"todos": [{"content": "a", "status": "bogus"}]})
    assert is_error and code == 2, doc
    assert doc["error"]["field"] == "todos" and doc["error"]["file"] is None, doc
    assert bad["error"]["field"] == "todos[0].status" and bad["error"]["file"] is None, bad
    assert "--" not in json.dumps(doc) + json.dumps(bad)
