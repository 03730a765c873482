"""Every verb as a tool: one declaration (the verb catalogue, `optlog.api`), two faces.

The MCP face declares no tools of its own. It walks the command tree that `optlog.cli.commands`
generates from the catalogue; each verb's command becomes a tool named by its path (`run wait` →
`run_wait`) whose JSON schema comes from the verb's parameters as the command holds them (help →
description, choices → enum, repeatable → array, `K=V` → an object), and whose call converts the
JSON arguments to the typed values the verb takes, with the same click types the CLI parses with,
and calls the verb: no command line is built, no value becomes text again. So the tool's
structured result *is* the CLI's `--json` document for the same arguments, and a new verb or
parameter is a new tool or tool parameter with nothing else to write.

What differs between the faces is declared on the verb (`optlog.api.verb`): the defaults an agent
gets when it passes nothing (`AgentDefault`: the small-by-default options), descriptions of
positional arguments (`Arg(help=...)`), JSON schemas (`AgentJson`), output schemas and `read_only`
(`@verb(...)`). The commands that are not tools (the TUI, the MCP server itself, a sample stream)
say so with `@agent(skip=...)` (`optlog.cli.main.agent`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import click

from optlog.api import verb as V
from optlog.cli import binding as B
from optlog.api.verb import Call
from optlog.cli.main import cli
from optlog.cli.options import KeyValue
from optlog.cli.schemas import SCHEMAS
from optlog.core import text as TX
from optlog.core.limits import LIMITS
from optlog.errors import BadInput, OptlogError, close_matches, tool_given

# the root's global options: every tool has them implicitly (the server is the workspace, JSON always)
_GLOBAL = {"json_", "chdir", "help", "version"}
# argument metavars whose tool name reads better than the code's variable name
_ARG_NAMES = {"HYP": "hypothesis", "[HYP]": "hypothesis"}
_GENERIC_ARG_HELP = {
    "hypothesis": "The hypothesis id.",
    "spec": "A run spec: a file under runs/ (name or path).",
    "files": "Result files to import (paths in the workspace).",
    "path": "A folder (default: the server's workspace).",
    "title": "A short title.",
    "text": "The text.",
    "url": "The server's base URL, e.g. http://127.0.0.1:8000.",
}

# the largest result an agent gets unless it asks for more (`detail`, `limit`, `fields`…)
MAX_RESULT_BYTES = 4096
# the largest result even when the agent asked for more (`detail`, `limit`…): cut with a note
MAX_LIFTED_BYTES = 16384


@dataclass
class Param:
    name: str                 # the tool parameter
    click: click.Parameter
    schema: dict[str, Any]
    required: bool
    agent_default: Any = None
    has_agent_default: bool = False
    json: bool = False  # passed as one JSON text


@dataclass
class Tool:
    name: str
    path: tuple[str, ...]
    command: click.Command
    description: str
    params: dict[str, Param]
    output_schema: dict[str, Any] | None = None
    read_only: bool = False
    field_names: dict[str, str] = field(default_factory=dict)  # a CLI flag (--label, --todos) → tool param

    @property
    def binding(self) -> V.Verb:
        b = B.of(self.command.callback)
        if b is None:  # tests/architecture/test_bindings.py keeps every tool bound
            raise OptlogError(f"the command behind {self.name} has no verb (optlog.api.verb)",
                              code="internal_error")
        return b

    def spelling(self, name: str) -> str | None:
        """The tool parameter of a verb parameter (the binding's Python name: `fmt` → `format`,
        `out` → `out`), or None: MCP's one spelling of the parameters an error names."""
        return next((n for n, p in self.params.items() if p.click.name == name), None)

    def spell(self, err: OptlogError) -> OptlogError:
        """`err` as a tool call says it: the verb parameters it names as this tool's parameters
        (`spelling`); a field in a face's other spelling (a click type's `--label`, a metavar) by
        `param_for`."""
        err.spell(self.spelling, given=tool_given)
        err.field = self.param_for(err.field)
        return err

    def param_for(self, spelling: str | None) -> str | None:
        """The tool parameter an error's `field` means where it is not a verb parameter's name
        (those `spelling` maps): the CLI flag a click type names when it converts a value (`KeyValue`'s
        `--label`, `JsonValue`'s `--todos.0.content`), the same types both faces convert with; other
        fields (`todos[1].status`) are kept as they are."""
        if spelling is None or spelling in self.params:
            return spelling
        if spelling in self.field_names:
            return self.field_names[spelling]
        head, dot, rest = spelling.partition(".")
        if dot and head in self.field_names:  # a place inside a JSON value: --todos.0.content
            return f"{self.field_names[head]}.{rest}"
        return spelling

    def input_schema(self) -> dict[str, Any]:
        props = {n: p.schema for n, p in self.params.items()}
        req = [n for n, p in self.params.items() if p.required]
        out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
        if req:
            out["required"] = req
        return out


    def listing(self) -> tuple[str, dict[str, Any]]:
        """(description, input schema) as `tools/list` gives them, which an agent pays for before
        any work: it was 48 KB for 47 tools (issue 31). Every tool, its required parameters and
        every parameter's type and enum; the description's first sentence; a description for the
        parameters with a syntax of their own (EXPLAINED); a tool with many options lists the first
        MAX_LISTED and names the rest. The whole of it: the `agent_tools` tool, the CLI's --help."""
        names = [n for n, p in self.params.items() if p.required]
        names += [n for n in self.params if n not in names and n not in SHAPING][: max(0, MAX_LISTED - len(names))]
        props = {}
        for n in sorted(names, key=list(self.params).index):
            p = self.params[n]
            s = {k: v for k, v in p.schema.items() if k not in ("description", "default")}
            kv = "additionalProperties" in s and "items" in s
            if kv:  # K=V pairs: an object (a K=V list is taken too)
                s = {"type": "object"}
            if len(s.get("enum") or ()) > MAX_ENUM:  # a long list of names (and their aliases): an error lists them
                s.pop("enum")
            if s.get("type") == "array" and isinstance(s.get("items"), dict) and "properties" in s["items"]:
                s = {**s, "items": _bare(s["items"])}
            if p.schema.get("description") and n in EXPLAINED:
                text = p.schema["description"]
                if kv:  # the CLI's spelling (`--a config=tp8`, repeatable) as the tool takes it
                    text = re.sub(r"--[\w-]+ ([\w.]+)=([^\s,]+?)(?=[.,]?(\s|$))", r'{"\1": "\2"}',
                                  text.replace(" (repeatable)", ""))
                s["description"] = first_sentence(text, LISTED_PARAM_CHARS)
            props[n] = s
        schema: dict[str, Any] = {"type": "object", "properties": props}
        req = [n for n, p in self.params.items() if p.required]
        if req:
            schema["required"] = req
        desc = first_sentence(first_paragraph(self.description, 400), LISTED_TOOL_CHARS)
        rest = [n for n in self.params if n not in props and n not in SHAPING]
        if rest:
            desc += f" Also (agent_tools): {', '.join(rest)}."
        return desc, schema


