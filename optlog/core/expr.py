"""The prediction language and the `--where` conditions: parsed with Python's `ast` and an allow-list,
never evaluated by Python.

Prediction expressions (DESIGN §5):

    a > b                      a >= b * 1.1                a / b in [0.3, 0.6]
    a < 0.05 * peak_tflops     a.tensor_active < 20 and a.gpu_util > 90
    not (a <= b)               (a - b) / b > 0.1

`a` / `b` are the prediction's default metric of group a / b; `a.NAME` / `b.NAME` another metric of
that group; other names are ceilings (`optlog.yaml` hardware: `peak_tflops`, `mem_bw_gbps`, …).
Operators: `+ - * /`, parentheses, comparisons `< <= > >=`, ranges `X in [LO, HI]`, `and`, `or`,
`not`. Anything else is refused with the column it starts at.

Where conditions: `m <= 64`, `dataset != sharegpt`, `dataset == "random"`, `tp in [4, 8]`, joined by
`and` / `or` / `not`. A bare word on the right is text; a run without the label does not match.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Union

from optlog.core import labels as L
from optlog.core.limits import LIMITS
from optlog.core.numfmt import fmt_count, fmt_written


class ExprError(ValueError):
    """A malformed expression: message plus the 1-based column where the problem starts."""

    def __init__(self, message: str, column: int | None = None, text: str = "") -> None:
        self.message = message
        self.column = column
        self.text = text
        super().__init__(self.pretty())

    def pretty(self) -> str:
        if self.column is None:
            return self.message
        return f"column {self.column}: {self.message}\n  {self.text}\n  {' ' * (self.column - 1)}^"


# ---------------------------------------------------------------- the tree


@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Ref:
    """`a`, `b`, `a.NAME`, `b.NAME` (group + metric, metric None = the default) or a ceiling name."""

    group: str | None
    metric: str | None
    name: str
    col: int

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True)
class Bin:
    op: str  # + - * /
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Neg:
    operand: "Node"


@dataclass(frozen=True)
class Cmp:
    op: str  # < <= > >=
    left: "Node"
    right: "Node"
    col: int


@dataclass(frozen=True)
class InRange:
    operand: "Node"
    lo: "Node"
    hi: "Node"
    col: int


@dataclass(frozen=True)
class And:
    items: tuple["Node", ...]


@dataclass(frozen=True)
class Or:
    items: tuple["Node", ...]


@dataclass(frozen=True)
class Not:
    operand: "Node"


@dataclass(frozen=True)
class Fit:
    """`k(LABEL)` / `slope(LABEL)` (optionally `k(LABEL, a.METRIC)`): the exponent on log–log axes,
    or the slope on linear ones, of the metric of group a (or b) fitted over every value of the
    numeric label LABEL (core.scaling)."""

    kind: str  # k | slope
    label: str
    ref: Ref
    col: int


Node = Union[Num, Ref, Bin, Neg, Cmp, InRange, And, Or, Not, Fit]
BOOL_NODES = (Cmp, InRange, And, Or, Not)

_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _col(node: ast.AST) -> int:
    return getattr(node, "col_offset", 0) + 1


def _op_col(n: ast.BinOp, text: str) -> int:
    """Column of a binary operator: the first non-blank after the left operand (outside parentheses)."""
    i = n.left.end_col_offset or 0
    while i < len(text) and text[i] in " )":
        i += 1
    return i + 1


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _parse(text: str) -> ast.AST:
    if not text or not text.strip():
        raise ExprError("the expression is empty", 1, text)
    if len(text) > LIMITS.expr_chars:
        raise ExprError(f"the expression is {fmt_count(len(text))} characters long (at most {fmt_count(LIMITS.expr_chars)})")
    if "\n" in text or "\r" in text:
        raise ExprError("the expression must be one line", text.find("\n") + 1 if "\n" in text else 1, text)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        msg = (e.msg or "syntax error").replace("invalid syntax. ", "")
        if msg.startswith("invalid syntax"):
            msg = "syntax error"
        if not e.offset:  # Python reports 0 when the input ended too early
            col, msg = len(text.rstrip()) + 1, "the expression ends too early"
        else:
            col = e.offset
        raise ExprError(msg, max(1, min(col, len(text) + 1)), text) from None
    except (RecursionError, MemoryError, ValueError):
        raise ExprError("the expression cannot be read (too deeply nested?)") from None
    _check_depth(tree.body)
    return tree.body


def _check_depth(root: ast.AST) -> None:
    """The converters below recurse; `a+a+…+a` of 20,000 terms once ended in RecursionError."""
    todo: list[tuple[ast.AST, int]] = [(root, 1)]
    while todo:
        node, d = todo.pop()
        if d > LIMITS.expr_depth:
            raise ExprError(f"the expression is nested more than {LIMITS.expr_depth} levels deep "
                            "(operators and parentheses)", _col(node))
        todo.extend((c, d + 1) for c in ast.iter_child_nodes(node))


# ---------------------------------------------------------------- predictions


def parse_expect(text: str, ceilings: dict[str, float] | None = None) -> Node:
    """Parse a prediction expression; raise ExprError (with column) on anything outside the language.

    `ceilings` (when given) are the names allowed besides a/b; None skips the name check."""
    if ceilings is None:
        return _parse_expect_cached(text)
    return _parse_expect(text, ceilings)


@lru_cache(maxsize=1024)
def _parse_expect_cached(text: str) -> Node:
    return _parse_expect(text, None)


def _parse_expect(text: str, ceilings: dict[str, float] | None) -> Node:
    body = _parse(text)
    node = _conv_bool(body, text, ceilings)
    for at in atoms(node):
        _check_region(at, ceilings or {}, text)
    for at in atoms(node):
        if fits(at) and not _fit_alone(at):
            f = fits(at)[0]
            raise ExprError(f"{f.kind}(…) is compared on its own with a number or a range "
                            f"(`{f.kind}({f.label}) in [0.9, 1.1]`, `{f.kind}({f.label}) < 0.3`)", f.col, text)
    if not refs(node, groups_only=True):
        raise ExprError("the expression must mention group a or b (e.g. `a > b`, `a.gpu_util < 50`)", 1, text)
    return node


def _check_region(at: Node, ceilings: dict[str, float], text: str) -> None:
    """A comparison claims something (issue 42): its threshold is finite (`a > -inf` holds for every
    value, `a < 1e300 * 1e300` is a comparison with inf), and a range is neither empty (`in [5, 3]`,
    `in [inf, inf]`) nor everything (`in [-inf, inf]`). `inf` stays an open end of a range
    (`a / b in [1.6, inf]`). Bounds that name a ceiling are checked when they are known."""
    if isinstance(at, InRange):
        lo, hi = const_value(at.lo, ceilings), const_value(at.hi, ceilings)
        if lo is None or hi is None:
            return
        if math.isnan(lo) or math.isnan(hi):
            raise ExprError("a range bound is not a number (0/0?)", at.col, text)
        if lo == -math.inf and hi == math.inf:
            raise ExprError("the range [-inf, inf] holds every value: it claims nothing", at.col, text)
        if lo == math.inf or hi == -math.inf or lo > hi:
            raise ExprError(f"empty range: no value is in [{fmt_written(lo)}, {fmt_written(hi)}]", at.col, text)
        return
    if not isinstance(at, Cmp):
        return
    lg = bool(groups(at.left) or fits(at.left))
    rg = bool(groups(at.right) or fits(at.right))
    if lg == rg:
        return
    side = at.right if lg else at.left
    k = const_value(side, ceilings)
    if k is None or math.isfinite(k):
        return
    what = "not a number (0/0?)" if math.isnan(k) else f"{fmt_written(k)}: a comparison with it claims " + (
        "nothing (every value passes or none does)")
    raise ExprError(f"the threshold must be a finite number, got {what}", at.col, text)


def _conv_bool(n: ast.AST, text: str, ceil: dict[str, float] | None) -> Node:
    if isinstance(n, ast.BoolOp):
        items = tuple(_conv_bool(v, text, ceil) for v in n.values)
        return And(items) if isinstance(n.op, ast.And) else Or(items)
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
        return Not(_conv_bool(n.operand, text, ceil))
    if isinstance(n, ast.Compare):
        if len(n.ops) != 1:
            raise ExprError("chained comparisons are not allowed: write `x < y and y < z`", _col(n.comparators[1]), text)
        op, right = n.ops[0], n.comparators[0]
        left = _conv_num(n.left, text, ceil)
        if isinstance(op, ast.In):
            if not isinstance(right, ast.List) or len(right.elts) != 2:
                raise ExprError("a range is written `in [LO, HI]`", _col(right), text)
            lo = _conv_num(right.elts[0], text, ceil)
            hi = _conv_num(right.elts[1], text, ceil)
            for bound, src in ((lo, right.elts[0]), (hi, right.elts[1])):
                if refs(bound, groups_only=True):
                    raise ExprError("range bounds must be numbers or ceilings, not a or b", _col(src), text)
            lv, hv = const_value(lo, ceil or {}), const_value(hi, ceil or {})
            if lv is not None and hv is not None and lv > hv:
                raise ExprError(f"empty range: {fmt_written(lv)} > {fmt_written(hv)}", _col(right), text)
            return InRange(left, lo, hi, _col(n))
        sym = _CMP.get(type(op))
        if sym is None:
            bad = {ast.Eq: "==", ast.NotEq: "!=", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}.get(type(op), "?")
            col = text.find(bad, n.left.end_col_offset or 0) + 1 if bad != "?" else _col(n)
            raise ExprError(f"`{bad}` is not allowed here: use <, <=, >, >= or `in [lo, hi]`", max(col, 1), text)
        return Cmp(sym, left, _conv_num(right, text, ceil), _col(n))
    if isinstance(n, ast.BinOp) and type(n.op) not in _BIN:
        raise ExprError("only + - * / are allowed", _op_col(n, text), text)
    if isinstance(n, (ast.Name, ast.Attribute, ast.Constant, ast.BinOp)):
        raise ExprError("expected a comparison (e.g. `a > b` or `a / b in [0.3, 0.6]`)", _col(n), text)
    raise ExprError(f"`{ast.get_source_segment(text, n) or type(n).__name__}` is not allowed", _col(n), text)


def _conv_num(n: ast.AST, text: str, ceil: dict[str, float] | None) -> Node:
    if isinstance(n, ast.Constant):
        if isinstance(n.value, bool) or not isinstance(n.value, (int, float)):
            raise ExprError(f"expected a number, got {n.value!r}", _col(n), text)
        try:
            v = float(n.value)
        except OverflowError:
            v = math.inf
        if not math.isfinite(v):  # `1e400` reads as inf: a typo, never a threshold (`inf` says an open end)
            src = ast.get_source_segment(text, n) or "the number"
            raise ExprError(f"{src[:40]} is past the largest number optlog computes with (about 1.8e308)",
                            _col(n), text)
        return Num(v)
    if isinstance(n, ast.BinOp):
        sym = _BIN.get(type(n.op))
        if sym is None:
            raise ExprError("only + - * / are allowed", _op_col(n, text), text)
        return Bin(sym, _conv_num(n.left, text, ceil), _conv_num(n.right, text, ceil))
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
        inner = _conv_num(n.operand, text, ceil)
        return Neg(inner) if isinstance(n.op, ast.USub) else inner
    if isinstance(n, ast.Call):
        return _conv_fit(n, text)
    if isinstance(n, ast.Name) and n.id == "inf" and (ceil is None or "inf" not in ceil):
        return Num(math.inf)  # an open end of a range: `a / b in [1.6, inf]`
    if isinstance(n, (ast.Name, ast.Attribute)):
        name = _dotted(n)
        if name is None:
            raise ExprError("expected a, b, a.METRIC, b.METRIC or a ceiling name", _col(n), text)
        head, _, rest = name.partition(".")
        if head in ("a", "b"):
            return Ref(head, rest or None, name, _col(n))
        if rest:
            raise ExprError(f"unknown group {head!r}: metrics are written a.NAME or b.NAME", _col(n), text)
        if ceil is not None and name not in ceil:
            known = ", ".join(sorted(ceil)) or "none (set hardware in optlog.yaml or run `optlog calibrate`)"
            raise ExprError(f"unknown name {name!r}: use a, b, a.METRIC, b.METRIC or a ceiling ({known})", _col(n), text)
        return Ref(None, None, name, _col(n))
    if isinstance(n, (ast.Compare, ast.BoolOp)) or (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)):
        raise ExprError("a comparison cannot be used as a number here", _col(n), text)
    raise ExprError(f"`{ast.get_source_segment(text, n) or type(n).__name__}` is not allowed", _col(n), text)


FIT_KINDS = ("k", "slope")


def _conv_fit(n: ast.Call, text: str) -> Fit:
    """`k(input_len)`, `slope(input_len)`, `k(input_len, a.mean_ttft_ms)`."""
    name = n.func.id if isinstance(n.func, ast.Name) else None
    if name not in FIT_KINDS:
        raise ExprError(f"`{ast.get_source_segment(text, n.func) or '?'}(…)` is not allowed: the fits are "
                        "k(LABEL) (exponent, log–log) and slope(LABEL) (linear)", _col(n), text)
    if n.keywords or not 1 <= len(n.args) <= 2:
        raise ExprError(f"write {name}(LABEL) or {name}(LABEL, a.METRIC)", _col(n), text)
    label = _dotted(n.args[0])
    if label is None or "." in label or label in ("a", "b"):
        raise ExprError(f"{name}(…) takes a label name first (e.g. {name}(input_len))", _col(n.args[0]), text)
    ref = Ref("a", None, "a", _col(n))
    if len(n.args) == 2:
        dotted = _dotted(n.args[1])
        head, _, rest = (dotted or "").partition(".")
        if head not in ("a", "b"):
            raise ExprError(f"the second argument of {name}(…) is a, b, a.METRIC or b.METRIC", _col(n.args[1]), text)
        ref = Ref(head, rest or None, dotted or head, _col(n.args[1]))
    return Fit(name, label, ref, _col(n))


def _children(n: Node) -> list[Node]:
    """The sub-expressions of a node, in reading order: the one place that knows the tree's shape,
    so every walk over an expression (refs, fits) visits the same nodes."""
    if isinstance(n, Fit):
        return [n.ref]
    if isinstance(n, (Bin, Cmp)):
        return [n.left, n.right]
    if isinstance(n, (Neg, Not)):
        return [n.operand]
    if isinstance(n, InRange):
        return [n.operand, n.lo, n.hi]
    if isinstance(n, (And, Or)):
        return list(n.items)
    return []


def _walk(node: Node) -> list[Node]:
    """Every node of the expression, depth first, the node before its children."""
    out: list[Node] = [node]
    for c in _children(node):
        out.extend(_walk(c))
    return out


def fits(node: Node) -> list[Fit]:
    """The fits an expression mentions."""
    return [n for n in _walk(node) if isinstance(n, Fit)]


def refs(node: Node, groups_only: bool = False) -> list[Ref]:
    return [n for n in _walk(node) if isinstance(n, Ref) and (not groups_only or n.group is not None)]


def groups(node: Node) -> set[str]:
    return {r.group for r in refs(node, groups_only=True) if r.group}


def atoms(node: Node) -> list[Node]:
    """The comparisons and ranges of a boolean expression, in reading order."""
    if isinstance(node, (Cmp, InRange)):
        return [node]
    if isinstance(node, Not):
        return atoms(node.operand)
    if isinstance(node, (And, Or)):
        return [a for i in node.items for a in atoms(i)]
    return []


def const_value(node: Node, ceilings: dict[str, float]) -> float | None:
    """The value of a node without group references (None if it has any or a name is unknown)."""
    return num_eval(node, lambda r: ceilings.get(r.name) if r.group is None else None)


def num_eval(node: Node, lookup: Any) -> float | None:
    """Evaluate arithmetic; `lookup(ref)` gives a ref's value (None: unknown → result None)."""
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Ref):
        v = lookup(node)
        return None if v is None else float(v)
    if isinstance(node, Neg):
        v = num_eval(node.operand, lookup)
        return None if v is None else -v
    if isinstance(node, Bin):
        x, y = num_eval(node.left, lookup), num_eval(node.right, lookup)
        if x is None or y is None:
            return None
        if node.op == "+":
            return x + y
        if node.op == "-":
            return x - y
        if node.op == "*":
            return x * y
        if y == 0:
            return math.copysign(math.inf, x) if x else math.nan
        return x / y
    return None


