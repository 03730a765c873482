"""Rules of the test suite that keep its two passes honest (docs/testing.md, "The time budget").

The PostgreSQL pass is chosen by markers that tests/conftest.py derives from the fixtures a test
uses, so a rule holds only if every test reaches what it needs through those fixtures."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def calls_of(name: str, root: Path = TESTS) -> list[str]:
    """Where a function called `name` is called, as FILE:LINE, in the test tree under `root`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if called == name:
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_the_real_server_is_reached_only_through_its_fixture():
    """A test that called `need_real_server()` itself would not be marked `realserver`, and a
    PostgreSQL pass would run it for nothing the database could change (or, the other way round, a
    rule built on it would miss one): the `real_server` fixture in conftest.py is the one caller."""
    assert calls_of("need_real_server") == ["conftest.py:" + str(_fixture_line())]


def _fixture_line() -> int:
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "real_server")
    return next(n.lineno for n in ast.walk(fn) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "need_real_server")


def test_the_rule_can_fail(tmp_path):
    (tmp_path / "test_x.py").write_text("from _realserver import need_real_server\n\ndef test_a():\n    need_real_server()\n")
    assert calls_of("need_real_server", tmp_path) == ["test_x.py:4"]
