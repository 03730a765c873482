"""Entry point: the root command group, global options, error documents and exit codes.

Exit codes: 0 success; 1 the operation failed (a run failed, `verdict --check` found a falsified or
inconclusive prediction, a conflict); 2 bad input (usage, unknown id, malformed file). Under
`--json`, stdout carries exactly one JSON document, errors included; narration goes to stderr.

Subcommands are imported only when invoked, so an agent calling `optlog todo list --json` many
times a minute does not pay for the TUI, httpx or git.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any

import click

from optlog import __version__, settings
from optlog.api import ALIAS_NOUNS, NOUNS
from optlog.cli import fast, spelling
from optlog.core import text as TX
from optlog.core.limits import LIMITS
from optlog.errors import BadInput, Failed, Interrupted, OptlogError, no_space, out_of_space, plain, spell_text
from optlog.gitlog.commit import run_git

if TYPE_CHECKING:
    from optlog.api.session import Ctx

# name -> "module:attribute"; aliases point at the same object
LAZY: dict[str, str] = {
    "tui": "optlog.cli.faces:tui_cmd",
    "telemetry": "optlog.cli.streams:telemetry",
    "mcp": "optlog.cli.faces:mcp_cmd",
}
ALIASES = fast.ALIASES


class State:
    def __init__(self) -> None:
        self.json = False
        self.chdir: str | None = None


def agent(*, skip: str) -> Any:
    """Mark one of the CLI's own click commands (a face or a stream: `cli/faces.py`,
    `cli/streams.py`) as no MCP tool, saying why. A verb of the catalogue says what an agent sees
    on its own declaration (`optlog.api.verb`). Put it under the `@...command(...)` decorator."""

    def mark(fn: Any) -> Any:
        fn.__optlog_agent__ = {"skip": skip}
        return fn

    return mark


def state() -> State:
    ctx = click.get_current_context()
    root = ctx.find_root()
    if root.obj is None:
        root.obj = State()
    return root.obj


def _set_json(ctx: click.Context, _p: click.Parameter, value: bool) -> None:
    if value:
        root = ctx.find_root()
        if root.obj is None:
            root.obj = State()
        root.obj.json = True


def _set_chdir(ctx: click.Context, _p: click.Parameter, value: str | None) -> None:
    if value:
        root = ctx.find_root()
        if root.obj is None:
            root.obj = State()
        root.obj.chdir = value


def _global_params() -> list[click.Parameter]:
    return [
        click.Option(["--json", "json_"], is_flag=True, expose_value=False, is_eager=True, callback=_set_json,
                     help="Print one JSON document on stdout."),
        click.Option(["-C", "chdir"], metavar="PATH", expose_value=False, is_eager=True, callback=_set_chdir,
                     help="Run as if started in PATH (the workspace)."),
    ]


def add_global_options(cmd: click.Command) -> click.Command:
    """-C and --json are accepted before or after any subcommand."""
    names = {p.name for p in cmd.params}
    if "json_" not in names:
        cmd.params.extend(_global_params())
    if isinstance(cmd, click.Group) and not isinstance(cmd, LazyGroup):
        for sub in cmd.commands.values():
            add_global_options(sub)
    return cmd


class SuggestingGroup(click.Group):
    """A group whose "No such command" says "Did you mean …?" from every command it knows: click
    suggests only from `self.commands`, which a lazy group (the CLI's, a noun's verbs declared in
    other modules) has not filled yet."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.NoSuchCommand as e:
            known = [*self.list_commands(ctx), *(ALIASES if isinstance(self, LazyGroup) else ())]
            raise click.NoSuchCommand(e.command_name, possibilities=known, ctx=ctx) from None


class LazyGroup(SuggestingGroup):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*LAZY, *NOUNS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        name = ALIASES.get(name, name)
        if name in NOUNS or name in ALIAS_NOUNS:  # a noun of the verb catalogue: generated from its declarations
            return add_global_options(load(BUILDER)(name, NOUNS.get(name) or ALIAS_NOUNS[name]))
        target = LAZY.get(name)
        if target is None:
            return None
        try:
            cmd = load(target)
        except ModuleNotFoundError as e:
            if e.name == target.split(":")[0]:
                return None  # a face not built yet
            raise
        return add_global_options(cmd)


