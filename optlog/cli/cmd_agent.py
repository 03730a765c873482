"""agent setup: connect a coding agent (Claude Code, OpenCode) to this notebook."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent
from optlog.cli.tools import tools
from optlog.errors import not_found
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


def _tools_human(r: dict[str, Any]) -> str:
    if "tools" in r:
        return "\n".join(f"{t['name']:<22} {t['summary']}" for t in r["tools"])
    lines = [f"{r['tool']} (optlog {r['cli']}): {r['description']}", ""]
    for n, p in r["parameters"].items():
        lines.append(f"  {n}{' (required)' if p.get('required') else ''}: {p.get('description', '')}")
    return "\n".join(lines)


@agent_group.command("tools")
@click.argument("name", required=False)
@agent(read_only=True, args={"name": "A tool's name, for its whole description and every parameter's."})
@verb(_tools_human)
def agent_tools(call: Call, name: str | None) -> Any:
    """The MCP tools: each one's summary, or one tool's whole description and parameters (tools/list
    gives them shortened, to stay small)."""
    return describe(tools(), name)


def describe(all_tools: dict[str, Any], name: str | None) -> dict[str, Any]:
    if name is None:
        return {"tools": [{"name": t.name, "summary": t.listing()[0]} for t in all_tools.values()]}
    t = all_tools.get(name)
    if t is None:
        raise not_found("tool", name, list(all_tools), field="NAME")
    params = {n: {k: v for k, v in p.schema.items() if k != "additionalProperties"} | ({"required": True} if p.required else {})
              for n, p in t.params.items()}
    return {"tool": t.name, "cli": " ".join(t.path), "description": t.description, "parameters": params}
