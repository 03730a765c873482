"""Face-neutral verbs (issue 18.3), checked on the code: every MCP tool calls its command's verb
with typed values (no command line is built for it), and a verb neither prints nor opens a context
of its own (the generated command does both, for the CLI only: `optlog.cli.commands`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "optlog" / "cli"
# face-level helpers a verb must not call: the command generated from it does it for the CLI
FACE_CALLS = {"emit", "service_ctx", "state"}
# the commands that are not tools and have no document: they may use the CLI's state directly
NOT_TOOLS = {"tui_cmd", "mcp_cmd", "telemetry_sample"}


def test_every_tool_has_a_binding() -> None:
    from optlog.api import verb as V
    from optlog.mcp.tools import tools

    unbound = sorted(t.name for t in tools().values() if V.of(t.binding.fn) is not t.binding)
    assert unbound == [], f"tools without their @verb: {unbound}"


def test_no_command_line_is_built_for_a_tool() -> None:
    """The MCP face had `tools.argv` (JSON → `--label=config=tp8`) and ran the CLI in-process; that
    path is gone and must not come back."""
    mcp = ROOT / "optlog" / "mcp"
    src = (mcp / "tools.py").read_text(encoding="utf-8") + (mcp / "face.py").read_text(encoding="utf-8")
    tree = ast.parse(src)
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert "argv" not in names
    called = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
              for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not called & {"main", "check_argv"}  # cli.main(args=…), the command-line text rule


def _face_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or fn.name in NOT_TOOLS:
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in FACE_CALLS:
                out.append(f"{path.name}:{n.lineno} {fn.name} calls {n.func.id}()")
    return out


def test_command_functions_neither_print_nor_open_a_context() -> None:
    verbs = sorted((ROOT / "optlog" / "api").glob("*.py"))
    assert len(verbs) > 10, "the verb catalogue moved: point this rule at it"
    found = [f for p in verbs for f in _face_calls(p)]
    assert found == [], "\n".join(found)


def test_the_rule_sees_a_command_that_prints(tmp_path: Path) -> None:
    bad = tmp_path / "cmd_bad.py"
    bad.write_text("def hyp_x(call):\n    emit(service_ctx())\n", encoding="utf-8")
    assert len(_face_calls(bad)) == 2