def unparse(node: Node) -> str:
    if isinstance(node, Fit):
        default = node.ref.group == "a" and node.ref.metric is None
        return f"{node.kind}({node.label}" + ("" if default else f", {node.ref.name}") + ")"
    if isinstance(node, Num):
        return fmt_written(node.value)
    if isinstance(node, Ref):
        return node.name
    if isinstance(node, Neg):
        return f"-{unparse(node.operand)}"
    if isinstance(node, Bin):
        return f"({unparse(node.left)} {node.op} {unparse(node.right)})"
    if isinstance(node, Cmp):
        return f"{unparse(node.left)} {node.op} {unparse(node.right)}"
    if isinstance(node, InRange):
        return f"{unparse(node.operand)} in [{unparse(node.lo)}, {unparse(node.hi)}]"
    if isinstance(node, And):
        return " and ".join(f"({unparse(i)})" for i in node.items)
    if isinstance(node, Or):
        return " or ".join(f"({unparse(i)})" for i in node.items)
    if isinstance(node, Not):
        return f"not ({unparse(node.operand)})"
    return "?"


# ---------------------------------------------------------------- shapes the statistics understand


def _fit_alone(node: Node) -> bool:
    """A fit stands alone on one side of a comparison with a group-free side, or is a range's operand."""
    if isinstance(node, InRange):
        return isinstance(node.operand, Fit)
    if isinstance(node, Cmp):
        sides = (node.left, node.right)
        return any(isinstance(x, Fit) and not refs(y, groups_only=True) and not fits(y)
                   for x, y in (sides, sides[::-1]))
    return False


