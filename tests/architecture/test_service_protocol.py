"""The layers below the service take declared Protocols, not `Any` (issue 35): a parameter named
`ctx` in runs/ or telemetry/ is annotated with `optlog.needs.Launches` (or another declared
type), so mypy checks every use of it. Read with `ast`; no exceptions."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BELOW = ("optlog/runs", "optlog/telemetry")


def loose_ctx(source: str, name: str) -> list[str]:
    """Each function parameter named ctx that is unannotated or annotated `Any`."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs):
                if arg.arg == "ctx":
                    ann = arg.annotation
                    text = ast.unparse(ann).strip("'\"") if ann is not None else ""
                    if text in ("", "Any", "typing.Any"):
                        out.append(f"{name}:{node.lineno}: {node.name}(ctx: {text or 'unannotated'})")
    return out


def test_runs_and_telemetry_take_a_declared_context() -> None:
    found = []
    for d in BELOW:
        for p in sorted((ROOT / d).rglob("*.py")):
            found += loose_ctx(p.read_text(encoding="utf-8"), p.relative_to(ROOT).as_posix())
    assert not found, "type ctx with optlog.needs.Launches:\n" + "\n".join(found)


def test_the_rule_can_fail() -> None:
    snippet = ("from typing import Any\n"
               "def a(ctx: Any) -> None: ...\n"
               "def b(ctx, n: int) -> None: ...\n"
               "def c(x, *, ctx: 'Any') -> None: ...\n"
               "def d(ctx: Launches) -> None: ...\n")
    assert [v.split(": ", 1)[1] for v in loose_ctx(snippet, "x.py")] == [
        "a(ctx: Any)", "b(ctx: unannotated)", "c(ctx: Any)"]
