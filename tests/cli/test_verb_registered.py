"""A new verb is one file plus one registration line (issue 46): the `greet` verb of
tests/fixtures/verbs/greet.py, registered here by its noun in `optlog.api.NOUNS` (the line a verb of
optlog's own adds there), is a CLI command (root help, its own --help, --json, its text, a bad value
refused with the option's name), an MCP tool (tools/list with its input schema, output schema from its
return type, tools/call and its validation) and a TUI form (`tui.forms.verb_form`). Without the
line, no face knows it. The TUI's command palette lists key bindings, not verbs: nothing to see there."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from optlog import api
from tests._face import face, ok

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "verbs" / "greet.py"
MODULE = "optlog_test_greet_verb"


def _load() -> Any:
    s = importlib.util.spec_from_file_location(MODULE, FIXTURE)
    assert s is not None and s.loader is not None
    mod = sys.modules[MODULE] = importlib.util.module_from_spec(s)
    s.loader.exec_module(mod)
    return mod


@pytest.fixture
def greet(monkeypatch: Any) -> Iterator[Any]:
    mod = _load()
    monkeypatch.setitem(api.NOUNS, "greet", MODULE)  # the one registration line
    try:
        yield mod
    finally:
        sys.modules.pop(MODULE, None)


def test_without_the_line_no_face_knows_the_verb(ws, monkeypatch):
    _load()
    try:
        assert "greet" not in ws.cli("--help", subprocess=False).out
        r = ws.cli("greet", "world", check=2, subprocess=False)
        assert "No such command" in r.err and "greet" in r.err
        from optlog.mcp.tools import tools

        assert "greet" not in tools()
    finally:
        sys.modules.pop(MODULE, None)


def test_the_cli_has_the_verb(ws, greet):
    assert any(line.split()[:1] == ["greet"] for line in ws.cli("--help", subprocess=False).out.splitlines())
    h = ws.cli("greet", "--help", subprocess=False).out
    assert "Usage: optlog greet [OPTIONS] NAME" in h and "--times N" in h and "--shout" in h and "[default: 1]" in h
    assert ws.j("greet", "world", "--times", "2", subprocess=False) == {"greeting": "hello world hello world", "times": 2}
    assert json.loads(ws.cli("greet", "x", "--shout", subprocess=False).out) == {"greeting": "HELLO X", "times": 1}
    r = ws.cli("greet", "world", "--times", "many", check=2, subprocess=False)
    assert "--times" in r.err and "Traceback" not in r.err


def test_the_mcp_face_has_the_verb(ws, monkeypatch, greet):
    from optlog.mcp.tools import tools

    t = tools()["greet"]
    desc, schema = t.listing()  # as tools/list gives it
    assert desc.startswith("Greet someone") and schema["required"] == ["name"]
    assert set(schema["properties"]) == {"name", "times", "shout"} and schema["properties"]["times"]["type"] == "integer"
    assert set(t.output_schema["properties"]) == {"greeting", "times"} and t.read_only
    with face(ws, monkeypatch) as call:
        assert ok(call("greet", {"name": "w", "times": 2})) == {"greeting": "hello w hello w", "times": 2}
        doc, err, _code = call("greet", {"name": "w", "times": "two"})
    assert err and "times" in json.dumps(doc)


def test_the_tui_makes_its_form(greet):
    from optlog.tui.forms import verb_form, verb_values

    name, times = verb_form(greet.greet, ("name", "times"))
    assert (name.name, name.required, name.placeholder) == ("name", True, "Whom to greet.")
    assert (times.name, times.value, times.required) == ("times", "1", False)
    assert verb_values(greet.greet, {"name": "w", "times": "3"}) == {"name": "w", "times": 3}