INF = math.inf


@dataclass(frozen=True)
class Region:
    """The region a claim puts its tested quantity in: [lo, hi], either end open or infinite."""

    lo: float = -INF
    hi: float = INF
    lo_open: bool = False
    hi_open: bool = False

    def text(self) -> str:
        if self.hi == INF and self.lo != -INF:
            return f"{'>' if self.lo_open else '>='} {fmt_written(self.lo)}"
        if self.lo == -INF and self.hi != INF:
            return f"{'<' if self.hi_open else '<='} {fmt_written(self.hi)}"
        return f"in [{fmt_written(self.lo)}, {fmt_written(self.hi)}]"

    def contains(self, v: float) -> bool:
        above = v > self.lo if self.lo_open else v >= self.lo
        below = v < self.hi if self.hi_open else v <= self.hi
        return above and below

    def threshold(self) -> float | list[float]:
        """The number(s) a reader compares with: the finite end, or both ends of a range."""
        if self.hi == INF:
            return self.lo
        if self.lo == -INF:
            return self.hi
        return [self.lo, self.hi]


@dataclass(frozen=True)
class Claim:
    """One comparison of a prediction reduced to the quantity it tests and the region it claims:
    `ratio` x/y of two groups' expressions, `diff` x − y, `value` of one group's expression (per
    run), or `fit` (x is the Fit). Equivalent spellings reduce to the same claim: `a >= b * 1.6`,
    `a / b >= 1.6`, `1.6 <= a / b` and `a / b in [1.6, inf]` are all ratio a/b in [1.6, inf)."""

    kind: str
    x: Node
    y: Node | None
    region: Region


