"""tui and mcp: the commands that start a face. They are no verbs (no document, no MCP tool: each
is `skip`ped), so they stay plain click commands of the CLI's own, beside the catalogue.

`optlog mcp` loads click, this and the MCP SDK, and answers `initialize` before the rest
(optlog.mcp.server, the MCP face's own package); Textual loads only when the dashboard opens (optlog.cli.dashboard).
"""

from __future__ import annotations

import click

from optlog.cli.dashboard import open_tui
from optlog.cli.main import agent, state
from optlog.mcp.server import serve


@click.command("tui")
@agent(skip="interactive: a terminal dashboard")
def tui_cmd() -> None:
    """Open the dashboard (the same as bare `optlog` on a terminal)."""
    open_tui(state().chdir)


@click.command("mcp")
@agent(skip="the MCP server itself")
def mcp_cmd() -> None:
    """Serve optlog's verbs as MCP tools over stdio (for coding agents)."""
    serve(state().chdir)