# what builds a catalogue noun's click command (`optlog.cli.commands.noun`); named, as the commands
# are, since the builder imports this module
BUILDER = "optlog.cli.commands:noun"


def load(target: str) -> Any:
    mod, attr = target.split(":")
    return getattr(importlib.import_module(mod), attr)


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="optlog")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """optlog: the lab notebook of inference performance work.

    Hypotheses with machine-checkable predictions, benchmark runs as evidence, noise-aware
    verdicts, ranked plans; every decision committed to git. Bare `optlog` opens the TUI on a
    terminal.
    """
    if ctx.obj is None:
        ctx.obj = State()
    if ctx.invoked_subcommand is None:
        if sys.stdin.isatty() and sys.stdout.isatty() and not ctx.obj.json:
            tui = cli.get_command(ctx, "tui")  # through the lazy registry, like any command
            assert tui is not None
            ctx.invoke(tui)
        else:
            click.echo(ctx.get_help())


add_global_options(cli)


# ---------------------------------------------------------------- helpers for commands


def service_ctx(writes: bool = True) -> Ctx:
    """The session of the workspace named by -C or found from the current folder (`open_session`),
    made when a verb first asks for it (`init` and `demo` never do). `writes=False`: a read verb's,
    whose opening commits nothing (`Ctx.writes`)."""
    from optlog.api.session import open_session  # deferred: the store and git; --version and --help never need them

    c = open_session(state().chdir, on_notice=notice)
    c.writes = writes
    _OPEN.append(c)
    c.settle()  # a launch whose optlog died is recovered by any next command (docs/launching.md)
    return c


_OPEN: list[Any] = []  # contexts made by this invocation; main() closes them (pools, connections)


def close_contexts() -> None:
    while _OPEN:
        try:
            _OPEN.pop().close()
        except Exception:  # pragma: no cover - closing must never mask the command's outcome
            pass


def emit(data: Any, human: Any = None) -> None:
    """Print `data` as JSON under --json, else the human rendering (a string or a callable).
    Everything printed passes the output rule (`optlog.core.text.shown`): no data drives the
    terminal."""
    st = state()
    if st.json:
        # Indented for a person at a terminal; compact (C encoder, ~5x faster on large documents)
        # for the agents and scripts that read it through a pipe.
        text = TX.json_shown(json.dumps(data, default=str, ensure_ascii=False))
        fast.record(text)  # a read the read cache keeps (see optlog.cli.fast)
        click.echo(TX.json_shown(json.dumps(data, indent=2, default=str, ensure_ascii=False))
                   if sys.stdout.isatty() else text)
        return
    if human is None:
        click.echo(TX.json_shown(json.dumps(data, indent=2, default=str, ensure_ascii=False)))
    elif callable(human):
        text = human(data)
        if text is not None:
            click.echo(TX.shown(str(text)))
    else:
        click.echo(TX.shown(str(human)))


def notice(text: str) -> None:
    fast.noticed()
    cur = click.get_current_context(silent=True)  # the parameters a notice names, as this command spells them
    text = spell_text(text, spelling.cli_spelling(cur.command)) if cur is not None else plain(text)
    click.echo(f"optlog: {TX.shown(text)}", err=True)


def _wants_json(argv: list[str]) -> bool:
    for a in argv:
        if a == "--":
            return False
        if a == "--json":
            return True
    return False


def _print_error(err: OptlogError, as_json: bool) -> None:
    if as_json:
        click.echo(TX.json_shown(json.dumps(err.to_json(), indent=2, ensure_ascii=False)))
    click.echo(f"optlog: error: {TX.shown(str(err))}", err=True)


def check_argv(args: list[str]) -> None:
    """The text rule (`optlog.core.text`) on every argument, before any command runs: no control
    character but tab and newline, valid UTF-8, at most LIMITS.arg_chars. One-line fields (titles,
    ids, labels) are narrowed further where they are read."""
    for i, a in enumerate(args):
        why = TX.problem(a, multiline=True, max_chars=LIMITS.arg_chars)
        if why is None:
            continue
        if a.startswith("--") and "=" in a:
            fld = a.split("=", 1)[0]
        elif i > 0 and args[i - 1].startswith("-") and "=" not in args[i - 1]:
            fld = args[i - 1]
        else:
            fld = f"argument {i + 1}"
        raise BadInput(why, field=fld, code="bad_text")


