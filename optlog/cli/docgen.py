"""The CLI reference page, generated from the command tree itself (docs/cli-reference.md).

A hand-written reference goes stale the day an option is added; this one is rendered from the same
click declarations the CLI parses, with each command's MCP tool (`optlog.mcp.tools`, made from the same verb), and
`cog --check` in the tests fails when the checked-in page differs from what the code says.
"""

from __future__ import annotations

import click

from optlog.cli.binding import of
from optlog.cli.commands import skipped, walk
from optlog.mcp.tools import build

_GLOBAL = {"json_", "chdir", "help", "version"}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _kind(p: click.Parameter) -> str:
    if isinstance(p, click.Option) and p.is_flag and not p.count:
        return "flag"
    t = p.type
    kind = (" \\| ".join(f"`{c}`" for c in t.choices) if isinstance(t, click.Choice)
            else {"integer": "integer", "float": "number", "boolean": "true/false"}.get(t.name, "text"))
    return kind + (" (repeatable)" if getattr(p, "multiple", False) else "")


def _default(p: click.Parameter) -> str:
    d = p.default
    if not isinstance(d, (str, int, float, tuple)) or d in ((), "") or isinstance(d, bool):
        return ""  # none, a flag's off, click's "unset" sentinel, or computed at call time
    if isinstance(d, tuple):
        d = ", ".join(map(str, d))
    return f"`{d}`"


def _option_names(p: click.Option) -> str:
    names = ", ".join(f"`{o}`" for o in p.opts)
    if p.secondary_opts:
        names += " / " + ", ".join(f"`{o}`" for o in p.secondary_opts)
    return names


def command_section(path: tuple[str, ...], cmd: click.Command) -> str:
    """One command: usage, its first help paragraph, its MCP tool, and a table of its options."""
    ctx = click.Context(cmd, info_name="optlog " + " ".join(path))
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out = [f"### `optlog {' '.join(path)}`", "", f"`optlog {' '.join(path)} {usage}`", ""]
    doc = (cmd.help or cmd.short_help or "").strip().split("\n\n")[0]
    if doc:
        out += [" ".join(doc.split()), ""]
    why_not = skipped(cmd)
    # the tool's parameter for each click parameter: an agent reads this page too, and must not
    # call `plan_add` with `--step` when the tool takes `steps` (issue 31)
    verb = of(cmd.callback)
    tool = build(verb) if verb is not None and why_not is None else None
    names = {} if tool is None else {tp.param.name: n for n, tp in tool.params.items()}
    if tool is None:
        out += [f"MCP: not a tool ({why_not}).", ""]
    else:
        args = [f"`{names[p.name]}`" for p in cmd.params if isinstance(p, click.Argument) and p.name in names]
        out += [f"MCP tool: `{tool.name}`" + (f"; arguments: {', '.join(args)}" if args else "")
                + "; each option's tool parameter is in the table." if names else f"MCP tool: `{tool.name}`.", ""]
    opts = [p for p in cmd.params if isinstance(p, click.Option) and p.name not in _GLOBAL and p.expose_value]
    if opts:
        out += ["| option | tool parameter | value | default | meaning |", "|---|---|---|---|---|"]
        for p in opts:
            tp = f"`{names[p.name]}`" if p.name in names else ""
            out.append(f"| {_option_names(p)} | {tp} | {_kind(p)} | {_default(p)} | {_cell(p.help or '')} |")
        out.append("")
    return "\n".join(out)


def cli_reference() -> str:
    """Every command of the tree: the top-level ones first, then each group's, in the tree's order."""
    commands = walk()
    out = ["## Top-level commands", ""]
    out += [command_section(p, c) for p, c in commands if len(p) == 1]
    group = None
    for path, cmd in commands:
        if len(path) == 1:
            continue
        if path[0] != group:
            group = path[0]
            out += [f"## optlog {group}", ""]
        out.append(command_section(path, cmd))
    return "\n".join(out).rstrip() + "\n"