def _factor(n: Node, ceilings: dict[str, float]) -> tuple[Node, float, float]:
    """n = core · num / den, with num and den constants (core keeps the group references)."""
    if isinstance(n, Neg):
        c, p, q = _factor(n.operand, ceilings)
        return c, -p, q
    if isinstance(n, Bin) and n.op in ("*", "/"):
        kl = None if groups(n.left) or fits(n.left) else const_value(n.left, ceilings)
        kr = None if groups(n.right) or fits(n.right) else const_value(n.right, ceilings)
        if n.op == "*" and kl is not None and kl != 0 and (groups(n.right) or fits(n.right)):
            c, p, q = _factor(n.right, ceilings)
            return c, kl * p, q
        if kr is not None and kr != 0 and (groups(n.left) or fits(n.left)):
            c, p, q = _factor(n.left, ceilings)
            return (c, p * kr, q) if n.op == "*" else (c, p, q * kr)
    return n, 1.0, 1.0


def _addend(n: Node, ceilings: dict[str, float]) -> tuple[Node, float]:
    """n = core + c, with c constant."""
    if isinstance(n, Bin) and n.op in ("+", "-"):
        kl = None if groups(n.left) else const_value(n.left, ceilings)
        kr = None if groups(n.right) else const_value(n.right, ceilings)
        if kr is not None and groups(n.left):
            c, k = _addend(n.left, ceilings)
            return c, k + (kr if n.op == "+" else -kr)
        if kl is not None and n.op == "+" and groups(n.right):
            c, k = _addend(n.right, ceilings)
            return c, k + kl
    return n, 0.0


