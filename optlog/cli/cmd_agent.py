"""agent setup: connect a coding agent (Claude Code, OpenCode) to this notebook."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent
from optlog.service import agentsetup


@click.group("agent")
def agent_group() -> None:
    """Set up coding agents to use optlog (MCP server, instructions, todo hook)."""


def _human(r: dict[str, Any]) -> str:
    return "\n".join(f"{f['action']:>9}  {f['file']}" + (f"  ({'; '.join(f['notes'])})" if f["notes"] else "")
                     for f in r["files"])


@agent_group.command("setup")
@click.argument("which", metavar="AGENT", type=click.Choice(("claude-code", "opencode")))
@click.option("--dir", "folder", metavar="PATH", help="The project folder to write into (default: the current one).")
@agent(args={"which": "The coding agent to set up."})
@verb(_human)
def agent_setup(call: Call, which: str, folder: str | None) -> Any:
    """Write the MCP server entry, an instructions file teaching the loop, and a todo-mirroring hook
    (merging JSON, never overwriting your entries)."""
    return agentsetup.setup(which, folder or call.chdir)
