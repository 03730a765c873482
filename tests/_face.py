"""The MCP face called in-process (`optlog.cli.mcp.Face`), under the test workspace's environment:
what a tool call returns, to compare with the CLI's `--json` document for the same arguments."""

from __future__ import annotations

from typing import Any

import pytest

ENV = ("OPTLOG_DB_URL", "GIT_CONFIG_GLOBAL", "OPTLOG_ACTOR", "HOME")


@pytest.fixture
def face(ws: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`face(name, args) -> (document, is_error, exit_code)` on one long-lived Face of `ws`."""
    for k in ENV:
        if k in ws.env:
            monkeypatch.setenv(k, ws.env[k])
    from optlog.cli.mcp import Face

    f = Face(str(ws.root))
    yield f.call
    f.close()
