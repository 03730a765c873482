"""A command's binding to its service verb: typed values in, the command's document out.

Each leaf command is declared once, as a click command whose function is a *binding*: it takes a
`Call` (the workspace context, where the call runs, whether a person watches) and the command's
parameters as typed values, calls its one service verb, and returns the document. `@verb(...)`
turns it into the click callback and keeps it for the other face:

- the CLI parses its own syntax with click (`K=V` pairs and JSON texts are click types in
  `optlog.cli.options`, so a binding never sees command-line text), calls the binding, prints
  the document (`--json`) or its human rendering, and exits with the code `exit` gives;
- the MCP face (`optlog.cli.tools`) converts a tool call's JSON arguments to the same typed
  values and calls the same binding with its long-lived context: no command line is built,
  nothing is re-serialised to text, no click context exists.

So the tool's structured result is the CLI's `--json` document for the same arguments by
construction, and what differs between the faces is only what each does with the document.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import click

from optlog.api.verb import Call, Exit, Human
from optlog.cli.dashboard import dashboard
from optlog.cli.main import cli, emit, notice, service_ctx, state
from optlog.errors import OptlogError

__all__ = ["Binding", "Call", "Exit", "Human", "cli_call", "of", "spell_for_cli", "verb"]


@dataclass(frozen=True)
class Binding:
    """A command's binding and how its document becomes an exit code (0 when `exit` is None)."""

    fn: Callable[..., Any]
    exit: Exit | None = None

    def exit_code(self, doc: Any, args: Mapping[str, Any]) -> int:
        return self.exit(doc, args) if self.exit is not None else 0


def of(callback: Callable[..., Any] | None) -> Binding | None:
    """The binding behind a click callback made by `verb`, or None."""
    return getattr(callback, "__optlog_binding__", None) if callback is not None else None


def cli_call() -> Call:
    """The Call of the command the CLI is running now."""
    st = state()
    return Call(chdir=st.chdir, ctx=service_ctx, narrate=True, say=notice, tools=_tools, dashboard=dashboard)


# what makes the MCP tools (`agent tools` describes them on the CLI too); named, as the commands
# are (`optlog.cli.main.LAZY`), since the tools import this module and only that verb needs them
TOOLS = "optlog.cli.tools:tools"


def _tools() -> Mapping[str, Any]:
    mod, attr = TOOLS.split(":")
    made: Mapping[str, Any] = getattr(importlib.import_module(mod), attr)()
    return made


def cli_spelling(command: click.Command) -> Callable[[str], str | None]:
    """The CLI's one spelling of a verb parameter, read from the command's click parameters: an
    option by its long flag (`out` → `--out`, `fmt` → `--format`), an argument by its metavar's
    name (`tid` → `ID`; `FILE|-`, `[HYP]`, `FILE…` → FILE, HYP). Anything else (a key of a file) is
    not a parameter the CLI spells: None, kept as it is."""
    return {**_metavars(command.params), **_flags(command.params)}.get


def _flags(params: list[click.Parameter]) -> dict[str, str]:
    return {p.name: next((o for o in p.opts if o.startswith("--")), p.opts[0])
            for p in params if isinstance(p, click.Option) and p.name}


def _metavars(params: list[click.Parameter]) -> dict[str, str]:
    return {p.name: re.split(r"[|.…]", (p.metavar or p.name.upper()).strip("[]"))[0] or p.name.upper()
            for p in params if isinstance(p, click.Argument) and p.name}


def _any_command_spelling(name: str) -> str | None:
    """An option of another command, named in a message as advice (rare: only when the running
    command has no parameter of that name), by the whole command tree's one spelling of it."""
    seen: set[str] = set()
    stack: list[tuple[click.Command, click.Context]] = [(cli, click.Context(cli, info_name="optlog"))]
    while stack:
        cmd, ctx = stack.pop()
        if isinstance(cmd, click.Group):
            for n in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, n)
                if sub is not None:
                    stack.append((sub, click.Context(sub, info_name=n, parent=ctx)))
        elif name in (flags := _flags(cmd.params)):
            seen.add(flags[name])
    return seen.pop() if len(seen) == 1 else None


def spell_for_cli(err: OptlogError, kw: Mapping[str, Any]) -> OptlogError:
    """`err` as the CLI says it: the verb parameters it names, in their option spelling. An error
    in a file names a parameter only when a parameter of the call gave that file (`--dataset
    bad.jsonl`, `run import FILE… --format`); in a file the workspace holds (a plan, a run spec by
    name) the field is a key of the file (a plan's `gain`), not the option of the same name."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return err
    field = err.field
    own = cli_spelling(ctx.command)
    err.spell(own, lambda n: own(n) or _any_command_spelling(n))
    if err.file is not None and str(err.file) not in _given(kw):
        err.field = field
    return err


def _given(kw: Mapping[str, Any]) -> set[str]:
    """The texts of a call's arguments (the items of a repeated one): what may name a file."""
    out: set[str] = set()
    for v in kw.values():
        for x in v if isinstance(v, (tuple, list)) else (v,):
            if isinstance(x, (str, os.PathLike)):
                out.add(str(x))
    return out


def verb(human: Human = None, *, exit: Exit | None = None,  # noqa: A002
         text: Callable[..., int | None] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a binding `fn(call, **typed) -> document` the click callback of its command.

    `human` renders the document for a person (a string, or a function of the document); `exit`
    maps the document and the call's typed arguments to the exit code (a failed run is 1); `text`, when given, is what the CLI
    does instead without --json (`run logs` streams lines; it has no document to render). Put it
    directly above the function, under the `@click...` and `@agent` decorators."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def callback(**kw: Any) -> int | None:
            call = cli_call()
            try:
                if text is not None and not state().json:
                    return text(call, **kw)
                doc = fn(call, **kw)
                emit(doc, human)
            except OptlogError as e:
                spell_for_cli(e, kw)  # the same error, its parameters in the CLI's spelling
                raise
            return exit(doc, kw) if exit is not None else None

        del callback.__wrapped__  # click must see the callback's own signature, not the binding's
        callback.__optlog_binding__ = Binding(fn, exit)  # type: ignore[attr-defined]
        return callback

    return deco
