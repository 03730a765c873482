"""Issue 45 (3): warnings and errors name a parameter as the caller gave it. An agent that passed
`a: {parallel: 1}` to the MCP tool was told `--a parallel=1` (the CLI's spelling). The layer below
says `param("a", "parallel=1")`; each face writes it in its own spelling, in errors, in the
document's warnings and in the narration."""

from __future__ import annotations

from optlog.errors import BadInput, param, spell_doc
from tests._face import face, ok
from tests._verdicts import seed_runs


def _ws(ws):
    seed_runs(ws, [({"cfg": "x", "parallel": 4, "repeat": 0}, {"t": 1.0})])
    ws.cli("hyp", "add", "X", "--id", "h")


def test_a_tool_call_is_warned_in_its_own_spelling(ws, monkeypatch):
    _ws(ws)
    with face(ws, monkeypatch) as call:
        doc = ok(call("prediction_add", {"hypothesis": "h", "expect": "a > b", "metric": "t",
                                         "a": {"parallel": 1}, "b": {"parallel": 4}}))
    text = " ".join(doc.get("warnings") or [])
    assert "a: {parallel: 1}" in text, doc
    assert "--a" not in text and "\x1f" not in text, doc


def test_the_cli_is_warned_in_its_options(ws):
    _ws(ws)
    r = ws.cli("predict", "h", "--expect", "a > b", "--metric", "t", "--a", "parallel=1", "--b", "parallel=4", "--json")
    assert any("--a parallel=1" in w for w in r.json["warnings"]), r.json
    assert "--a parallel=1" in r.err and "\x1f" not in r.err + r.out, r.err


def test_a_value_spelt_by_no_face_reads_plainly():
    e = BadInput(f"no run has {param('a', 'parallel=1')}", field="a")
    assert e.text == "no run has a parallel=1"
    assert spell_doc({"w": [f"x {param('a', 'k=v')}"]}, {"a": "--a"}.get) == {"w": ["x --a k=v"]}
