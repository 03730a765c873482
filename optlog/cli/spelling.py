"""The CLI's one spelling of a verb parameter: an option by its long flag, an argument by its
metavar's name. Every CLI error that names a parameter is spelt here, whether a verb raised it
(`optlog.cli.binding.spell_for_cli`) or click's own parsing did (`optlog.cli.main`)."""

from __future__ import annotations

import re
from collections.abc import Callable

import click


def parameter(p: click.Parameter) -> str:
    """How the CLI names one click parameter."""
    if isinstance(p, click.Option):
        return flags([p])[p.name or ""]
    return metavars([p]).get(p.name or "", p.name or "")


def cli_spelling(command: click.Command) -> Callable[[str], str | None]:
    """The CLI's one spelling of a verb parameter, read from the command's click parameters: an
    option by its long flag (`out` → `--out`, `fmt` → `--format`), an argument by its metavar's
    name (`tid` → `ID`; `FILE|-`, `[HYP]`, `FILE…` → FILE, HYP). Anything else (a key of a file) is
    not a parameter the CLI spells: None, kept as it is."""
    return {**metavars(command.params), **flags(command.params)}.get


def flags(params: list[click.Parameter]) -> dict[str, str]:
    """Each option by its long flag."""
    return {p.name: next((o for o in p.opts if o.startswith("--")), p.opts[0])
            for p in params if isinstance(p, click.Option) and p.name}


def metavars(params: list[click.Parameter]) -> dict[str, str]:
    """Each argument by its metavar's name, as the usage line shows it (click's upper-cased name
    where it has no metavar)."""
    return {p.name: re.split(r"[|.…]", (p.metavar or p.name.upper()).strip("[]"))[0] or p.name.upper()
            for p in params if isinstance(p, click.Argument) and p.name}
