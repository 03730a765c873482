"""Errors name the verb's parameters, not a face's spelling of them (issue 35; architecture review
2, §7.3), read from the source with `ast`: below the faces (everything but `optlog/cli/` and
`optlog/tui/`) no error's field is a literal CLI option (`field="--out"`, `f"--{x}"`) or an argument's
metavar (`field="ID"`, `"FILE|-"`), no helper's
`field` parameter defaults to one, and none is passed one positionally (`check_key(k, "--label")`).
The layers raise `field="out"` (the verb's parameter: `tid`, not `ID`) and write `param("out")` in a
message; a helper shared by several verbs takes the caller's parameter (`parse_ref(ref, "refs")`). Each
face spells it in one place (`optlog.cli.binding.cli_spelling`, `optlog.mcp.tools.Tool.spelling`).
The ignore list is empty.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FACES = ("cli", "tui")
FIELD_NAMES = {"field", "field_", "where"}
# helpers that take the field positionally, and the position
POSITIONAL = {"check_key": 1, "parse_pair": 1, "parse_pairs": 1, "check_text": 1, "parse_text": 1,
              "_selectors": 1, "_expr_error": 1, "require": 2, "not_found": 3, "check": 1}


def _flag(node: ast.AST | None) -> bool:
    """Whether `node` is, or holds, a text that starts with a CLI option's `--`."""
    return node is not None and any(_text_flag(n) for n in ast.walk(node))


# an argument's metavar (`ID`, `FILE`, `[HYP]`, `FILE…`): a face's spelling of a verb parameter too;
# an environment variable (OPTLOG_DB_URL) is a name of its own, not a parameter
_METAVAR = re.compile(r"\[?[A-Z]+(\|-)?\]?(…|\.\.\.)?")


def _text_flag(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and (node.value.startswith("--") or bool(_METAVAR.fullmatch(node.value)))
    if isinstance(node, ast.JoinedStr) and node.values:
        return _text_flag(node.values[0])
    return False


def _name(f: ast.expr) -> str:
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def offences(source: str, where: str) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            out += [f"{where}:{node.lineno}: {k.arg}={ast.unparse(k.value)}"
                    for k in node.keywords if k.arg in FIELD_NAMES and _flag(k.value)]
            i = POSITIONAL.get(_name(node.func))
            if i is not None and len(node.args) > i and _flag(node.args[i]):
                out.append(f"{where}:{node.lineno}: {_name(node.func)}(…, {ast.unparse(node.args[i])})")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            pos = [*a.posonlyargs, *a.args]
            pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + \
                [(x, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            out += [f"{where}:{node.lineno}: {node.name}({x.arg}={ast.unparse(d)})"
                    for x, d in pairs if x.arg in FIELD_NAMES and _flag(d)]
    return out


def below_the_faces(root: Path = ROOT) -> list[str]:
    found: list[str] = []
    for f in sorted((root / "optlog").rglob("*.py")):
        rel = f.relative_to(root / "optlog")
        if rel.parts[0] in FACES:
            continue
        found += offences(f.read_text(encoding="utf-8"), str(f.relative_to(root)))
    return found


def test_no_error_below_the_faces_names_a_cli_option():
    found = below_the_faces()
    assert not found, ("errors below the faces name the verb's parameter (`field=\"out\"`, "
                       "`param(\"out\")` in the message), not the CLI's option or metavar:\n" + "\n".join(found))


def test_the_check_finds_each_shape_it_forbids():
    src = '''
def check_key(key, field="--label"): ...
def f(x, *, where=f"--{x}"): ...
raise BadInput("no", field="--out")
raise BadInput("no", field=f"--{top}")
raise BadInput("no", field=flags.get(top, f"--{top}" if top in _FLAGS else None))
L.check_key(k, "--per")
raise BadInput("--out is fine in a message", field="out")
check_key(k, "labels")
raise not_found("todo", tid, ids, field="ID")
raise BadInput("no", field="FILE|-")
raise BadInput("no", field="OPTLOG_DB_URL")
'''
    assert [o.split(": ", 1)[1] for o in offences(src, "x.py")] == [
        "check_key(field='--label')", "f(where=f'--{x}')", "field='--out'", "field=f'--{top}'",
        "field=flags.get(top, f'--{top}' if top in _FLAGS else None)", "check_key(…, '--per')",
        "field='ID'", "field='FILE|-'"]
