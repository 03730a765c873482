"""One signature per verb (issue 46, "the `*_doc` twins fold into their verbs"): no public function
of `optlog/service` is named `*_doc`, a twin that re-spells a verb's parameters only to call the
service function that does the work (verb → `x_doc` → `x`). A verb calls the function that does the
work and shapes its own document; a private helper that builds fields from a row says so in its
name (`_trial_fields`). Read with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def doc_twins(source: str, name: str) -> list[str]:
    """The public functions named `*_doc` at a module's top level (or in its classes)."""
    return [f"{name}:{node.lineno}: {node.name}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.endswith("_doc") and not node.name.startswith("_")]


def test_the_service_has_no_doc_twins() -> None:
    found = [t for p in sorted((ROOT / "optlog" / "service").rglob("*.py"))
             for t in doc_twins(p.read_text(encoding="utf-8"), p.relative_to(ROOT).as_posix())]
    assert not found, "fold each *_doc twin into its verb (optlog/api) or one service function:\n" + "\n".join(found)


def test_the_rule_can_fail() -> None:
    snippet = "def show_doc(ctx): ...\ndef _trial_doc(t): ...\ndef show(ctx): ...\nasync def wait_doc(): ...\n"
    assert doc_twins(snippet, "x.py") == ["x.py:1: show_doc", "x.py:4: wait_doc"]