def internal_error(e: BaseException, db_url: str | None = None) -> OptlogError:
    """An exception no check foresaw, as an error document (`optlog.api.session.internal_error`),
    with the database this invocation opened."""
    from optlog.api.session import internal_error as unforeseen  # deferred: the store and git; only an error needs it

    c = next(iter(_OPEN), None)
    return unforeseen(e, db_url or (c.ws.db_url if c is not None else None),
                      str(c.ws.sqlite_file or c.ws.db_url) if c is not None else None)


def _space(e: BaseException) -> OptlogError | None:
    """A write the disk had no room for, said as such (`disk_full`, exit 1) with the files the
    command left differing from the last commit, where a verb did not say it already."""
    if isinstance(e, OptlogError) and e.code == "disk_full":
        return None
    roots = [c.ws.root for c in _OPEN]
    if not roots or not out_of_space(e, roots[0]):
        return None
    p = run_git(roots[0], "--no-optional-locks", "status", "--porcelain", "--untracked-files=all", "--", ".",
                check=False)
    changed = [ln[3:] for ln in p.stdout.splitlines() if len(ln) > 3]
    left = (f"files that differ from the last commit now (left by this command or edited before): {', '.join(changed[:10])}"
            + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")) if changed else \
        "no file differs from the last commit" if p.returncode == 0 else "git could not say which files it left"
    return no_space(roots[0], f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}; {left}")


def _quiet_library_warnings() -> None:
    """No library warning reaches the terminal (stderr is optlog's narration, not scipy's or
    SQLAlchemy's): Python warnings are dropped at this boundary unless PYTHONWARNINGS asks for them
    (a developer debugging a warning sets it)."""
    if not settings.environ().get("PYTHONWARNINGS") and not sys.warnoptions:
        warnings.simplefilter("ignore")


def main(argv: list[str] | None = None) -> None:
    _quiet_library_warnings()
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(args)
    code = 0
    try:
        check_argv(args)
        rv = cli.main(args=args, prog_name="optlog", standalone_mode=False)
        if isinstance(rv, int):
            code = rv
    except click.exceptions.NoArgsIsHelpError as e:
        if as_json:  # stdout must stay one JSON document
            _print_error(BadInput(f"missing command: {e.ctx.command_path if e.ctx else 'optlog'} needs a subcommand",
                                  code="usage"), True)
            code = 2
        else:
            click.echo(e.ctx.get_help() if e.ctx else str(e))
    except click.UsageError as e:
        field = None
        if isinstance(e, click.BadParameter) and e.param is not None:
            field = spelling.parameter(e.param)  # the CLI's one spelling: --flag, or an argument's metavar
        close = getattr(e, "possibilities", None)  # click's did-you-mean (NoSuchCommand, NoSuchOption)
        err: OptlogError = BadInput(e.format_message(), field=field, code="usage",
                                    extra={"did_you_mean": list(close)} if close else {})
        if not as_json and e.ctx is not None:
            click.echo(e.ctx.get_usage(), err=True)
        _print_error(err, as_json)
        code = 2
    except click.exceptions.Abort:
        click.echo("optlog: aborted", err=True)
        code = 130
    except click.exceptions.Exit as e:
        code = e.exit_code
    except OptlogError as e:
        e = _space(e) or e
        _print_error(e, as_json)
        code = e.exit_code
    except KeyboardInterrupt:
        click.echo("optlog: interrupted", err=True)
        code = 130
    except Interrupted as e:  # a launch heard a signal before its driver ran (runs.interrupt)
        _print_error(Failed(str(e), code="cancelled", extra={"signal": e.name}), as_json)
        code = e.exit_code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 1
    except Exception as e:  # the last net: see internal_error
        err = _space(e) or internal_error(e)
        _print_error(err, as_json)
        code = err.exit_code
    finally:
        close_contexts()
    fast.commit(code)
    sys.exit(code)
