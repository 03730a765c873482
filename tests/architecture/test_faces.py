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


# ---------------------------------------------------------------- the TUI's forms (issue 46 item 1)


def _ask_verb_calls():
    """(line, module alias, verb function name, parameter names) of each `_ask_verb(...)` in the TUI's
    actions, with the API module each alias was imported as in its function."""
    tree = ast.parse((ROOT / "optlog" / "tui" / "actions.py").read_text())
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        aliases = {a.asname or a.name: node.module + "." + a.name for node in ast.walk(fn)
                   if isinstance(node, ast.ImportFrom) and node.module == "optlog.api" for a in node.names}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "_ask_verb":
                verb, names = node.args[1], node.args[2]
                assert isinstance(verb, ast.Attribute) and isinstance(verb.value, ast.Name), ast.unparse(node)
                yield node.lineno, aliases[verb.value.id], verb.attr, ast.literal_eval(names)


def test_the_tuis_verb_forms_ask_for_the_verbs_parameters():
    """No form field is declared by hand in the TUI's actions: each form names parameters of the verb
    it calls, and `forms.verb_form` makes the fields from their declarations."""
    src = (ROOT / "optlog" / "tui" / "actions.py").read_text()
    hand = [n.lineno for n in ast.walk(ast.parse(src))
            if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "Field"]
    assert not hand, f"optlog/tui/actions.py lines {hand}: a form field declared by hand (use _ask_verb)"
    calls = list(_ask_verb_calls())
    assert len(calls) >= 8, calls
    for line, module, name, names in calls:
        v = V.of(getattr(importlib.import_module(module), name))
        assert v is not None, f"actions.py:{line}: {module}.{name} is not a verb"
        params = [p.name for p in v.params()]
        assert set(names) <= set(params), f"actions.py:{line}: {set(names) - set(params)} are not parameters of {v.path}"


def test_a_verb_form_is_the_verbs_parameters():
    from optlog.tui.forms import verb_form, verb_values

    for path, v in V.catalogue().items():
        params = [p for p in v.params() if p.item is not bool]
        fields = verb_form(v.fn, [p.name for p in params])
        assert [f.name for f in fields] == [p.name for p in params], path
        for f, p in zip(fields, params):
            assert f.choices == list(p.spec.choices or []), (path, p.name)
            assert f.required == p.required, (path, p.name)
            assert (p.spec.help or "") == "" or f.placeholder.split()[:1] == p.spec.help.split()[:1], (path, p.name)
            if isinstance(p.default, str) and p.default:
                assert f.value == p.default, (path, p.name)
    from optlog.api import plans, predictions

    assert verb_values(plans.plan_add, {"needs": "h1, h2", "steps": "", "rationale": ""}) == \
        {"needs": ("h1", "h2"), "steps": (), "rationale": None}
    assert verb_values(predictions.pred_add, {"a": "config=tp4, x=1", "margin": "0.1"}) == \
        {"a": (("config", "tp4"), ("x", "1")), "margin": 0.1}


# ---------------------------------------------------------------- MCP output schemas (issue 46 item 1)


def test_output_schemas_come_from_the_verbs_return_types():
    """No verb names its output schema by hand (`@verb(..., output="…")`): a tool's is its verb's return
    type's (`optlog.mcp.schemas.of_return`), and every verb that returns a typed document has one."""
    import typing

    from optlog.mcp.schemas import schema
    from optlog.mcp.tools import tools

    named = [f"{f.name}:{d.lineno}" for f in sorted(API.glob("*.py"))
             for _fn, d in _verb_decorators(ast.parse(f.read_text())) if any(k.arg == "output" for k in d.keywords)]
    assert not named, f"output schemas named by hand: {named}"
    typed = 0
    for t in tools().values():
        ret = typing.get_type_hints(t.binding.fn).get("return")
        alts = typing.get_args(ret) if typing.get_origin(ret) in (typing.Union, __import__("types").UnionType) else (ret,)
        if all(isinstance(a, type) and typing.is_typeddict(a) for a in alts):
            typed += 1
            assert t.output_schema is not None, t.name
            made = t.output_schema.get("anyOf", [t.output_schema])
            assert [set(m["properties"]) for m in made] == [set(schema(a)["properties"]) for a in alts], t.name
        else:
            assert t.output_schema is None, t.name
    assert typed >= 20, typed
