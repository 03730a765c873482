"""What the CLI adds around a verb of the catalogue: the `Call` it makes, the exit code a
document gives, and the CLI's one spelling of the verb parameters an error names.

A verb (`optlog.api.verb`) takes a `Call` and its parameters as typed values and returns its
document; `optlog.cli.commands` generates its click command, whose callback makes the CLI's `Call`
(`cli_call`), calls the verb, prints the document (`--json`) or its human rendering and exits with
the code the verb's `exit` gives (the verb's own `exit_code`). The MCP face (`optlog.mcp.tools`) validates a tool
call's JSON arguments into the same typed values (by the verb's argument model) and calls the same verb:
no command line is built, nothing is re-serialised to text. So a tool's structured result is the
CLI's `--json` document for the same arguments by construction.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from optlog.api.verb import Call, Verb
from optlog.cli.dashboard import dashboard
from optlog.cli.main import cli, load, notice, service_ctx, state
from optlog.cli.spelling import cli_spelling, flags
from optlog.errors import OptlogError, spell_doc

def of(callback: Callable[..., Any] | None) -> Verb | None:
    """The verb behind a click callback that `optlog.cli.commands` generated, or None."""
    return getattr(callback, "__optlog_binding__", None) if callback is not None else None


def cli_call(writes: bool = True) -> Call:
    """The Call of the command the CLI is running now (`writes=False`: a read verb's, whose session
    commits nothing on opening)."""
    st = state()
    return Call(chdir=st.chdir, ctx=lambda: service_ctx(writes), narrate=True, say=notice, tools=_tools,
                dashboard=dashboard)


# what makes the MCP tools (`agent tools` describes them on the CLI too); named, as the commands
# are (`optlog.cli.main.LAZY`), since the tools import this module and only that verb needs them
TOOLS = "optlog.mcp.tools:tools"


def _tools() -> Mapping[str, Any]:
    made: Mapping[str, Any] = load(TOOLS)()
    return made


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
        elif name in (fl := flags(cmd.params)):
            seen.add(fl[name])
    return seen.pop() if len(seen) == 1 else None


def cli_words() -> Callable[[str], str | None]:
    """The CLI's spelling of the verb parameters of the command running now (any command's, for a
    name it lacks); no command running: none (a name reads as itself)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return lambda _n: None
    own = cli_spelling(ctx.command)
    return lambda n: own(n) or _any_command_spelling(n)


def spell_doc_for_cli(doc: Any) -> Any:
    """A verb's document with the parameters its warnings name in the CLI's spelling (`--a parallel=1`)."""
    return spell_doc(doc, cli_words())


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
    if err.file is not None and not _gave(err.file, kw):
        err.field = field
    return err


def _gave(file: str, kw: Mapping[str, Any]) -> bool:
    """Whether an argument of the call (an item of a repeated one) named `file`: as given, or a
    relative path the verb resolved (`r.json` given, `/ws/r.json` in the error)."""
    shown = Path(file).parts
    for v in kw.values():
        for x in v if isinstance(v, (tuple, list)) else (v,):
            if isinstance(x, (str, os.PathLike)) and str(x):
                given = Path(x).parts
                if str(x) == file or (given and shown[-len(given):] == given):
                    return True
    return False
