"""`agent setup` through the MCP face: the same binding as the CLI (tests/cli/test_agentface.py has
what it writes), so the tool's document is the CLI's for the same folder, and with no `dir` it
writes into the server's workspace (the CLI's -C)."""

from __future__ import annotations

import json

from tests._face import use_env


def test_the_agent_setup_tool_gives_the_cli_document_and_defaults_to_the_server_folder(ws, tmp_path, monkeypatch):
    from optlog.cli.mcp import Face

    use_env(ws, monkeypatch)
    a, b = tmp_path / "a", tmp_path / "b"
    for p in (a, b):
        p.mkdir()
        (p / "CLAUDE.md").write_text("# My project\n")
    cli = ws.j("agent", "setup", "claude-code", "--dir", str(a))
    face = Face(str(ws.root))
    try:
        doc, is_error, code = face.call("agent_setup", {"agent": "claude-code", "dir": str(b)})
        assert not is_error and code == 0, doc
        here, is_error, _ = face.call("agent_setup", {"agent": "opencode"})
        assert not is_error, here
        bad, is_error, code = face.call("agent_setup", {"agent": "cursor"})
        assert is_error and code == 2 and bad["error"]["field"] == "agent", bad
    finally:
        face.close()
    assert json.loads(json.dumps(doc).replace(str(b), str(a))) == cli
    assert (b / "CLAUDE.md").read_text() == (a / "CLAUDE.md").read_text()
    assert (ws.root / "opencode.json").is_file() and not (ws.root / ".mcp.json").exists()