LISTED_TOOL_CHARS = 70
LISTED_PARAM_CHARS = 50
MAX_LISTED = 6
MAX_ENUM = 8
# the result-shaping parameters (the server's instructions name them once; a tool rejects one it
# does not take, listing those it does)
SHAPING = frozenset({"limit", "offset", "order", "fields", "detail", "tail"})
# parameters with a syntax of their own: their description stays in tools/list
EXPLAINED = frozenset({"expect", "a", "b", "where", "per", "by", "gain", "effort", "confidence", "needs", "sets",
                       "labels", "metrics", "todos", "refs", "again", "key_map", "constraints", "concurrency",
                       "since", "timeout_s"})


def _bare(schema: dict[str, Any]) -> dict[str, Any]:
    """An object schema without its properties' descriptions."""
    props = {k: {kk: vv for kk, vv in v.items() if kk != "description"} for k, v in schema["properties"].items()}
    return {**schema, "properties": props}


def first_sentence(text: str, limit: int) -> str:
    """The first sentence of `text`, at most `limit` characters."""
    t = " ".join(text.split())
    m = re.search(r"(?<!e\.g)(?<!i\.e)(?<!etc)\. ", t)
    if m and 0 < m.start() < limit:
        t = t[: m.start() + 1]
    if len(t) <= limit:
        return t
    cut = t[: limit - 1]
    for sep in (", ", " "):  # at a word, or better at a list item
        i = cut.rfind(sep)
        if i > limit // 2:
            return cut[:i].rstrip(",") + "…"
    return cut + "…"