def _one_group(n: Node) -> str | None:
    g = groups(n)
    return next(iter(g)) if len(g) == 1 and not fits(n) else None


def _region(op: str, bound: float) -> Region:
    if op in (">", ">="):
        return Region(bound, INF, lo_open=op == ">")
    return Region(-INF, bound, hi_open=op == "<")


def _scale_region(r: Region, f: float) -> Region:
    """The region of q when q·f is in r."""
    if f > 0:
        return Region(r.lo / f, r.hi / f, r.lo_open, r.hi_open)
    return Region(r.hi / f, r.lo / f, r.hi_open, r.lo_open)


def _core_claim(core: Node, region: Region, ceilings: dict[str, float]) -> Claim | None:
    """A claim about `core` (no constant factor left outside it) in `region`."""
    if isinstance(core, Fit):
        return Claim("fit", core, None, region)
    if isinstance(core, Bin) and core.op == "/":
        gx, gy = _one_group(core.left), _one_group(core.right)
        if gx and gy and gx != gy:
            x, px, qx = _factor(core.left, ceilings)
            y, py, qy = _factor(core.right, ceilings)
            f = (px * qy) / (qx * py)
            return Claim("ratio", x, y, region if f == 1 else _scale_region(region, f))
    if isinstance(core, Bin) and core.op == "-":
        gx, gy = _one_group(core.left), _one_group(core.right)
        if gx and gy and gx != gy:
            return Claim("diff", core.left, core.right, region)
    if _one_group(core):
        return Claim("value", core, None, region)
    return None


