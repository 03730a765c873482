"""Every verb as a tool: one declaration (the verb catalogue, `optlog.api`), made into a tool here.

A tool is named by its verb's path (`run wait` → `run_wait`). Its input schema is the JSON schema
of the verb's argument model (`optlog.api.verb.model`, on the MCP SDK's `ArgModelBase`: help →
description, choices → enum, repeatable → array, `K=V` → an object), and a call's arguments are
validated by the same model (`FuncMetadata.validate_arguments`, the SDK's own path into a tool
function) into the typed values the verb takes, and the verb is called: no command line is built,
no value becomes text again. So the tool's structured result *is* the CLI's `--json` document for
the same arguments, and a new verb or parameter is a new tool or tool parameter with nothing else
to write.

What differs between the faces is declared on the verb (`optlog.api.verb`): the defaults an agent
gets when it passes nothing (`AgentDefault`: the small-by-default options), descriptions of
positional arguments (`Arg(help=...)`), JSON schemas (`AgentJson`), `read_only` and `skip`
(`@verb(...)`); the output schema is the verb's return type's (`schemas.of_return`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from optlog.api import arguments as A
from optlog.api import verb as V
from optlog.api.verb import Call
from optlog.errors import OptlogError, tool_given
from optlog.mcp.schemas import of_return

# the largest result an agent gets unless it asks for more (`detail`, `limit`, `fields`…)
MAX_RESULT_BYTES = 4096
# the largest result even when the agent asked for more (`detail`, `limit`…): cut with a note
MAX_LIFTED_BYTES = 16384


def arg_model(v: V.Verb) -> Any:
    """The verb's argument model as the MCP SDK takes a tool's (its `ArgModelBase`)."""
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase  # deferred: the MCP SDK

    return V.model(v, ArgModelBase)


def schema_of(model: Any) -> dict[str, Any]:
    """A model's JSON schema by alias, without pydantic's titles (the tool has its name)."""

    def clean(s: Any, props: bool = False) -> Any:
        if isinstance(s, dict):
            return {k: clean(x, k == "properties" and not props) for k, x in s.items() if props or k != "title"}
        if isinstance(s, list):
            return [clean(x) for x in s]
        return s

    out: dict[str, Any] = clean(model.model_json_schema(by_alias=True))
    return out


@dataclass
class Param:
    name: str                 # the tool parameter (the model field's alias)
    param: V.Param            # the verb parameter
    schema: dict[str, Any]
    required: bool
    agent_default: Any = None
    has_agent_default: bool = False
    json: bool = False  # the agent passes a JSON value itself


@dataclass
class Tool:
    name: str
    path: tuple[str, ...]
    binding: V.Verb
    model: Any
    description: str
    params: dict[str, Param]
    output_schema: dict[str, Any] | None = None
    read_only: bool = False
    field_names: dict[str, str] = field(default_factory=dict)  # a CLI flag (--label, --todos) → tool param

    def spelling(self, name: str) -> str | None:
        """The tool parameter of a verb parameter (its Python name: `fmt` → `format`), or None:
        MCP's one spelling of the parameters an error names."""
        return next((n for n, p in self.params.items() if p.param.name == name), None)

    def spell(self, err: OptlogError) -> OptlogError:
        """`err` as a tool call says it: the verb parameters it names as this tool's parameters. A
        value given inline (`todos`) is named as a file by its CLI option (`--todos`) below the
        faces: to a tool it is the parameter, which the field names, and no file."""
        err.spell(self.spelling, given=tool_given)
        if err.file is not None and err.file in self.field_names:
            err.field = err.field or self.field_names[err.file]
            err.file = None
        err.field = self.param_for(err.field)
        return err

    def param_for(self, spelling: str | None) -> str | None:
        """The tool parameter an error's `field` means where it names a flag of the CLI's (a message
        a layer below worded for both faces); other fields (`todos[1].status`) are kept."""
        if spelling is None or spelling in self.params:
            return spelling
        if spelling in self.field_names:
            return self.field_names[spelling]
        head, dot, rest = spelling.partition(".")
        if dot and head in self.field_names:
            return f"{self.field_names[head]}.{rest}"
        return spelling

    def input_schema(self) -> dict[str, Any]:
        """The whole input schema: the argument model's."""
        return schema_of(self.model)

    def listing(self) -> tuple[str, dict[str, Any]]:
        """(description, input schema) as `tools/list` gives them: `shortened(self.description,
        the model's schema)`."""
        return shortened(self.description, self.input_schema())


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


