"""Command templates of run specs: split first, then substitute inside each argument.

A command is split into arguments with shell-like quoting (shlex) BEFORE any value is put in, so a
value can never split into two arguments: `; rm -rf ~` or `a b` reaches the program as one literal
argument. An argument that a program runs as code (a shell's `-c` script, `python -c`) is rendered
for that program by `render_code` (core.codeargs): quoted for a POSIX shell, else plain values only. A `{{ name }}` placeholder is one piece of the word it stands in,
and the spaces inside its braces split nothing. Braces that are not `{{ … }}` (a JSON argument such
as `{"temperature": 0}`) are left alone.

Inside the braces: a name, a number, or simple arithmetic over them (`{{ concurrency * 4 }}`,
`{{ (tp * pp) // 2 }}`), evaluated by a small allow-listed AST walker, never `eval`.

`{{ env.NAME }}` reads the environment variable NAME where the command is rendered (the caller
passes the environment under the reserved name `env`; unset is an error naming it). So a spec
names this machine's paths (the server binary, the model) without writing them: the spec and the
launch record committed to git keep the reference, and a launch again elsewhere renders it there.
`env` is never a value of the point (not a label, not config): `placeholders` leaves it out.

Pure: no I/O.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
import shlex
from collections.abc import Mapping
from typing import Any

from optlog.core import codeargs as C
from optlog.core.limits import LIMITS
from optlog.core.numfmt import fmt_count

PLACEHOLDER_RE = re.compile(r"\{\{(.*?)\}\}", re.S)
# Stand-ins for placeholders while shlex splits: no whitespace, no quote, no shell metacharacter.
_MARK = "\x01OPTLOGPH{}\x02"
_MARK_RE = re.compile("\x01OPTLOGPH(\\d+)\x02")


class TemplateError(ValueError):
    """A placeholder that cannot be rendered. `names` lists unknown names, if that was the cause."""

    def __init__(self, message: str, names: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.names = names


_BINOPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNOPS: dict[type, Any] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCS: dict[str, Any] = {"min": min, "max": max, "int": int, "round": round, "ceil": math.ceil, "floor": math.floor}


def _num(v: Any, expr: str) -> Any:
    """Arithmetic operands: numbers, or text that reads as a number (a `--set k=64`)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            try:
                return float(v)
            except ValueError:
                pass
    raise TemplateError(f"{{{{ {expr} }}}}: {v!r} is not a number")


def evaluate(expr: str, values: Mapping[str, Any]) -> Any:
    """Value of the text inside `{{ }}`: a name, a literal, or arithmetic over them."""
    src = expr.strip()
    if not src:
        raise TemplateError("empty placeholder {{ }}")
    if len(src) > LIMITS.expr_chars:
        raise TemplateError(f"a placeholder of {fmt_count(len(src))} characters (at most {fmt_count(LIMITS.expr_chars)})")
    try:
        tree = ast.parse(src, mode="eval")
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        raise TemplateError(f"{{{{ {src} }}}}: not a name or simple arithmetic") from None
    try:
        out = _evaluate(tree, src, values)
        if isinstance(out, float) and not math.isfinite(out):
            raise TemplateError(f"{{{{ {src} }}}} is {out} (the value is out of range)")
        if isinstance(out, int) and not isinstance(out, bool) and abs(out) > LIMITS.int_max:
            # a label, a port or a count past what the database stores and a double holds (issue 42)
            raise TemplateError(f"{{{{ {src} }}}} is a number of {fmt_count(len(str(abs(out))))} digits: past "
                                f"the largest whole number optlog stores ({LIMITS.int_max}; the value is out of range)")
        return out
    except (OverflowError, ValueError, TypeError, RecursionError) as e:
        if isinstance(e, TemplateError):
            raise
        raise TemplateError(f"{{{{ {src} }}}}: {e} (the value is out of range)") from None


ENV = "env"  # the reserved name of the environment in a template: `{{ env.NAME }}`


def _evaluate(tree: ast.AST, src: str, values: Mapping[str, Any]) -> Any:
    missing = sorted(n for n in names_in_expr(src) if n not in values)
    if missing:
        raise TemplateError(f"unknown placeholder {', '.join(missing)} in {{{{ {src} }}}}", tuple(missing))

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == ENV:
            env = values.get(ENV)
            if env is None:
                raise TemplateError(f"{{{{ {src} }}}}: the environment is not available here")
            if node.attr not in env:
                raise TemplateError(f"{{{{ {src} }}}}: the environment variable {node.attr} is not set where "
                                    f"optlog runs (export {node.attr}=… before launching)")
            return env[node.attr]
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == ENV:  # the whole environment: every credential of the machine, in one argument
                raise TemplateError(f"{{{{ {src} }}}} would write the whole environment (its credentials too) "
                                    f"where it stands: name one variable, {{{{ env.NAME }}}}")
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = _num(ev(node.left), src), _num(ev(node.right), src)
            if isinstance(node.op, ast.Pow) and (abs(b) > 64 or abs(a) > 1e6):
                raise TemplateError(f"{{{{ {src} }}}}: exponent too large")
            try:
                return _BINOPS[type(node.op)](a, b)
            except ZeroDivisionError:
                raise TemplateError(f"{{{{ {src} }}}}: division by zero") from None
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
            return _UNOPS[type(node.op)](_num(ev(node.operand), src))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and not node.keywords and 1 <= len(node.args) <= 4):
            return _FUNCS[node.func.id](*(_num(ev(a), src) for a in node.args))
        raise TemplateError(f"{{{{ {src} }}}}: only names, numbers and + - * / // % ** "
                            f"({', '.join(_FUNCS)}) are allowed")

    return ev(tree)


