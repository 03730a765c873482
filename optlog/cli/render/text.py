"""Human renderings shared by the CLI's texts (`optlog.cli.render`): small tables and one-line
summaries. A renderer is a pure function of its document; the CLI prints it (stdout is data)."""

from __future__ import annotations

import importlib
from typing import Any

from optlog import api
from optlog.api import verb as V
from optlog.cli import statustext
from optlog.core.hypothesis import STATUS_GLYPH
from optlog.core.numfmt import fmt_num  # noqa: F401  (the verbs take it from here)
from optlog.core.views import kv  # noqa: F401  (the verbs take it from here; the dashboard uses it too)


def table(rows: list[list[Any]], header: list[str]) -> str:
    cells = [[("" if c is None else str(c)) for c in r] for r in rows]
    widths = [len(h) for h in header]
    for r in cells:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    fmt = lambda r: "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()  # noqa: E731
    lines = [fmt(header), fmt(["-" * w for w in widths])]
    lines += [fmt(r) for r in cells]
    return "\n".join(lines)


def glyph(status: str) -> str:
    return STATUS_GLYPH.get(status, " ")


def runs_table(d: dict[str, Any]) -> str:
    """A run list document as a table: id, status, labels and the first three metrics."""
    rows = d["runs"]
    if not rows:
        return "no runs"
    keys: list[str] = []
    for r in rows:
        for k in r.get("metrics", {}):
            if k not in keys and len(keys) < 3 and not k.startswith("raw."):
                keys.append(k)
    body = [
        [r.get("id"), str(r.get("status", "")) + (" (invalid)" if r.get("invalidated") else ""), kv(r.get("labels", {}))] +
        [fmt_num(r.get("metrics", {}).get(k)) for k in keys]
        for r in rows
    ]
    return table(body, ["id", "status", "labels", *keys])


_ARG_NAMES = {"HYP": "hypothesis", "[HYP]": "hypothesis"}  # as the MCP face names these arguments


def _arg_name(p: Any) -> set[str]:
    """The names a suggested call may give a verb parameter: its own, and the agent's (the MCP
    face's: a positional is named after its metavar, an option after its long flag)."""
    names = {p.name}
    if isinstance(p.spec, V.Arg):
        mv = p.spec.metavar or ""
        names.add(_ARG_NAMES.get(mv) or mv.strip("[]…").lower())
    else:
        names |= {f.split("/")[0].lstrip("-").replace("-", "_") for f in p.spec.flags if f.startswith("--")}
    return names - {""}


def call_shape(call: str, keys: list[str]) -> statustext.Shape:
    """How the verb of a suggested call (a tool name, the CLI path joined by `_`) spells each of
    these arguments: a positional with its placeholder, or an option's flag (from the registry)."""
    words = tuple(call.split("_"))
    if words[0] in api.NOUNS:
        importlib.import_module(api.NOUNS[words[0]])
        g = V.groups_under(words[:-1]).get(words[:-1])
        if g is not None and words[-1] in g.parts:  # a verb declared in another module (`run wait`)
            importlib.import_module(g.parts[words[-1]])
    v = V.verbs_under(words).get(words)
    params = v.params() if v is not None else ()
    out: statustext.Shape = {}
    for k in keys:
        p = next((q for q in params if k in _arg_name(q)), None)
        mv = getattr(p.spec, "metavar", None) if p is not None else None
        placeholder = (mv or (p.name if p is not None else k)).strip("[]").upper()
        if p is not None and isinstance(p.spec, V.Arg):
            out[k] = ("pos", None, placeholder)
            continue
        flag = next((f.split("/")[0] for f in p.spec.flags if f.startswith("--")), None) \
            if p is not None and isinstance(p.spec, V.Opt) else None
        out[k] = ("opt", flag or "--" + k.replace("_", "-"), placeholder)
    return out


def command_line(call: str, arguments: dict[str, Any]) -> str:
    """A suggested call (`status`'s `next`: a tool name, the CLI path joined by `_`, and its
    arguments) as the command a person types: `optlog plan add TITLE --needs h --gain 10-30%`
    (`statustext.render_call`, spelt as the verb declares its parameters)."""
    return statustext.render_call(call, call_shape(call, list(arguments)), arguments)