def shortened(description: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(description, input schema) as `tools/list` gives them, which an agent pays for before any
    work: it was 48 KB for 47 tools (issue 31). Every tool, its required parameters and every
    parameter's type and enum; the description's first sentence; a description for the parameters
    with a syntax of their own (EXPLAINED); a tool with many options lists the first MAX_LISTED and
    names the rest. The whole of it: the `agent_tools` tool, the CLI's --help."""
    params: dict[str, dict[str, Any]] = schema.get("properties", {})
    required = list(schema.get("required", []))
    names = [*required]
    names += [n for n in params if n not in names and n not in SHAPING][: max(0, MAX_LISTED - len(names))]
    props = {}
    for n in sorted(names, key=list(params).index):
        full = params[n]
        s = {k: v for k, v in full.items() if k not in ("description", "default")}
        kv = "additionalProperties" in s and "items" in s
        if kv:  # K=V pairs: an object (a K=V list is taken too)
            s = {"type": "object"}
        if len(s.get("enum") or ()) > MAX_ENUM:  # a long list of names (and their aliases): an error lists them
            s.pop("enum")
        if s.get("type") == "array" and isinstance(s.get("items"), dict) and "properties" in s["items"]:
            s = {**s, "items": _bare(s["items"])}
        if full.get("description") and n in EXPLAINED:
            text = full["description"]
            if kv:  # the CLI's spelling (`--a config=tp8`, repeatable) as the tool takes it
                text = re.sub(r"--[\w-]+ ([\w.]+)=([^\s,]+?)(?=[.,]?(\s|$))", r'{"\1": "\2"}',
                              text.replace(" (repeatable)", ""))
            s["description"] = first_sentence(text, LISTED_PARAM_CHARS)
        props[n] = s
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    desc = first_sentence(first_paragraph(description, 400), LISTED_TOOL_CHARS)
    rest = [n for n in params if n not in props and n not in SHAPING]
    if rest:
        desc += f" Also (agent_tools): {', '.join(rest)}."
    return desc, out


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


def tool_name(path: tuple[str, ...]) -> str:
    return "_".join(path).replace("-", "_")


def build(v: V.Verb) -> Tool:
    """The tool of one verb."""
    model = arg_model(v)
    props = schema_of(model).get("properties", {})
    params: dict[str, Param] = {}
    flags: dict[str, str] = {}
    for vp in v.params():
        f = model.model_fields[vp.name]
        alias = f.alias or vp.name
        has = vp.agent_default is not V.REQUIRED
        params[alias] = Param(alias, vp, props[alias], f.is_required(), vp.agent_default if has else None, has,
                              vp.agent_json is not None)
        if isinstance(vp.spec, V.Opt):
            for fl in vp.spec.flags or ("--" + vp.name.replace("_", "-"),):
                for one in fl.split("/"):
                    flags.setdefault(one, alias)
    doc = v.help.strip()
    doc = doc.split("\n\n")[0] if not v.agent.get("long_help") else doc
    description = " ".join(doc.split())
    if v.agent.get("description"):
        description += "\n\n" + v.agent["description"]
    output = of_return(v.fn, fields=any(p.name == "fields" for p in v.params()))
    return Tool(tool_name(v.path), v.path, v, model, description, params, output, bool(v.agent.get("read_only")),
                flags)


def tools() -> dict[str, Tool]:
    """Every tool, by name (the verbs marked `skip` are left out)."""
    made = (build(v) for v in V.catalogue().values() if not v.agent.get("skip"))
    return {t.name: t for t in sorted(made, key=lambda t: t.name)}


# ---------------------------------------------------------------- a call: JSON arguments → typed values → document


def arguments(tool: Tool, args: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of the tool's verb for these JSON arguments, validated by the verb's
    argument model (errors name the tool's parameters); what is not given (or null) takes the
    agent's default, else the verb's."""
    from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata  # deferred: the MCP SDK
    from pydantic import ValidationError  # deferred: pydantic

    given = {k: v for k, v in (args or {}).items() if v is not None}
    try:
        dumped = FuncMetadata(arg_model=tool.model).validate_arguments(given)
    except ValidationError as e:
        choices = {n: p.param.spec.choices for n, p in tool.params.items() if p.param.spec.choices}
        raise A.refusal(tool.name, e, list(tool.params), choices) from None
    return {tool.params[alias].param.name: value for alias, value in dumped.items()}


def invoke(tool: Tool, call: Call, kwargs: dict[str, Any]) -> tuple[Any, int]:
    """(document, exit code) of one call of the tool's verb."""
    doc = tool.binding.fn(call, **kwargs)
    return json.loads(json.dumps(doc, default=str)), tool.binding.exit_code(doc, kwargs)