def names_in_expr(expr: str) -> set[str]:
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id != ENV:
            out.add(node.id)
    if isinstance(tree.body, ast.Call) or any(isinstance(n, ast.Call) for n in ast.walk(tree)):
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                out.discard(n.func.id)
    return out


def env_names(text: str) -> set[str]:
    """The environment variables `text` reads (`{{ env.NAME }}`)."""
    out: set[str] = set()
    for m in PLACEHOLDER_RE.finditer(text):
        try:
            tree = ast.parse(m.group(1).strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        out |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id == ENV}
    return out


def strings_in(x: Any) -> list[str]:
    """Every string inside a parsed YAML value (nested dicts and lists), in order."""
    if isinstance(x, str):
        return [x]
    if isinstance(x, dict):
        return [s for v in x.values() for s in strings_in(v)]
    if isinstance(x, list):
        return [s for v in x for s in strings_in(v)]
    return []


def names_used(data: dict[str, Any], sections: tuple[str, ...]) -> set[str]:
    """The names the placeholders of the given sections of a spec (its parsed YAML) read: what a
    launch record keeps and what a proposal's axis must reach to change what runs."""
    out: set[str] = set()
    for sec in sections:
        for s in strings_in(data.get(sec)):
            out |= placeholders(s)
    return out


def placeholders(text: str) -> set[str]:
    """Names used by the placeholders of `text` (functions excluded)."""
    out: set[str] = set()
    for m in PLACEHOLDER_RE.finditer(text):
        out |= names_in_expr(m.group(1))
    return out


def to_text(v: Any) -> str:
    """How a value is written into an argument: integral floats as integers, lists/dicts as JSON."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    if isinstance(v, (list, dict)):
        return json.dumps(v, separators=(",", ":"))
    if v is None:
        return ""
    return str(v)


def render(text: str, values: Mapping[str, Any]) -> str:
    """Replace every `{{ … }}` of one string (an already split argument, a URL, an env value)."""
    if "{{" not in text:
        return text
    return PLACEHOLDER_RE.sub(lambda m: to_text(evaluate(m.group(1), values)), text)


def split(cmd: str | list[Any]) -> list[str]:
    """Split a command into arguments (shell-like quoting), keeping each `{{ … }}` whole.

    A list is taken as already split (each item one argument)."""
    if isinstance(cmd, list):
        return [to_text(a) if not isinstance(a, str) else a for a in cmd]
    found: list[str] = []

    def hide(m: re.Match[str]) -> str:
        found.append(m.group(0))
        return _MARK.format(len(found) - 1)

    hidden = PLACEHOLDER_RE.sub(hide, cmd)
    try:
        parts = shlex.split(hidden, comments=False, posix=True)
    except ValueError as e:
        raise TemplateError(f"cannot split the command: {e}") from None
    return [_MARK_RE.sub(lambda m: found[int(m.group(1))], p) for p in parts]


# optlog's own values: never refused inside code (still quoted for a POSIX shell); `env.NAME` too
TRUSTED = frozenset({"out", "run_id", "launch_id", "repeat"})


def render_argv(cmd: str | list[Any], values: Mapping[str, Any]) -> list[str]:
    """Split, then render each argument on its own; an argument that a program runs as code (a
    shell's `-c` script, `python -c`: core.codeargs) gets its values quoted for it, or refused."""
    parts = split(cmd)
    out = [render(a, values) for a in parts]
    for i, (kind, prog) in C.code_args(out).items():
        if "{{" in parts[i]:
            out[i] = render_code(parts[i], kind, prog, values)
    return out


def render_code(text: str, kind: str, prog: str, values: Mapping[str, Any]) -> str:
    """One argument that `prog` runs as code (`kind`: codeargs.POSIX or CODE), rendered so that no
    value becomes code: quoted where a POSIX shell script lets optlog quote it, else a value that is
    not plain text is refused (TemplateError, with the fix)."""
    slots = iter(C.slots(PLACEHOLDER_RE.sub(C.MARK, text)) if kind == C.POSIX else ())

    def sub(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        v = to_text(evaluate(expr, values))
        slot = next(slots, None)
        if slot is not None and slot.quote is not None:
            return C.quote_in(v, slot.quote)
        if C.plain(v) or names_in_expr(expr) <= TRUSTED:
            return v
        where = (f"{slot.where} of a `{prog} -c` script" if slot is not None else
                 f"code that `{prog}` runs" if kind == C.CODE else f"a `{prog}` script")
        fix = (f"sh -c '… \"$1\" …' sh {{{{ {expr} }}}}" if kind == C.POSIX or prog in C.POSIX_SHELLS
               else f"{prog} … {{{{ {expr} }}}} as its own argument (sys.argv, $ARGV, process.argv)")
        raise TemplateError(f"{{{{ {expr} }}}} is inside {where}, where optlog cannot quote it, and its value "
                            f"{v[:60]!r} is not plain text ({C.PLAIN_TEXT}), so it could run as code. "
                            f"Pass the value as an argument instead: {fix}; or through `env:`")

    return PLACEHOLDER_RE.sub(sub, text)