def first_paragraph(text: str, limit: int) -> str:
    para = text.strip().split("\n\n")[0]
    t = " ".join(para.split())
    return t if len(t) <= limit else t[: limit - 1].rstrip() + "…"


def _meta(cmd: click.Command) -> dict[str, Any]:
    return getattr(cmd.callback, "__optlog_agent__", {}) if cmd.callback else {}


def walk(group: click.Group | None = None, ctx: click.Context | None = None,
         prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every leaf command under `group` (default: the root), by path; aliases are not repeated."""
    group = group or cli
    ctx = ctx or click.Context(group, info_name="optlog")
    out: list[tuple[tuple[str, ...], click.Command]] = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None:
            continue
        if isinstance(cmd, click.Group):
            out += walk(cmd, click.Context(cmd, info_name=name, parent=ctx), prefix + (name,))
        else:
            out.append((prefix + (name,), cmd))
    return out


def skipped(cmd: click.Command) -> str | None:
    """Why a command is not a tool, or None."""
    return _meta(cmd).get("skip")


def _option_tool_name(p: click.Option) -> str:
    longs = [o for o in p.opts if o.startswith("--")] or p.opts
    opt = longs[0].lstrip("-").replace("-", "_")
    if p.name and (p.name in (opt, opt + "s") or (p.name.startswith(opt + "_") and not p.name.endswith("_"))):
        return p.name  # labels for --label, timeout_s for --timeout
    return opt


def _json_type(t: click.ParamType) -> dict[str, Any]:
    if isinstance(t, click.Choice):
        return {"type": "string", "enum": [str(c) for c in t.choices]}
    if isinstance(t, click.types.IntParamType):
        return {"type": "integer"}
    if isinstance(t, click.types.FloatParamType):
        return {"type": "number"}
    if isinstance(t, click.types.BoolParamType):
        return {"type": "boolean"}
    return {"type": "string"}


def _param(tool: str, p: click.Parameter, meta: dict[str, Any], taken: set[str]) -> Param:
    defaults = meta.get("defaults", {})
    if p.name in meta.get("json", {}):  # a JSON-valued option: the agent passes the value itself
        name = _option_tool_name(p) if isinstance(p, click.Option) else p.name
        schema = dict(meta["json"][p.name])
        return Param(name, p, schema, False, None, False, True)
    if isinstance(p, click.Argument):
        mv = p.metavar or p.name or ""
        name = _ARG_NAMES.get(mv) or (mv.strip("[]…").lower() if re.fullmatch(r"\[?[A-Z]+\]?", mv) else p.name)
        if name in taken or not name:
            name = p.name or "arg"
        desc = meta.get("args", {}).get(p.name) or _GENERIC_ARG_HELP.get(name) or _GENERIC_ARG_HELP.get(p.name or "")
        item = _json_type(p.type)
        schema = {"type": "array", "items": item} if p.nargs == -1 else dict(item)
        required = p.required and p.name not in defaults
    else:
        assert isinstance(p, click.Option)
        name = _option_tool_name(p)
        desc = p.help
        if isinstance(p.type, KeyValue):  # an object ({"config": "tp8"}); the CLI's ["config=tp8"] too
            scalar: dict[str, Any] = {"type": ["string", "number", "boolean"]}
            value = {"anyOf": [scalar, {"type": "array", "items": scalar}]} if p.type.lists else scalar
            schema = {"type": ["object", "array"], "additionalProperties": value, "items": {"type": "string"}}
        elif p.is_flag and not p.count:
            schema = {"type": "boolean"}
        else:
            item = _json_type(p.type)
            schema = {"type": "array", "items": item} if p.multiple else dict(item)
        required = bool(p.required) and p.name not in defaults
    if desc:
        schema["description"] = " ".join(desc.split())
    has = p.name in defaults
    if has:
        schema["default"] = defaults[p.name]
    elif isinstance(p, click.Option) and isinstance(p.default, (str, int, float, tuple)) \
            and p.default not in ((), False) and not isinstance(p.default, bool):
        schema["default"] = list(p.default) if isinstance(p.default, tuple) else p.default
    return Param(name, p, schema, required, defaults.get(p.name), has)


def build(path: tuple[str, ...], cmd: click.Command) -> Tool:
    meta = _meta(cmd)
    name = "_".join(path).replace("-", "_")
    params: dict[str, Param] = {}
    fields: dict[str, str] = {}
    for p in cmd.params:
        if p.name in _GLOBAL or not p.expose_value:
            continue
        tp = _param(name, p, meta, set(params))
        params[tp.name] = tp
        for spelling in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())):
            fields.setdefault(spelling, tp.name)
    doc = (cmd.help or cmd.short_help or "").strip()
    doc = doc.split("\n\n")[0] if not meta.get("long_help") else doc
    description = " ".join(doc.split())
    if meta.get("description"):
        description += "\n\n" + meta["description"]
    output = meta.get("output")
    if isinstance(output, str):
        output = SCHEMAS[output]
    return Tool(name, path, cmd, description, params, output, bool(meta.get("read_only")), fields)


def tools() -> dict[str, Tool]:
    """Every tool, by name (the commands marked `skip` are left out)."""
    return {t.name: t for t in (build(p, c) for p, c in walk() if not skipped(c))}


# ---------------------------------------------------------------- a call: JSON arguments → typed values → document


def usage(message: str, param: str | None, choices: list[str] | None = None, given: str | None = None) -> BadInput:
    extra = {}
    if choices and given is not None:
        close = close_matches(given, choices, cutoff=0.5)
        if close:
            extra["did_you_mean"] = close
            message += f" (did you mean {', '.join(repr(c) for c in close)}?)"
    return BadInput(message, field=param, code="usage", extra=extra)


# Text parameters (a title, a reason, a path, a name): a JSON number there is a mistake, not a title
# (issue 34). Parameters whose text may be a number (a run id `4`, `confidence` F, a threshold)
# still take one, as its text.
_TEXT_METAVARS = frozenset({"TEXT", "PATH", "FILE", "FILE…", "FILE|-", "NAME", "URL", "SPEC", "[SPEC]", "AGENT",
                            "LABEL", "HYP", "[HYP]", "EXECUTOR", "STUDY", "METRIC", "TITLE", "T", "P"})


def _is_text(p: Param) -> bool:
    mv = p.click.metavar
    return mv is None or mv in _TEXT_METAVARS


def _no_number(name: str, p: Param, v: Any) -> None:
    t = p.schema.get("items", {}).get("type") if p.schema.get("type") == "array" else p.schema.get("type")
    if t == "string" and _is_text(p) and not isinstance(v, str):
        raise usage(f"{name} must be a string, got {json.dumps(v)[:60]}", name)


def _scalar(name: str, v: Any, schema: dict[str, Any]) -> Any:
    """One JSON value checked against its schema: the Python value the click type would give."""
    t = schema.get("type")
    if t == "boolean":
        if not isinstance(v, bool):
            raise usage(f"{name} must be true or false, got {json.dumps(v)}", name)
        return v
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise usage(f"{name} must be a {t or 'string'}, got {json.dumps(v)[:60]}", name)
    # JSON types as the schema says (issue 34): a number is not a title, a text is not a number
    if t in ("integer", "number") and isinstance(v, str):
        raise usage(f"{name} must be a{'n' if t == 'integer' else ''} {t}, got {json.dumps(v)[:60]}", name)
    if t == "integer":
        try:
            n = int(v) if isinstance(v, float) and v.is_integer() else (v if isinstance(v, int) else int(str(v)))
        except (ValueError, OverflowError):
            raise usage(f"{name} must be an integer, got {json.dumps(v)[:60]}", name) from None
        if not -LIMITS.int_max <= n <= LIMITS.int_max:  # what the database stores (issue 42)
            raise usage(f"{name} is past the largest whole number optlog stores ({LIMITS.int_max}), got {str(n)[:40]}", name)
        return n
    if t == "number":
        try:
            x = float(v)
        except ValueError:
            raise usage(f"{name} must be a number, got {json.dumps(v)[:60]}", name) from None
        if not math.isfinite(x):  # "1e999", or 65,537 digits: JSON has no infinity
            raise usage(f"{name} must be a finite number, got {json.dumps(v)[:60]}", name)
        return x
    v = str(v)
    if "enum" in schema and v not in schema["enum"]:
        low = {e.lower(): e for e in schema["enum"]}
        if v.lower() in low:
            return low[v.lower()]
        raise usage(f"{name} must be one of {', '.join(schema['enum'])}, got {v!r}", name, schema["enum"], v)
    return v


def _text_rule(name: str, v: Any) -> None:
    """An MCP call is input like any other: every string in it passes the CLI's text rule."""
    for s in (v if isinstance(v, (list, tuple)) else [v]):
        if isinstance(s, str):
            why = TX.problem(s, multiline=True, max_chars=LIMITS.arg_chars)
            if why is not None:
                raise BadInput(why, field=name, code="bad_text")


def _value(name: str, p: Param, v: Any) -> Any:
    """A tool argument as the typed value the command's binding takes."""
    cp = p.click
    if p.json:
        return _convert(name, cp, v)
    if isinstance(cp.type, KeyValue):  # an object, or the CLI's K=V texts
        items = list(v.items()) if isinstance(v, dict) else v if isinstance(v, list) else [v]
        out = []
        for it in items:
            if isinstance(it, tuple):
                x = it[1]
                axis = cp.type.lists and isinstance(x, list) and all(
                    isinstance(e, (str, int, float, bool)) for e in x)
                if isinstance(x, dict) or (isinstance(x, list) and not axis):
                    kinds = "a string, a number or a list of them" if cp.type.lists else "a string or a number"
                    raise usage(f"{name}: the value of {it[0]!r} must be {kinds}", name)
                _text_rule(name, [it[0], *(x if axis else [x])])
                out.append(_convert(name, cp, it))
            else:
                out.append(_convert(name, cp, _scalar(name, it, {"type": "string"})))
        return tuple(out) if cp.multiple else out[-1]
    if p.schema.get("type") == "array":
        if not isinstance(v, list):
            raise usage(f"{name} must be an array, got {json.dumps(v)[:60]}", name)
        for x in v:
            _no_number(name, p, x)
        vals = [_scalar(name, x, p.schema["items"]) for x in v]
        _text_rule(name, vals)
        return tuple(_convert(name, cp, x) for x in vals)
    _no_number(name, p, v)
    x = _scalar(name, v, p.schema)
    _text_rule(name, x)
    return _convert(name, cp, x)


def _convert(name: str, cp: click.Parameter, v: Any) -> Any:
    if isinstance(cp, click.Option) and cp.is_flag:
        return v
    try:
        return cp.type.convert(v, cp, None)
    except click.BadParameter as e:
        raise usage(f"{name}: {e.format_message()}", name) from None


def arguments(tool: Tool, args: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of the tool's binding for these JSON arguments: each converted and
    checked as its click type would check the CLI's text (errors name the tool's parameters);
    what is not given takes the agent's default, else the CLI's."""
    args = dict(args or {})
    for k in args:
        if k not in tool.params:
            raise usage(f"{tool.name} has no parameter {k!r}; its parameters: {', '.join(tool.params) or 'none'}",
                        k, list(tool.params), k)
    cctx = click.Context(tool.command, info_name=tool.name)
    out: dict[str, Any] = {}
    for name, p in tool.params.items():
        v = args.get(name)
        if v is None and p.has_agent_default:
            v = p.agent_default
        assert p.click.name is not None
        if v is None:
            if p.required:
                raise usage(f"{tool.name} needs {name}", name)
            value, _source = p.click.consume_value(cctx, {})  # the CLI's default, as click makes it
            value = p.click.process_value(cctx, value)
            out[p.click.name] = None if type(value).__name__ == "Sentinel" else value  # click's UNSET: none given
            continue
        try:
            out[p.click.name] = _value(name, p, v)
        except OptlogError as e:
            e.field = tool.param_for(e.field) if e.field not in (None, name) else name
            raise
    return out


def invoke(tool: Tool, call: Call, kwargs: dict[str, Any]) -> tuple[Any, int]:
    """(document, exit code) of one call of the tool's binding."""
    binding = tool.binding
    doc = binding.fn(call, **kwargs)
    return json.loads(json.dumps(doc, default=str)), binding.exit_code(doc, kwargs)
