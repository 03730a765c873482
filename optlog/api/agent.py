"""agent setup | tools: connect a coding agent (Claude Code, OpenCode) to this notebook, and tell it
the MCP tools in full."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Protocol

from optlog.api.verb import Arg, Call, Opt, group, verb
from optlog.errors import Failed, not_found
from optlog.service import agentsetup

group("agent", "Set up coding agents to use optlog (MCP server, instructions, todo hook).")


class ToolParam(Protocol):
    """What `agent tools` reads of a tool's parameter (`optlog.mcp.tools.Param`)."""

    @property
    def schema(self) -> Mapping[str, Any]: ...

    @property
    def required(self) -> bool: ...


class Tool(Protocol):
    """What `agent tools` reads of an MCP tool (`optlog.mcp.tools.Tool`, made by the MCP face)."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> tuple[str, ...]: ...

    @property
    def description(self) -> str: ...

    @property
    def params(self) -> Mapping[str, ToolParam]: ...

    def listing(self) -> tuple[str, Any]: ...


@verb("agent setup")
def agent_setup(call: Call, *,
                which: Annotated[str, Arg(metavar="AGENT", choices=("claude-code", "opencode"),
                                          help="The coding agent to set up.")],
                folder: Annotated[str | None, Opt("--dir", metavar="PATH",
                                                  help="The project folder to write into (default: the current one).")] = None,
                ) -> Any:
    """Write the MCP server entry, an instructions file teaching the loop, and a todo-mirroring hook
    (merging JSON, never overwriting your entries)."""
    return agentsetup.setup(which, folder or call.chdir)


@verb("agent tools", read_only=True)
def agent_tools(call: Call, *,
                name: Annotated[str | None, Arg(help="A tool's name, for its whole description and every parameter's.")] = None,
                ) -> Any:
    """The MCP tools: each one's summary, or one tool's whole description and parameters (tools/list
    gives them shortened, to stay small)."""
    if call.tools is None:
        raise Failed("no MCP tools in this face: ask the CLI (optlog agent tools) or the MCP server")
    return describe(call.tools(), name)


def describe(all_tools: Mapping[str, Tool], name: str | None) -> dict[str, Any]:
    if name is None:
        return {"tools": [{"name": t.name, "summary": t.listing()[0]} for t in all_tools.values()]}
    t = all_tools.get(name)
    if t is None:
        raise not_found("tool", name, list(all_tools), field="name")
    params = {n: {k: v for k, v in p.schema.items() if k != "additionalProperties"} | ({"required": True} if p.required else {})
              for n, p in t.params.items()}
    return {"tool": t.name, "cli": " ".join(t.path), "description": t.description, "parameters": params}
