"""Issue 34.1: no data drives the user's terminal. Escape sequences (OSC 52 sets the clipboard,
ESC[2J clears the screen), C1 controls and bidi overrides planted in an imported result file, a
bench's stderr and a hand-made commit come out escaped from `run list`, `run show`, `log`, the
report file and the TUI; typed input refuses bidi overrides like control characters."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
import yaml

OSC52 = "\x1b]52;c;aGlqYWNrZWQ=\x07"
CLEAR = "\x1b[2J"
RLO = "\u202e"
CSI = "\x9b"
PLANT = f"x{OSC52}{CLEAR}{RLO}{CSI}y"
RAW = ("\x1b", "\x07", "\x9b", RLO)


def _raw(text: str) -> list[str]:
    return [repr(c) for c in RAW if c in text]


def test_output_rule_escapes_and_input_rule_refuses_bidi():
    from optlog.core import text as TX

    assert TX.shown(PLANT) == "x\\x1b]52;c;aGlqYWNrZWQ=\\x07\\x1b[2J\\u202e\\x9by"
    assert TX.shown("tab\tand\nline") == "tab\tand\nline"
    assert json.loads(TX.json_shown(json.dumps(PLANT, ensure_ascii=False))) == PLANT
    assert _raw(TX.json_shown(json.dumps(PLANT, ensure_ascii=False))) == []
    for s in ("a\u202eb", "a\u2066b", "a\u2069b"):
        assert "bidirectional" in TX.problem(s, multiline=False)
        assert TX.problem(s) is not None


def test_bidi_override_refused_on_the_command_line(ws):
    r = ws.cli("hypothesis", "add", f"evil{RLO}txt", "--id", "h", "--json", check=2)
    assert r.json["error"]["code"] in ("bad_text", "invalid_field")
    assert ws.cli("todo", "add", f"a{RLO}b", "--json", check=2).json["error"]


def test_planted_escapes_come_out_escaped_everywhere(ws, tmp_path, monkeypatch):
    ws.cli("hypothesis", "add", "H", "--id", "h")
    f = tmp_path / "r.json"
    f.write_text(json.dumps([{"tps": 10.0, "model": PLANT}], ensure_ascii=False))
    ws.cli("run", "import", str(f), "--format", "json", "--key-map", "total_token_throughput=tps",
           "--key-map", "label.model=model", "--hypothesis", "h")
    # a bench whose stderr carries the sequences (a failed run keeps its stderr tail)
    # (written as printf escapes: the spec itself is input, and refuses them)
    spec = {"name": "esc", "bench": {"cmd": ["sh", "-c", "printf 'x\\033]52;c;aGk=\\007\\033[2J\\342\\200\\256y' >&2; exit 3"]}}
    (ws.root / "runs" / "esc.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True))
    ws.cli("run", "launch", "runs/esc.yaml", check=False)
    # a hand-made commit: subject and trailers
    (ws.root / "hand.txt").write_text("x")
    ws.git("add", "hand.txt")
    subprocess.run(["git", "commit", "-q", "-m", f"subject {PLANT}\n\nOptlog-Event: note\nOptlog-Hypothesis: h{PLANT}"],
                   cwd=ws.root, check=True, env={**ws.env, "GIT_AUTHOR_NAME": f"a{RLO}", "GIT_AUTHOR_EMAIL": "a@x",
                                                  "GIT_COMMITTER_NAME": "c", "GIT_COMMITTER_EMAIL": "c@x"})
    runs = ws.j("run", "list")
    runs = runs["runs"] if isinstance(runs, dict) else runs
    assert len(runs) >= 2
    seen = []
    for args in (["run", "list"], ["run", "list", "--json"], *(["run", "show", str(r["id"])] for r in runs), ["log"]):
        r = ws.cli(*args, check=False)
        assert _raw(r.out + r.err) == [], (args, r.out[-800:])
        seen.append(r.out)
    assert any("\\x1b]52" in s or "\\u001b]52" in s for s in seen)
    rep = ws.j("report")
    text = (ws.root / rep["file"]).read_text()
    assert text and _raw(text) == [], text[-500:]

    pytest.importorskip("textual")
    from textual.widgets import DataTable

    from _tui import _app, _until

    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(140, 40)) as pilot:
            assert await _until(pilot, lambda: app.runs.total >= 2)
            for tab in ("runs", "log", "hyp"):
                await pilot.press({"hyp": "1", "runs": "3", "log": "5"}[tab])
                await pilot.pause(0.3)
            cells = []
            for t in app.query(DataTable):
                for i in range(t.row_count):
                    cells.extend(str(c) for c in t.get_row_at(i))
            joined = "\n".join(cells)
            assert "x\\x1b]52" in joined, joined[:500]
            assert _raw(joined) == []

    asyncio.run(go())
