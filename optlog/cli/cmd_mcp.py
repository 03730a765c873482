"""mcp: the MCP server (a module of its own: `optlog mcp` loads click, this and the MCP SDK, and
answers `initialize` before the rest of the command tree; optlog.cli.mcpserver)."""

from __future__ import annotations

import click

from optlog.cli.main import agent, state
from optlog.cli.mcpserver import serve


@click.command("mcp")
@agent(skip="the MCP server itself")
def mcp_cmd() -> None:
    """Serve optlog's verbs as MCP tools over stdio (for coding agents)."""
    serve(state().chdir)