def claim(node: Node, ceilings: dict[str, float]) -> Claim | None:
    """The claim a comparison or range makes (None: a form without an estimate, judged on means)."""
    if isinstance(node, InRange):
        lo, hi = const_value(node.lo, ceilings), const_value(node.hi, ceilings)
        if lo is None or hi is None:
            return None
        core, p, q = _factor(node.operand, ceilings)
        r = Region(lo, hi)
        return _core_claim(core, r if p == q else _scale_region(r, p / q), ceilings)
    if not isinstance(node, Cmp):
        return None
    op, left, right = node.op, node.left, node.right
    lg, rg = bool(groups(left) or fits(left)), bool(groups(right) or fits(right))
    if lg != rg:
        if not lg:
            left, right, op = right, left, FLIP[op]
        k = const_value(right, ceilings)
        if k is None:
            return None
        core, p, q = _factor(left, ceilings)
        r = _region(op, k)
        return _core_claim(core, r if p == q else _scale_region(r, p / q), ceilings)
    gl, gr = _one_group(left), _one_group(right)
    if not gl or not gr or gl == gr:
        return None
    if gl == "b":  # orient as a … b: `b * 1.6 <= a` is `a >= b * 1.6`
        left, right, op, gl, gr = right, left, FLIP[op], gr, gl
    (xl, cl), (xr, cr) = _addend(left, ceilings), _addend(right, ceilings)
    if cl or cr:  # `a > b + 100`: a − b > 100
        return Claim("diff", xl, xr, _region(op, cr - cl))
    x, px, qx = _factor(left, ceilings)
    y, py, qy = _factor(right, ceilings)
    if px / qx > 0 and py / qy > 0:  # kx·x op ky·y  ⇔  x/y op ky/kx
        return Claim("ratio", x, y, _region(op, (py * qx) / (qy * px)))
    return None


def scaled_ref(node: Node, ceilings: dict[str, float]) -> tuple[Ref, float] | None:
    """`k * g`, `g * k`, `g / k`, `g` (g a group reference, k constant) → (g, k)."""
    if isinstance(node, Ref) and node.group:
        return node, 1.0
    if isinstance(node, Bin) and node.op in ("*", "/"):
        lg, rg = groups(node.left), groups(node.right)
        if lg and not rg:
            inner = scaled_ref(node.left, ceilings)
            k = const_value(node.right, ceilings)
            if inner and k is not None and k != 0:
                return inner[0], inner[1] * (k if node.op == "*" else 1.0 / k)
        if rg and not lg and node.op == "*":
            inner = scaled_ref(node.right, ceilings)
            k = const_value(node.left, ceilings)
            if inner and k is not None and k != 0:
                return inner[0], inner[1] * k
    return None


