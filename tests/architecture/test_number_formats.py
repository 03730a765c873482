"""One definition per human number format (issue 18.4): a number shown to a person is formatted by a
named function of `optlog.core.numfmt`, never by an inline format spec (`{x:.1f}`, `{n:,}`, `{p:.2g}`,
`format(x, ".0%")`), so the same kind of number reads the same on every face.

Not human numbers, and so not counted: layout (`{name:<10}`, `{n:>3}`), machine formats whose spec
carries no precision, sign or grouping (`{id:02d}`, `{x:x}`), and a format that makes text for a
machine (an expression optlog parses, Prometheus text, a rounding read back as a number), which says
so with `# machine format` on its line.

ALLOWED lists the files that still format inline, by file, with how many: it only shrinks (a count
that drops fails until it is lowered), like the import allowlist in test_architecture.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOME = "optlog/core/numfmt.py"
MARK = "# machine format"

# the command modules being rewritten for the MCP face (issue 18.3): their inline formats move to numfmt
# with that rewrite; until then each is counted here
ALLOWED: dict[str, int] = {
}

# [[fill]align][sign][#][0][width][grouping][.precision][type]; human when it has a precision, a
# sign, grouping, or a float/percent type
_SPEC = re.compile(r"(?:.?[<>^=])?(?P<sign>[+\- ])?#?0?\d*(?P<group>[,_])?(?P<prec>\.\d+)?(?P<type>[bcdeEfFgGnosxX%])?")


def human_spec(spec: str) -> bool:
    m = _SPEC.fullmatch(spec)
    return bool(m) and bool(m["sign"] or m["group"] or m["prec"] or (m["type"] or "") in set("eEfFgGn%"))


def _spec_text(node: ast.JoinedStr) -> str:
    """A format spec's text, a nested `{…}` read as a number (`.{digits}g` → `.9g`, `<{w}` → `<9`)."""
    return "".join(v.value if isinstance(v, ast.Constant) else "9" for v in node.values)


def inline_formats(source: str) -> list[tuple[int, str]]:
    """(line, spec) of each human-number format spec in `source` not marked as a machine format."""
    tree = ast.parse(source)
    lines = source.splitlines()

    def marked(n: ast.AST) -> bool:
        return any(MARK in lines[i - 1] for i in range(n.lineno, (n.end_lineno or n.lineno) + 1))

    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.JoinedStr) and not marked(n):
            for v in n.values:
                if isinstance(v, ast.FormattedValue) and v.format_spec is not None:
                    spec = _spec_text(v.format_spec)  # type: ignore[arg-type]
                    if human_spec(spec):
                        out.append((n.lineno, spec))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "format" and len(n.args) == 2
              and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)
              and human_spec(n.args[1].value) and not marked(n)):
            out.append((n.lineno, n.args[1].value))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "format"
              and isinstance(n.func.value, ast.Constant) and isinstance(n.func.value.value, str) and not marked(n)):
            out += [(n.lineno, s) for s in re.findall(r"\{[^{}:]*:([^{}]*)\}", n.func.value.value) if human_spec(s)]
        elif (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and isinstance(n.left, ast.Constant)
              and isinstance(n.left.value, str) and not marked(n)):
            out += [(n.lineno, s) for s in re.findall(r"%[-+ #0]*\d*(?:\.\d+)?[eEfFgG]", n.left.value)]
    return sorted(out)


def _found() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for p in sorted((ROOT / "optlog").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if rel != HOME and (specs := inline_formats(p.read_text(encoding="utf-8"))):
            out[rel] = specs
    return out


def test_no_human_number_is_formatted_inline_outside_numfmt() -> None:
    found = _found()
    new = {rel: specs for rel, specs in found.items() if len(specs) > ALLOWED.get(rel, 0)}
    assert not new, f"format these numbers with optlog.core.numfmt (or mark `{MARK}`): {new}"
    gone = {rel: n for rel, n in ALLOWED.items() if len(found.get(rel, [])) < n}
    assert not gone, f"fewer inline formats than allowed: lower ALLOWED to {({r: len(found.get(r, [])) for r in gone})}"


def test_the_check_sees_each_kind_of_inline_format() -> None:
    """It can fail: each spelling of a human number is seen; layout, ids and marked machine text are not."""
    seen = inline_formats('a = f"{x:.1f} {n:,} {p:.2g} {s:+.0%} {v:g} {w:>10.4g} {x:.{d}g}"\n'
                          'b = format(x, ".3f") + "{:.2f}".format(y) + "%.1f" % z\n')
    assert sorted(s for _, s in seen) == sorted([".1f", ",", ".2g", "+.0%", "g", ">10.4g", ".9g", ".3f", ".2f", "%.1f"])
    assert inline_formats('a = f"{name:<10} {n:>3} {i:02d} {h:x} {k:{w}}"\n') == []
    assert inline_formats(f'a = f"a >= b * {{k:.6g}}"  {MARK}: an expression\n') == []


_HEDGED_PLURAL = re.compile(r"[A-Za-z]\(s\)")


def hedged_plurals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each `run(s)` in the text of an f-string or string a person reads (issue 44):
    a count's noun agrees with it (`numfmt.plural`), never `1 of 6 run(s)`."""
    out = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.JoinedStr):
            for v in n.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str) and _HEDGED_PLURAL.search(v.value):
                    out.append((n.lineno, v.value))
    return out


def test_no_hedged_plural_in_human_text() -> None:
    found = {}
    for p in sorted((ROOT / "optlog").rglob("*.py")):
        if hits := hedged_plurals(p.read_text(encoding="utf-8")):
            found[p.relative_to(ROOT).as_posix()] = hits
    assert not found, f"say the count with numfmt.plural (`3 runs`, `1 run`), not `run(s)`: {found}"
    assert hedged_plurals('a = f"{n} run(s) left"\n') and not hedged_plurals('a = f"{plural(n, \'run\')} left"\n')


def test_console_figures_read_as_the_tables_do() -> None:
    """A measured figure in a console line or a note: the tables' style with its unit, never
    scientific notation (`output_throughput=1.39e+04`), never a bare fraction that reads as bytes."""
    from optlog.core.numfmt import fmt_measured, plural

    assert fmt_measured("output_throughput", 13_897.3) == "output_throughput=13,897 tok/s"
    assert fmt_measured("active_params", 2.681e8) == "active_params=268,100,000 parameters"
    assert fmt_measured("param_bytes", 0.9198) == "param_bytes=0.92 bytes/parameter"
    assert fmt_measured("kv_bytes_per_token", 114688) == "kv_bytes_per_token=114,688 bytes/token"
    for v in (1.5e-3, 0.9198, 7.0, 13_897.3, 2.681e8, 9.9e14):
        assert "e+" not in fmt_measured("x", v) and "e-" not in fmt_measured("x", v), v
    assert (plural(1, "run"), plural(6, "run"), plural(1200, "run"), plural(None, "CPU")) == \
        ("1 run", "6 runs", "1,200 runs", "None CPUs")
