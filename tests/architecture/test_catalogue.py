"""Each verb declared once (issue 35): the catalogue (`optlog.api`) is what the CLI's commands and
the MCP tools are generated from and what the TUI's actions call; these tests hold the rules on the
code, and each rule is shown able to fail.

No command is declared by hand beside the catalogue: CLICK_DECLARED names the only files that may
(the root group, the generator, and the three commands that are no verbs). `optlog tui` and
`optlog mcp` start a face: they are no verbs (no document, no tool) and stay click commands of the
CLI's own (`optlog/cli/faces.py`), as `optlog telemetry sample` does, a stream of JSON lines with
no document (`optlog/cli/streams.py`)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Annotated, Any

import click
import pytest

from optlog.api import NOUNS
from optlog.api import verb as V

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "optlog" / "cli"


def _catalogue() -> dict[tuple[str, ...], V.Verb]:
    for mod in NOUNS.values():
        importlib.import_module(mod)
    return {p: v for name in NOUNS for p, v in V.verbs_under((name,)).items()}


def _command(path: tuple[str, ...]) -> click.Command:
    from optlog.cli.main import cli

    cmd: click.Command = cli
    ctx = click.Context(cli, info_name="optlog")
    for word in path:
        assert isinstance(cmd, click.Group), f"{' '.join(path)}: {word!r} is under a command, not a group"
        sub = cmd.get_command(ctx, word)
        assert sub is not None, f"no command {' '.join(path)}"
        cmd, ctx = sub, click.Context(sub, info_name=word, parent=ctx)
    return cmd


def test_every_verb_is_one_command_and_one_tool_calling_it() -> None:
    from optlog.cli import binding
    from optlog.mcp.tools import tools

    verbs = _catalogue()
    assert verbs, "the catalogue declares no verb"
    by_fn = {t.binding.fn: t for t in tools().values()}
    for path, v in verbs.items():
        cmd = _command(path)
        b = binding.of(cmd.callback)
        assert b is not None and b.fn is v.fn, f"optlog {' '.join(path)} does not call its verb"
        assert [p.name for p in cmd.params if p.expose_value] == [p.name for p in v.params()]
        if v.agent.get("skip"):
            continue
        tool = by_fn.get(v.fn)
        assert tool is not None, f"no MCP tool calls the verb {' '.join(path)}"
        assert sorted(p.param.name for p in tool.params.values()) == sorted(p.name for p in v.params())


# where a click command, group, option or argument may be declared by hand, and why: the root group;
# the generator; the three commands that are no verbs (no document: a face, a stream)
CLICK_DECLARED = {
    "main.py": "the root group and its global options (-C, --json)",
    "commands.py": "the generator: every verb's command, from its signature",
    "faces.py": "tui and mcp start a face: no document, no tool",
    "streams.py": "telemetry sample prints JSON lines until interrupted: no document, no tool",
}
_CLICK_DECLARATIONS = {"command", "group", "option", "argument", "Command", "Group", "Option", "Argument"}


def click_declarations(root: Path) -> list[str]:
    """Every place under `root` that declares a click command or parameter (a decorator or a
    constructor of click's), outside the files CLICK_DECLARED names."""
    out = []
    for f in sorted(root.rglob("*.py")):
        if f.name in CLICK_DECLARED and f.parent == CLI:
            continue
        tree = ast.parse(f.read_text(encoding="utf-8"))
        decorators = {id(d) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for d in n.decorator_list}
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _CLICK_DECLARATIONS \
                    and (getattr(n.func.value, "id", None) == "click" or id(n) in decorators):
                out.append(f"{f.relative_to(root)}:{n.lineno} {ast.unparse(n.func)}")
    return out


def test_no_command_is_declared_beside_the_catalogue() -> None:
    """A verb lives in one place: no click decorator or parameter by hand outside CLICK_DECLARED
    (the old `cli/cmd_*.py` held 203 of them), and no noun both in the catalogue and in the click table."""
    assert click_declarations(ROOT / "optlog") == []
    assert not (set(CLI.glob("cmd_*.py")))
    from optlog.cli.main import LAZY

    assert not set(NOUNS) & set(LAZY), "a noun both in the catalogue and in the click command table"


def test_the_declaration_rule_can_fail(tmp_path: Path) -> None:
    (tmp_path / "cmd_x.py").write_text(
        "import click\n@click.command('x')\n@click.option('--y')\ndef x(y): ...\n"
        "@grp.command('z')\ndef z(): ...\n", encoding="utf-8")
    assert [x.split(" ", 1)[1] for x in click_declarations(tmp_path)] == ["click.command", "click.option", "grp.command"]


def _string_constants(root: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in sorted(root.rglob("*.py")):
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("--"):
                out.setdefault(n.value, []).append(f"{f.relative_to(ROOT)}:{n.lineno}")
    return out


def _flags(v: V.Verb) -> list[str]:
    out = []
    for p in v.params():
        if isinstance(p.spec, V.Opt):
            flags = [f.split("/")[0] for f in p.spec.flags] or ["--" + p.name.replace("_", "-")]
            out += [f for f in flags if f.startswith("--")]
    return out


def spelt_more_than_twice(verbs: dict[tuple[str, ...], V.Verb], consts: dict[str, list[str]],
                          takers: dict[str, int]) -> list[str]:
    """A verb's flag written as a string more than twice a command that takes it (its declaration
    and one call inward): a second declaration has grown somewhere (a face's own spelling, a
    service's). `takers`: how many commands take each flag (`--hypothesis` is many verbs' own)."""
    return [f"{' '.join(p)} {flag}: {', '.join(consts[flag])}" for p, v in verbs.items() for flag in _flags(v)
            if len(consts.get(flag, [])) > 2 * takers.get(flag, 1)]


def _takers() -> dict[str, int]:
    from optlog.cli.commands import walk

    out: dict[str, int] = {}
    for _path, cmd in walk():
        for p in cmd.params:
            for o in {*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())}:
                if o.startswith("--") and o not in ("--json", "--help"):
                    out[o] = out.get(o, 0) + 1
    return out


def test_a_verb_parameter_is_spelt_at_most_twice() -> None:
    assert spelt_more_than_twice(_catalogue(), _string_constants(ROOT / "optlog"), _takers()) == []


def test_the_spelling_rule_can_fail() -> None:
    def fake(call: V.Call, *, gain: Annotated[str, V.Opt("--gain")]) -> Any: ...

    v = V.Verb(("plan", "add"), fake)
    assert spelt_more_than_twice({v.path: v}, {"--gain": ["a:1", "b:2", "c:3"]}, {"--gain": 1}) != []
    assert spelt_more_than_twice({v.path: v}, {"--gain": ["a:1", "b:2"]}, {"--gain": 1}) == []


def test_a_verb_parameter_must_be_declared() -> None:
    def untyped(call: V.Call, *, text: str) -> Any: ...

    def positional(call: V.Call, text: Annotated[str, V.Arg()]) -> Any: ...

    with pytest.raises(TypeError, match="needs Arg"):
        V.Verb(("x",), untyped).params()
    with pytest.raises(TypeError, match="keyword-only"):
        V.Verb(("x",), positional).params()


def service_calls(source: str) -> set[str]:
    """The service functions a module's code names (`evidence.record`, `verdicts.runs_diff`): a
    module imported from `optlog.service` (under any alias) and the attribute taken of it, or a
    function imported from a service module itself. Functions, not modules: a service module serves
    several nouns (`evidence` holds `run record` and `note add`), and a noun not ported yet is still
    called through its service."""
    tree = ast.parse(source)
    mods: dict[str, str] = {}
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module == "optlog.service":
            mods |= {a.asname or a.name: a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and (n.module or "").startswith("optlog.service."):
            out |= {f"{(n.module or '').split('.')[2]}.{a.name}" for a in n.names}
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in mods:
            out.add(f"{mods[n.value.id]}.{n.attr}")
    return out


def _modules() -> list[str]:
    """The catalogue's modules: each noun's, and those its groups' verbs live in (`Group.parts`)."""
    _catalogue()
    parts = {m for name in NOUNS for g in V.groups_under((name,)).values() for m in g.parts.values()}
    return sorted({*NOUNS.values(), *parts})


def test_the_tui_calls_the_catalogue_for_the_ported_nouns() -> None:
    """The dashboard's actions call the same verbs the CLI and MCP do, not the service below them."""
    ported = set().union(*(service_calls(Path(importlib.import_module(m).__file__ or "").read_text(encoding="utf-8"))
                           for m in _modules()))
    used = service_calls((ROOT / "optlog" / "tui" / "actions.py").read_text(encoding="utf-8"))
    assert used & ported == set(), f"the TUI calls the service of ported verbs: {sorted(used & ported)}"


def test_the_tui_rule_can_fail() -> None:
    verb_src = "from optlog.service import launch\ndef v(call):\n    return launch.cancel(call.ctx, 'L1')\n"
    tui_src = ("def a(self):\n    from optlog.service import launch as Lh\n"
               "    self.run_service(lambda c: Lh.cancel(c, 'L1'))\n    Lh.wait_doc\n"
               "from optlog.service.evidence import add_note\n")
    assert service_calls(verb_src) == {"launch.cancel"}
    assert service_calls(tui_src) == {"launch.cancel", "launch.wait_doc", "evidence.add_note"}


_Expect = Annotated[str, V.Opt(metavar="EXPR", help="The expression.")]


def test_a_shared_parameter_type_may_be_made_optional() -> None:
    """`Expect | None` reads as `Expect`'s declaration with None as its default (a verb that edits
    takes the same parameter as the verb that adds, optionally)."""
    def edit(call: V.Call, *, expect: _Expect | None = None) -> Any: ...

    (p,) = V.Verb(("x",), edit).params()
    assert isinstance(p.spec, V.Opt) and p.spec.metavar == "EXPR" and p.item is str and p.default is None
