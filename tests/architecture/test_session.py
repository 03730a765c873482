"""One way into a workspace (issue 46): every face makes its session with
`optlog.service.context.open_session`; `Ctx(...)` and `Ctx.find(...)` appear only in
service/context.py itself and in the three places that make a context for a root they already hold
(`init`, which creates the workspace; the launch driver and the tune worker, processes optlog
itself starts on a known root). Read with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKERS = {"optlog/service/context.py", "optlog/service/workspace.py", "optlog/service/driver.py",
          "optlog/service/tune.py"}


def makes_ctx(source: str, name: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == "Ctx") or (
                    isinstance(f, ast.Attribute) and f.attr == "find" and isinstance(f.value, ast.Name)
                    and f.value.id == "Ctx"):
                out.append(f"{name}:{node.lineno}: {ast.unparse(f)}(...)")
    return out


def test_faces_open_a_session_only_through_open_session() -> None:
    found = [r for p in sorted((ROOT / "optlog").rglob("*.py"))
             if (n := p.relative_to(ROOT).as_posix()) not in MAKERS
             for r in makes_ctx(p.read_text(encoding="utf-8"), n)]
    assert not found, "open the workspace with open_session:\n" + "\n".join(found)


def test_the_rule_can_fail() -> None:
    snippet = "c = Ctx.find(x)\nd = Ctx(ws)\ne = open_session(x)\nf = Other.find(x)\n"
    assert sorted(makes_ctx(snippet, "x.py")) == ["x.py:1: Ctx.find(...)", "x.py:2: Ctx(...)"]
