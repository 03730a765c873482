"""The click commands, generated from the verb catalogue (`optlog.api`).

A verb's signature says everything its command needs (`optlog.api.verb`); this module is the one
place that turns it into click: each parameter into a `click.Argument` or `click.Option`, the verb
into a command whose callback makes the CLI's `Call`, calls the verb, prints the document (`--json`)
or its human rendering (`optlog.cli.render`), names the verb's parameters in an error by their flags, and exits with the
verb's exit code. A noun becomes a command group. The MCP face (`optlog.mcp`) makes its tools from
the same verbs, through their argument models and not through click.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import click

from optlog.api import verb as V
from optlog.cli import render
from optlog.cli.binding import cli_call, spell_doc_for_cli, spell_for_cli
from optlog.cli.main import SuggestingGroup, add_global_options, cli, emit, state
from optlog.cli.options import BoundedInt, FiniteFloat, JsonValue, KeyValue
from optlog.errors import OptlogError

_SCALAR: dict[Any, Any] = {int: BoundedInt(), float: FiniteFloat()}  # inside the database's and the doubles' range


def parameter(p: V.Param) -> click.Parameter:
    """One verb parameter as click declares it (only what differs from click's defaults is given,
    so the help and the reference page read as a hand-written declaration would)."""
    kw: dict[str, Any] = {}
    flags = list(p.spec.flags) if isinstance(p.spec, V.Opt) else []
    flags = flags or ["--" + p.name.replace("_", "-")]
    if p.kind is not None:  # errors in a pair or a JSON value name the option, as the CLI spells it
        flag = next(f.split("/")[0] for f in flags if f.startswith("--"))
        kw["type"] = KeyValue(flag, lists=p.kind.lists) if isinstance(p.kind, V.Pairs) else JsonValue(flag)
    elif p.spec.choices is not None:
        kw["type"] = click.Choice(p.spec.choices, case_sensitive=not isinstance(p.spec, V.Opt) or p.spec.case_sensitive)
    elif p.item in _SCALAR:
        kw["type"] = _SCALAR[p.item]
    if isinstance(p.spec, V.Arg):
        if p.spec.metavar:
            kw["metavar"] = p.spec.metavar
        if p.many:
            kw["nargs"] = -1
        kw["required"] = p.required
        return click.Argument([p.name], **kw)
    spec = p.spec
    if p.item is bool and not any("/" in f for f in flags):
        kw["is_flag"] = True
    if p.many:
        kw["multiple"] = True
    if p.required:
        kw["required"] = True
    elif not (p.default is None or (p.many and p.default == ()) or (kw.get("is_flag") and p.default is False)):
        kw["default"] = p.default
    for k in ("show_default", "hidden"):
        if getattr(spec, k):
            kw[k] = True
    if spec.metavar:
        kw["metavar"] = spec.metavar
    if spec.help:
        kw["help"] = spec.help
    return click.Option([*flags, p.name], **kw)


def command(v: V.Verb) -> click.Command:
    """The click command of one verb."""
    params = v.params()

    def callback(**kw: Any) -> int | None:
        call = cli_call(writes=not v.agent.get("read_only"))
        try:
            if v.text is not None and not state().json:
                shown = v.text(call, **kw)
                if not isinstance(shown, dict):
                    return shown
                doc = shown
            else:
                doc = spell_doc_for_cli(v.fn(call, **kw))  # the parameters its warnings name, as the CLI spells them
            emit(doc, None if state().json else render.human(v))  # --json loads no text module
        except OptlogError as e:
            spell_for_cli(e, kw)  # the same error, its parameters in the CLI's spelling
            raise
        return v.exit(doc, kw) if v.exit is not None else None

    callback.__optlog_binding__ = v  # type: ignore[attr-defined]  # binding.of: the verb behind the command
    callback.__optlog_agent__ = dict(v.agent)  # type: ignore[attr-defined]  # skipped(): `skip`
    return click.Command(v.name or v.path[-1], callback=callback, params=[parameter(p) for p in params],
                         help=v.help)


def walk(group: click.Group | None = None, ctx: click.Context | None = None,
         prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every leaf command under `group` (default: the root), by path; aliases are not repeated."""
    group = group or cli
    ctx = ctx or click.Context(group, info_name="optlog")
    out: list[tuple[tuple[str, ...], click.Command]] = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None:
            continue
        if isinstance(cmd, click.Group):
            out += walk(cmd, click.Context(cmd, info_name=name, parent=ctx), prefix + (name,))
        else:
            out.append((prefix + (name,), cmd))
    return out


def skipped(cmd: click.Command) -> str | None:
    """Why a command is not an MCP tool (`optlog.cli.main.agent`, a verb's `skip`), or None."""
    meta = getattr(cmd.callback, "__optlog_agent__", {}) if cmd.callback else {}
    return meta.get("skip")


@functools.cache
def noun(name: str, module: str) -> click.Command:
    """The command (a group, or a lone verb) declared under `name` by `module`."""
    importlib.import_module(module)
    return _node((name,))


def _node(path: tuple[str, ...]) -> click.Command:
    verbs = V.verbs_under(path)
    g = V.groups_under(path).get(path)
    if g is None:
        if path in verbs:
            return command(verbs[path])
        raise LookupError(f"no verb or group declared at {' '.join(path)!r}")
    if g.same_as is not None:
        of = _node(g.same_as)
        assert isinstance(of, click.Group)
        return _Group(g, path[-1], commands=of.commands, help=g.help)
    grp = _Group(g, path[-1], help=g.help)
    for child in sorted({p[: len(path) + 1] for p in verbs if len(p) > len(path)}):
        grp.add_command(_node(child), child[-1])
    return grp


class _Group(SuggestingGroup):
    """A noun's group: its verbs, those declared in other modules (`Group.parts`) imported only
    when asked for, and a first word that names no verb going to the `Group.default` verb."""

    def __init__(self, decl: V.Group, name: str, **kw: Any) -> None:
        super().__init__(name, **kw)
        self.decl = decl

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.decl.parts})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in self.decl.parts:
            importlib.import_module(self.decl.parts[name])
            self.add_command(add_global_options(_node((*self.decl.path, name))), name)
        return self.commands.get(name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if self.decl.default is not None:
            i = 0
            while i < len(args) and args[i] in ("--json", "-C"):  # the global options the group takes itself
                i += 2 if args[i] == "-C" else 1
            if i < len(args) and args[i] not in self.list_commands(ctx) and args[i] not in ("-h", "--help"):
                args = [*args[:i], self.decl.default, *args[i:]]
        return super().parse_args(ctx, args)