def ratio_parts(node: Node) -> tuple[Node, Node] | None:
    """`X / Y` where X mentions exactly one group and Y exactly the other one."""
    if isinstance(node, Bin) and node.op == "/":
        gx, gy = groups(node.left), groups(node.right)
        if len(gx) == 1 and len(gy) == 1 and gx != gy:
            return node.left, node.right
    return None


def regions_overlap(r1: Region, r2: Region) -> bool:
    """Whether two claimed regions share more than a point (two claims an outcome cannot tell apart)."""
    return max(r1.lo, r2.lo) < min(r1.hi, r2.hi)


# ---------------------------------------------------------------- where conditions


@dataclass(frozen=True)
class WCmp:
    label: str
    op: str  # == != < <= > >= in
    value: Any  # typed value, or a tuple of them for `in`


@dataclass(frozen=True)
class WBool:
    op: str  # and | or | not
    items: tuple[Any, ...]


_WOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.In: "in",
         ast.NotIn: "not in"}


def parse_where(text: str) -> Any:
    try:
        body = _parse(text)
    except ExprError as e:
        if re.search(r"(?<![=<>!])=(?!=)", text):  # `m = 1024`: the one mistake with an obvious fix
            raise ExprError(e.message + "; a condition compares with == (`m == 1024`), not =", e.column,
                            e.text) from None
        raise
    return _conv_where(body, text)


def _w_value(n: ast.AST, text: str) -> Any:
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, str)) and not isinstance(n.value, bool):
        return L.typed(n.value)
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant) \
            and isinstance(n.operand.value, (int, float)):
        return L.typed(-n.operand.value)
    name = _dotted(n)
    if name is not None:
        return name  # a bare word is text
    raise ExprError("expected a value (a number, a word or a quoted string)", _col(n), text)


def _conv_where(n: ast.AST, text: str) -> Any:
    if isinstance(n, ast.BoolOp):
        return WBool("and" if isinstance(n.op, ast.And) else "or", tuple(_conv_where(v, text) for v in n.values))
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
        return WBool("not", (_conv_where(n.operand, text),))
    if isinstance(n, ast.Compare):
        if len(n.ops) != 1:
            raise ExprError("chained comparisons are not allowed: write `x < y and y < z`", _col(n.comparators[1]), text)
        label = _dotted(n.left)
        if label is None:
            raise ExprError("expected a label name on the left (e.g. `concurrency <= 64`)", _col(n.left), text)
        op = _WOPS.get(type(n.ops[0]))
        if op is None:
            raise ExprError("use ==, !=, <, <=, >, >=, in or not in", _col(n), text)
        right = n.comparators[0]
        if op in ("in", "not in"):
            if not isinstance(right, (ast.List, ast.Tuple)):
                raise ExprError("`in` needs a list: `tp in [4, 8]`", _col(right), text)
            return WCmp(label, op, tuple(_w_value(e, text) for e in right.elts))
        return WCmp(label, op, _w_value(right, text))
    raise ExprError("expected a condition such as `concurrency <= 64` or `dataset != sharegpt`", _col(n), text)


def where_labels(cond: Any) -> list[str]:
    if isinstance(cond, WCmp):
        return [cond.label]
    return [x for i in cond.items for x in where_labels(i)]


def where_match(cond: Any, labels: dict[str, Any]) -> bool:
    if isinstance(cond, WBool):
        if cond.op == "and":
            return all(where_match(i, labels) for i in cond.items)
        if cond.op == "or":
            return any(where_match(i, labels) for i in cond.items)
        return not where_match(cond.items[0], labels)
    if cond.label not in labels:
        return False
    v = labels[cond.label]
    if cond.op in ("in", "not in"):
        hit = any(L.canonical(v) == L.canonical(x) for x in cond.value)
        return hit if cond.op == "in" else not hit
    if cond.op == "==":
        return L.canonical(v) == L.canonical(cond.value)
    if cond.op == "!=":
        return L.canonical(v) != L.canonical(cond.value)
    x, y = L.as_number(v), L.as_number(cond.value)
    a: Any
    b: Any
    if x is not None and y is not None:
        a, b = x, y
    else:
        a, b = L.canonical(v), L.canonical(cond.value)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[cond.op]
