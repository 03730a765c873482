"""Issue 34.3: MCP arguments are checked against their JSON types as the schema says (a number is
not a title, a text is not a list), refused with a usage error that names the parameter, and
nothing is written. In-process, on one face."""

from __future__ import annotations

import pytest

from _face import face


@pytest.mark.parametrize("name,args,field", [
    ("hypothesis_add", {"title": 123}, "title"),
    ("run_invalidate", {"refs": "1", "why": "x"}, "refs"),
    ("run_invalidate", {"refs": ["1"], "why": 5}, "why"),
    ("init", {"path": 12}, "path"),
    ("run_list", {"limit": "5"}, "limit"),
    ("note_add", {"text": 7}, "text"),
])
def test_json_types_are_checked_as_the_schema_says(ws, monkeypatch, name, args, field):
    head = ws.git("rev-parse", "HEAD")
    with face(ws, monkeypatch) as call:
        doc, is_error, code = call(name, args)
    assert is_error and code == 2, doc
    assert doc["error"]["code"] == "usage" and doc["error"]["field"] == field, doc
    assert ws.git("rev-parse", "HEAD") == head
    assert not (ws.root / "hypotheses" / "123.yaml").exists()
