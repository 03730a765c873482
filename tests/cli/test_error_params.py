"""Errors name the verb's parameters; each face spells them in one place (issue 35): the layers
below the faces raise `field="since"` and say `param("since")` in the message, the CLI writes
`--since` (from the command's click options, `optlog.cli.binding.cli_spelling`), a tool call
`since` (the tool's parameter, `optlog.cli.tools.Tool.spelling`)."""

from __future__ import annotations

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
