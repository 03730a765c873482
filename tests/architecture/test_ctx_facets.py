"""Service functions take what they use (issue 46): a service function's `ctx` is typed with the
narrowest facet of the session (`optlog.needs`: Files, Index, Commits, Reads, Writes, tried in
`NARROWEST_FIRST`) that covers what it uses, never the whole `Ctx` when a facet covers it.

What a function uses of `ctx`: the attributes it reads on it (`ctx.db`, `ctx.notice(...)`), and, for
each call it hands `ctx` to, the facet that callee's parameter is typed with (anywhere in optlog,
resolved through the module's imports; a class's `__init__` for a class). A context a constructor
keeps (`self.ctx = ctx`) counts with what the class's methods use of `self.ctx`. A `ctx` handed on
in a way this cannot follow (returned, put in a container, handed to a callee it cannot resolve or
whose parameter is not a facet) is reported too. mypy checks the rest: the callers pass the
`Ctx`, which satisfies every facet structurally. Read with `ast`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCOPE = "optlog.service"
WHOLE = "Ctx"

# Modules of the service not typed by facets yet. Only shrinks: a listed module that is clean fails.
NOT_YET: set[str] = set()


def facets_of(needs_source: str, ctx_source: str) -> tuple[dict[str, frozenset[str]], tuple[str, ...]]:
    """The facets declared in optlog/needs.py (their members, bases' included) and their order;
    `Ctx` (optlog/service/context.py) as the whole: its methods and the attributes it sets."""
    tree = ast.parse(needs_source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    order: tuple[str, ...] = ()
    for n in tree.body:
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "NARROWEST_FIRST" for t in n.targets):
            order = tuple(ast.literal_eval(n.value))

    def members(name: str) -> frozenset[str]:
        c = classes[name]
        own = {s.name for s in c.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        own |= {s.target.id for s in c.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
        for b in c.bases:
            if isinstance(b, ast.Name) and b.id in classes:
                own |= members(b.id)
        return frozenset(own)

    out = {name: members(name) for name in classes}
    whole: set[str] = set()
    for n in ast.walk(ast.parse(ctx_source)):
        if isinstance(n, ast.ClassDef) and n.name == WHOLE:
            for s in ast.walk(n):
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    whole.add(s.name)
                elif (isinstance(s, ast.Attribute) and isinstance(s.value, ast.Name) and s.value.id == "self"
                      and isinstance(s.ctx, ast.Store)):
                    whole.add(s.attr)
    out[WHOLE] = frozenset(whole)
    return out, order


@dataclass
class Module:
    name: str
    tree: ast.Module
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)  # alias -> module
    names: dict[str, tuple[str, str]] = field(default_factory=dict)  # alias -> (module, name)


def index(sources: dict[str, str]) -> dict[str, Module]:
    mods = {name: Module(name, ast.parse(src)) for name, src in sources.items()}
    for m in mods.values():
        for n in m.tree.body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                m.defs[n.name] = n
        for n in ast.walk(m.tree):
            if isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                for a in n.names:
                    full = f"{n.module}.{a.name}"
                    if full in mods:
                        m.modules[a.asname or a.name] = full
                    else:
                        m.names[a.asname or a.name] = (n.module, a.name)
            elif isinstance(n, ast.Import):
                for a in n.names:
                    if a.asname:
                        m.modules[a.asname] = a.name
    return mods


def _ann(arg: ast.arg | None) -> str | None:
    """The name a parameter is typed with (`X | None`: X; a quoted or dotted name: its last part)."""
    if arg is None or arg.annotation is None:
        return None
    text = ast.unparse(arg.annotation).strip("'\"")
    parts = [t.strip() for t in text.split("|") if t.strip() != "None"]
    return parts[0].rsplit(".", 1)[-1] if len(parts) == 1 else text


def _callee(mods: dict[str, Module], m: Module, func: ast.expr, cls: ast.ClassDef | None
            ) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, int] | None:
    """The function a call runs, and how many leading parameters the call does not pass."""
    target: ast.AST | None = None
    where = m.name
    if isinstance(func, ast.Name):
        if func.id in m.defs:
            target = m.defs[func.id]
        elif func.id in m.names:
            mod, name = m.names[func.id]
            if mod in mods:
                target, where = mods[mod].defs.get(name), mod
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id in m.modules and m.modules[func.value.id] in mods:
            where = m.modules[func.value.id]
            target = mods[where].defs.get(func.attr)
        elif func.value.id == "self" and cls is not None:
            target = next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and s.name == func.attr), None)
            if target is not None:
                return f"{where}.{cls.name}.{func.attr}", target, 1
    if isinstance(target, ast.ClassDef):
        init = next((s for s in target.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        return (f"{where}.{target.name}", init, 1) if init is not None else None
    if isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"{where}.{target.name}", target, 0
    return None


def _param(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip: int, pos: int | None, kw: str | None) -> ast.arg | None:
    a = fn.args
    if kw is not None:
        return next((p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg == kw), None)
    ps = [*a.posonlyargs, *a.args]
    i = skip + (pos or 0)
    return ps[i] if i < len(ps) else None


def _is(node: ast.AST, held: ast.expr) -> bool:
    return ast.dump(node) == ast.dump(held)


def uses(mods: dict[str, Module], m: Module, fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None,
         facets: dict[str, frozenset[str]]) -> tuple[set[str], list[str]]:
    """The members `fn` uses of its `ctx`, and what it does with it that cannot be followed."""
    held: list[ast.expr] = [ast.Name("ctx", ast.Load())]
    bodies: list[ast.AST] = [fn]
    if cls is not None and fn.name == "__init__":
        for n in ast.walk(fn):  # self.ctx = ctx (or a tuple of them): the class's methods use it
            if isinstance(n, ast.Assign) and len(n.targets) == 1:
                pairs = (zip(n.targets[0].elts, n.value.elts) if isinstance(n.targets[0], ast.Tuple)
                         and isinstance(n.value, ast.Tuple) else [(n.targets[0], n.value)])
                for t, v in pairs:
                    if isinstance(v, ast.Name) and v.id == "ctx" and isinstance(t, ast.Attribute):
                        held.append(ast.Attribute(ast.Name("self", ast.Load()), t.attr, ast.Load()))
                        bodies = [cls]
    used: set[str] = set()
    loose: list[str] = []
    for body in bodies:
        parents: dict[int, ast.AST] = {}
        for p in ast.walk(body):
            for c in ast.iter_child_nodes(p):
                parents[id(c)] = p
        for n in ast.walk(body):
            if not any(_is(n, h) for h in held) or isinstance(getattr(n, "ctx", None), ast.Store):
                continue
            up = parents.get(id(n))
            if isinstance(up, ast.Attribute) and up.value is n:
                used.add(up.attr)
                continue
            call, pos, kw = None, None, None
            if isinstance(up, ast.Call) and n in up.args:
                call, pos = up, up.args.index(n)
            elif isinstance(up, ast.keyword) and isinstance(parents.get(id(up)), ast.Call):
                call, kw = parents[id(up)], up.arg
            if isinstance(up, ast.Assign) and up.value is n and all(
                    isinstance(t, ast.Attribute) and any(_is(t, h) for h in held) for t in up.targets):
                continue
            if isinstance(up, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in up.ops) and all(
                    isinstance(c, ast.Constant) and c.value is None for c in (up.left, *up.comparators) if c is not n):
                continue  # `ctx is None`: there is no workspace
            if isinstance(up, ast.Tuple) and isinstance(parents.get(id(up)), ast.Assign) and held[1:]:
                continue  # the constructor keeping it, followed above
            if call is None:
                loose.append(f"ctx used as {type(up).__name__} at line {n.lineno}")
                continue
            got = _callee(mods, m, call.func, cls)
            if got is None:
                loose.append(f"ctx handed to {ast.unparse(call.func)}, which this cannot resolve")
                continue
            name, target, skip = got
            ann = _ann(_param(target, skip, pos, kw))
            if ann not in facets:
                loose.append(f"ctx handed to {name}, whose parameter is {ann or 'unannotated'}, not a facet")
                continue
            used |= facets[ann]
    return used, loose


def violations(sources: dict[str, str], facets: dict[str, frozenset[str]], order: tuple[str, ...],
               scope: str = SCOPE) -> dict[str, list[str]]:
    """By module in `scope`: each function whose ctx is not typed by the narrowest facet covering
    what it uses."""
    mods = index(sources)
    out: dict[str, list[str]] = {}
    for m in mods.values():
        if not (m.name == scope or m.name.startswith(scope + ".")):
            continue
        todo: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]] = []
        for n in m.tree.body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                todo.append((n, None))
            elif isinstance(n, ast.ClassDef):
                todo += [(s, n) for s in n.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for fn, cls in todo:
            a = fn.args
            arg = next((p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg == "ctx"), None)
            if arg is None:
                continue
            where = f"{m.name}.{cls.name + '.' if cls else ''}{fn.name}"
            ann = _ann(arg)
            used, loose = uses(mods, m, fn, cls, facets)
            bad = [f"{where}: {why}" for why in loose]
            if loose:
                pass  # what it does with ctx is not followed: that is the finding
            elif ann not in facets:
                bad.append(f"{where}(ctx: {ann or 'unannotated'}): not a facet of optlog.needs")
            else:
                narrowest = next((f for f in order if used <= facets[f]), WHOLE)
                missing = sorted(used - facets[ann])
                if missing:
                    bad.append(f"{where}(ctx: {ann}) uses {', '.join(missing)}, not in {ann}")
                elif ann != narrowest:
                    bad.append(f"{where}(ctx: {ann}): {narrowest} covers what it uses ({', '.join(sorted(used))})")
            if bad:
                out.setdefault(m.name, []).extend(bad)
    return out


def _sources() -> dict[str, str]:
    out = {}
    for p in sorted((ROOT / "optlog").rglob("*.py")):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = p.read_text(encoding="utf-8")
    return out


def _facets() -> tuple[dict[str, frozenset[str]], tuple[str, ...]]:
    return facets_of((ROOT / "optlog/needs.py").read_text(encoding="utf-8"),
                     (ROOT / "optlog/service/context.py").read_text(encoding="utf-8"))


def test_service_functions_take_the_narrowest_facet() -> None:
    facets, order = _facets()
    found = violations(_sources(), facets, order)
    left = {m: v for m, v in found.items() if m not in NOT_YET}
    assert not left, "type ctx with the narrowest facet of optlog.needs:\n" + "\n".join(
        x for v in left.values() for x in v)
    clean = sorted(m for m in NOT_YET if m not in found)
    assert not clean, f"clean now, take them off NOT_YET: {clean}"


def test_the_facets_are_declared_narrowest_first() -> None:
    facets, order = _facets()
    assert order and all(f in facets for f in order)
    for i, f in enumerate(order):  # none is covered by one before it (it would never be chosen)
        assert not any(facets[f] <= facets[g] for g in order[:i]), f


NEEDS = '''
from typing import Protocol
class Files(Protocol):
    @property
    def ws(self): ...
class Index(Protocol):
    @property
    def db(self): ...
class Reads(Files, Index, Protocol):
    def notice(self, text): ...
NARROWEST_FIRST = ("Files", "Index", "Reads")
'''
CTX = '''
class Ctx:
    def __init__(self):
        self.ws = 1
        self.actor = 2
    @property
    def db(self): ...
    def notice(self, text): ...
'''
SERVICE = '''
from optlog.service.context import Ctx
from optlog.needs import Files, Reads, Index
from optlog.service import other
from optlog.lib import take_files

def wide(ctx: Ctx) -> None:          # only ws: Files covers it
    ctx.ws.root
def right(ctx: Files) -> None:
    ctx.ws.root
def short(ctx: Files) -> None:       # uses db, not in Files
    ctx.db
def hands(ctx: Reads) -> None:       # hands it to a Files callee only: Files covers it
    take_files(ctx)
def hands_wide(ctx: Reads) -> None:  # other.reads needs Reads: right
    other.reads(1, ctx=ctx)
def loose(ctx: Reads) -> None:
    return ctx
def any_(ctx) -> None: ...
def whole(ctx: Ctx) -> None:         # uses actor: no facet covers it
    ctx.actor
class Worker:
    def __init__(self, ctx: Reads) -> None:   # its methods use only ws
        self.ctx, self.n = ctx, 1
    def go(self) -> None:
        self.ctx.ws
'''
OTHER = '''
from optlog.needs import Reads
def reads(n, *, ctx: Reads) -> None:
    ctx.db; ctx.ws; ctx.notice("x")
'''
LIB = '''
from optlog.needs import Files
def take_files(ctx: Files) -> None: ...
'''


def test_the_rule_can_fail() -> None:
    facets, order = facets_of(NEEDS, CTX)
    assert facets["Reads"] == {"ws", "db", "notice"} and facets["Ctx"] >= {"ws", "actor", "db", "notice"}
    found = violations({"optlog.service.x": SERVICE, "optlog.service.other": OTHER, "optlog.lib": LIB,
                        "optlog.needs": NEEDS, "optlog.service.context": CTX}, facets, order)
    assert found.pop("optlog.service.x") == [
        "optlog.service.x.wide(ctx: Ctx): Files covers what it uses (ws)",
        "optlog.service.x.short(ctx: Files) uses db, not in Files",
        "optlog.service.x.hands(ctx: Reads): Files covers what it uses (ws)",
        "optlog.service.x.loose: ctx used as Return at line 18",
        "optlog.service.x.any_(ctx: unannotated): not a facet of optlog.needs",
        "optlog.service.x.Worker.__init__(ctx: Reads): Files covers what it uses (ws)",
    ]
    assert found == {}
