"""The API returns data; each face renders it (issue 46 items 1 and 5).

* no module of `optlog.api` renders a document for a person: no `@verb(...)` is given a renderer,
  no function there is a `*human*` one, none returns `str` from a verb, and no module there is a
  text-rendering one (the CLI's texts are `optlog.cli.render`, by the API module's name);
* every entry of a `HUMAN` table in `optlog.cli.render` names a verb of the API module of the same
  name (a renamed verb cannot leave its text behind), and neither the TUI nor the MCP face imports
  the CLI's texts.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from optlog.api import verb as V

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "optlog" / "api"
RENDER = ROOT / "optlog" / "cli" / "render"


def _verb_decorators(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and getattr(d.func, "id", getattr(d.func, "attr", "")) == "verb":
                    yield node, d


def test_the_api_renders_no_text_for_a_person():
    bad = []
    for f in sorted(API.glob("*.py")):
        tree = ast.parse(f.read_text(), str(f))
        for fn, d in _verb_decorators(tree):
            if len(d.args) > 1:
                bad.append(f"{f.name}:{d.lineno}: @verb({ast.unparse(d.args[0])}, {ast.unparse(d.args[1])[:40]}…) "
                           "declares a human renderer: it belongs in optlog/cli/render/")
            if fn.returns is not None and ast.unparse(fn.returns) == "str":
                bad.append(f"{f.name}:{fn.lineno}: verb {fn.name} returns a str: a verb returns a document")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and "human" in node.name:
                bad.append(f"{f.name}:{node.lineno}: {node.name} renders text for a person: optlog/cli/render/")
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("optlog.api.text"):
                bad.append(f"{f.name}:{node.lineno}: imports {node.module}")
    assert not (API / "text.py").exists(), "optlog/api/text.py: the CLI's texts live in optlog/cli/render/"
    assert not bad, "\n".join(bad)


def test_every_cli_text_is_of_a_verb_of_its_api_module():
    V.catalogue()
    by_module: dict[str, set[str]] = {}
    for path, v in V.catalogue().items():
        by_module.setdefault(v.fn.__module__.rsplit(".", 1)[-1], set()).add(" ".join(path))
    stale = []
    for f in sorted(RENDER.glob("*.py")):
        if f.stem in ("__init__", "text"):
            continue
        assert (API / f.name).exists(), f"optlog/cli/render/{f.name} renders no API module"
        table = importlib.import_module(f"optlog.cli.render.{f.stem}").HUMAN
        stale += [f"{f.name}: {k!r}" for k in table if k not in by_module.get(f.stem, set())]
    assert not stale, "texts of no verb of the API module: " + ", ".join(stale)


def test_only_the_cli_imports_its_texts():
    bad = []
    for face in ("tui", "mcp", "api", "service"):
        for f in sorted((ROOT / "optlog" / face).rglob("*.py")):
            for node in ast.walk(ast.parse(f.read_text(), str(f))):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                    [a.name for a in node.names] if isinstance(node, ast.Import) else []
                bad += [f"{f.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if n.startswith("optlog.cli")]
    assert not bad, "\n".join(bad)
