"""How a verb is declared: once, as a typed function; each face is generated from the declaration.

A verb is a function `fn(call, *, **params) -> document`. Its parameters are read from its own
signature: the annotation gives the type, `Annotated[...]` metadata gives what a face shows of it
(`Arg`/`Opt`: the CLI's spelling, help, metavar; `AgentDefault`/`AgentJson`: what an agent gets),
the signature's default is the default (none: required). So a parameter is spelt in two places,
its signature and the call into the layer below, and nothing a face needs is written twice:

- the CLI (`optlog.cli.commands`) builds each click command from a `Verb`: `int`/`float` → click
  types, `tuple[X, ...]` → repeatable, `bool` → a flag, `choices` → `click.Choice`, `Pairs`/
  `JsonText` → the K=V and JSON click types; the human text of a document is the CLI's own
  (`optlog.cli.render`): a verb returns data;
- the MCP face (`optlog.mcp.tools`) makes each verb a tool from its argument model (`model`, below:
  a pydantic model of the signature, on the MCP SDK's `ArgModelBase`), whose JSON schema is the
  tool's input schema and whose validation turns a call's JSON arguments into the typed values;
  the verb is called with the server's long-lived session;
- the TUI's actions call the verb function itself (`optlog.tui.actions`).

This module imports nothing of a face (no click, no Textual): a verb is plain typed Python, and
the catalogue (`catalogue()`) is what the faces walk.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import types
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from optlog.api import NOUNS
from optlog.api import arguments as A

if TYPE_CHECKING:
    from optlog.service.context import Ctx

REQUIRED: Any = inspect.Parameter.empty

# the exit code of a call, from its document and the typed arguments it was called with (`verdict
# --check` fails on what `verdict` alone only reports); None: 0
Exit = Callable[[Any, Mapping[str, Any]], int]


class Call:
    """What a verb gets besides its typed arguments: the face's service context (made on first
    use: `init` and `demo` never open one), the folder named by -C, whether the face has a
    narration channel (the CLI's stderr, under --json too) or only the document (the MCP face),
    and the face's dashboard, where it has one to open (`demo` ends in it on a terminal).
    `tools`: the MCP tools as the faces that have them make them (`agent tools` describes them;
    `optlog.mcp.tools` makes them from the verbs' argument models), None in a face without."""

    def __init__(self, *, chdir: str | None, ctx: Callable[[], Ctx], narrate: bool,
                 say: Callable[[str], None], tools: Callable[[], Mapping[str, Any]] | None = None,
                 dashboard: Callable[[str], bool] | None = None) -> None:
        self.chdir = chdir
        self.narrate = narrate  # progress narration is wanted (the CLI: on stderr)
        self.say = say          # one narration line (stderr on the CLI; kept out of the document)
        self.tools = tools
        # open the dashboard on a workspace folder and return True once it is closed; False where
        # the face cannot (no terminal, --json, no dashboard: the MCP face, the dashboard itself)
        self.dashboard: Callable[[str], bool] = dashboard or (lambda _workspace: False)
        self._make_ctx = ctx
        self._ctx: Ctx | None = None

    @property
    def ctx(self) -> Ctx:
        if self._ctx is None:
            self._ctx = self._make_ctx()
        return self._ctx


# ---------------------------------------------------------------- what a parameter says of itself


@dataclass(frozen=True)
class Arg:
    """A positional argument. `help` is for an agent (the CLI's usage line shows only the metavar);
    `choices`: the words it may be (`agent setup AGENT`)."""

    metavar: str | None = None
    help: str | None = None
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True, init=False)
class Opt:
    """An option: its flags (default `--name-with-dashes`; `--on/--off` for a switch), help,
    metavar, the choices of a text, whether the CLI shows the default."""

    flags: tuple[str, ...]
    help: str | None
    metavar: str | None
    show_default: bool
    choices: tuple[str, ...] | None
    case_sensitive: bool
    hidden: bool

    def __init__(self, *flags: str, help: str | None = None, metavar: str | None = None,  # noqa: A002
                 show_default: bool = False, choices: tuple[str, ...] | list[str] | None = None,
                 case_sensitive: bool = True, hidden: bool = False) -> None:
        for k, v in (("flags", tuple(flags)), ("help", help), ("metavar", metavar), ("show_default", show_default),
                     ("choices", tuple(choices) if choices is not None else None),
                     ("case_sensitive", case_sensitive), ("hidden", hidden)):
            object.__setattr__(self, k, v)


@dataclass(frozen=True)
class Pairs:
    """`K=V` pairs: text on the command line, an object's items over MCP. `lists`: a value may be a
    list (a matrix axis). Errors in a pair name the option (the face's spelling of the parameter)."""

    lists: bool = False


@dataclass(frozen=True)
class JsonText:
    """A JSON value: a text on the command line (parsed under the file guards), the value itself over
    MCP. Errors inside it name the option and the place (`--todos.0.content`)."""


@dataclass(frozen=True)
class AgentDefault:
    """The value an agent gets when it passes none (the small-by-default options)."""

    value: Any


@dataclass(frozen=True)
class AgentJson:
    """The JSON schema of a parameter an agent passes as a JSON value itself."""

    schema: dict[str, Any]


Kind = Pairs | JsonText


@dataclass(frozen=True)
class Param:
    """One verb parameter, as read from the signature."""

    name: str
    spec: Arg | Opt
    item: Any            # the Python type of one value (int, float, str, bool, or Any for a kind)
    many: bool           # tuple[X, ...]: repeatable
    default: Any         # REQUIRED when the signature gives none
    kind: Kind | None = None
    agent_default: Any = REQUIRED
    agent_json: dict[str, Any] | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Verb:
    """A declared verb: where it sits in the catalogue, its function and what the faces need."""

    path: tuple[str, ...]
    fn: Callable[..., Any]
    exit: Exit | None = None
    # a face with a text channel (the CLI without --json) does this instead: a stream (`run logs`),
    # or a step before the document (`demo`: the dashboard); it returns the exit code, or the
    # document to show where it has one
    text: Callable[..., Any] | None = None
    agent: Mapping[str, Any] = field(default_factory=dict)  # read_only, skip, description, long_help
    name: str = ""  # the click command's name when it differs from the path's last word

    @property
    def help(self) -> str:
        return inspect.getdoc(self.fn) or ""

    def params(self) -> tuple[Param, ...]:
        """The parameters, in signature order (the order the CLI's help lists them)."""
        return _params(self.fn)

    def exit_code(self, doc: Any, args: Mapping[str, Any]) -> int:
        return self.exit(doc, args) if self.exit is not None else 0


@dataclass(frozen=True)
class Group:
    """A noun: the verbs under one path prefix, with the help its command group shows.

    `parts`: verbs of the group declared in other modules (verb name → module), imported only when
    that verb is used (`run list`, a hot read, loads no launch code). `default`: the verb a first
    word that names none of the group's verbs goes to (`optlog tune SPEC` is `optlog tune run SPEC`).
    `same_as`: the group is another's under a second name (an alias the root does not list)."""

    path: tuple[str, ...]
    help: str
    agent: Mapping[str, Any] = field(default_factory=dict)
    parts: Mapping[str, str] = field(default_factory=dict)
    default: str | None = None
    same_as: tuple[str, ...] | None = None


# ---------------------------------------------------------------- the catalogue

_VERBS: dict[tuple[str, ...], Verb] = {}
_GROUPS: dict[tuple[str, ...], Group] = {}


def verb(path: str, *, exit: Exit | None = None,  # noqa: A002
         text: Callable[..., Any] | None = None, name: str = "",
         **agent: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn` as the verb at `path` ("todo add"). `exit` maps the document and typed arguments to the exit code; `agent` holds what only the MCP
    face reads (`read_only`, `skip`, `description`, `long_help`). The function is returned
    unchanged: the TUI and tests call it as it is."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = tuple(path.split())
        _VERBS[key] = Verb(key, fn, exit, text, dict(agent), name)
        fn.__optlog_verb__ = _VERBS[key]  # type: ignore[attr-defined]
        return fn

    return deco


def group(path: str, help: str, *, parts: Mapping[str, str] | None = None, default: str | None = None,  # noqa: A002
          same_as: str | None = None, **agent: Any) -> Group:
    """Declare a noun's group: `optlog todo …` (see `Group` for `parts`, `default`, `same_as`)."""
    key = tuple(path.split())
    _GROUPS[key] = Group(key, help, dict(agent), dict(parts or {}), default,
                         tuple(same_as.split()) if same_as else None)
    return _GROUPS[key]


def verbs_under(prefix: tuple[str, ...]) -> dict[tuple[str, ...], Verb]:
    """The declared verbs at or below `prefix` (its module imported), by path."""
    return {p: v for p, v in _VERBS.items() if p[: len(prefix)] == prefix}


def groups_under(prefix: tuple[str, ...]) -> dict[tuple[str, ...], Group]:
    return {p: g for p, g in _GROUPS.items() if p[: len(prefix)] == prefix}


def of(fn: Callable[..., Any]) -> Verb | None:
    """The verb a function was declared as, or None."""
    return getattr(fn, "__optlog_verb__", None)


# ---------------------------------------------------------------- reading a signature


def _params(fn: Callable[..., Any]) -> tuple[Param, ...]:
    hints = get_type_hints(fn, globalns=vars(sys.modules[fn.__module__]), include_extras=True)
    out = []
    for p in list(inspect.signature(fn).parameters.values())[1:]:  # the first is the Call
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"{fn.__qualname__}: verb parameter {p.name!r} must be keyword-only (after `*`)")
        out.append(_param(fn, p.name, hints.get(p.name, Any), p.default))
    return tuple(out)


def _param(fn: Callable[..., Any], name: str, hint: Any, default: Any) -> Param:
    meta: list[Any] = []
    while True:  # `Annotated[X, ...]`, also inside `... | None` (`Expect | None`): the outer metadata wins
        if get_origin(hint) is Annotated:
            hint, *more = get_args(hint)
            meta = [*more, *meta]
        elif get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint) \
                and any(get_origin(a) is Annotated for a in get_args(hint)):
            hint = _strip_none(hint)
        else:
            break
    spec = next((m for m in reversed(meta) if isinstance(m, (Arg, Opt))), None)
    if spec is None:
        raise TypeError(f"{fn.__qualname__}: parameter {name!r} needs Arg(...) or Opt(...) in Annotated[...]")
    kind = next((m for m in reversed(meta) if isinstance(m, (Pairs, JsonText))), None)
    ad = next((m.value for m in reversed(meta) if isinstance(m, AgentDefault)), REQUIRED)
    aj = next((m.schema for m in reversed(meta) if isinstance(m, AgentJson)), None)
    hint = _strip_none(hint)
    many = get_origin(hint) is tuple and len(get_args(hint)) == 2 and get_args(hint)[1] is Ellipsis
    item = _strip_none(get_args(hint)[0]) if many else hint
    return Param(name, spec, item, many, default, kind, ad, aj)


def _strip_none(hint: Any) -> Any:
    if get_origin(hint) in (Union, types.UnionType):
        rest = [a for a in get_args(hint) if a is not type(None)]
        return rest[0] if len(rest) == 1 else Any
    return hint


# ---------------------------------------------------------------- one argument model per verb (issue 46)

# argument metavars whose tool name reads better than the code's variable name
ARG_NAMES = {"HYP": "hypothesis", "[HYP]": "hypothesis"}


def tool_name(p: Param, taken: Collection[str] = ()) -> str:
    """What an agent calls the parameter: an option by its long flag (`--hypothesis` → `hypothesis`;
    the parameter's own name where the flag is its singular or prefix: `labels` for `--label`,
    `timeout_s` for `--timeout`), an argument by its metavar (`ID` → `id`, `HYP` → `hypothesis`)."""
    if isinstance(p.spec, Arg):
        mv = p.spec.metavar or p.name.upper()
        name = ARG_NAMES.get(mv) or (mv.strip("[]…").lower() if re.fullmatch(r"\[?[A-Z]+\]?", mv) else p.name)
        return p.name if (name in taken or not name) else name
    flags = [f.split("/")[0] for f in (p.spec.flags or ("--" + p.name.replace("_", "-"),))]
    longs = [f for f in flags if f.startswith("--")] or flags
    opt = longs[0].lstrip("-").replace("-", "_")
    if p.name in (opt, opt + "s") or (p.name.startswith(opt + "_") and not p.name.endswith("_")):
        return p.name
    return opt


def _field_type(p: Param, alias: str) -> Any:
    """The JSON-facing type of one parameter, with its checks: K=V pairs an object (or the CLI's
    texts), a JSON value what its schema says, a choice a Literal, a repeatable a list."""
    from pydantic import AfterValidator, BeforeValidator, Field, Strict, WithJsonSchema  # deferred: pydantic

    if p.agent_json is not None:  # the agent passes the value itself
        return Annotated[Any, BeforeValidator(A.json_value(alias)), WithJsonSchema(dict(p.agent_json))]
    if isinstance(p.kind, Pairs):
        scalar: dict[str, Any] = {"type": ["string", "number", "boolean"]}
        value = {"anyOf": [scalar, {"type": "array", "items": scalar}]} if p.kind.lists else scalar
        schema = {"type": ["object", "array"], "additionalProperties": value, "items": {"type": "string"}}
        return Annotated[Any, BeforeValidator(A.pairs(alias, lists=p.kind.lists, many=p.many)), WithJsonSchema(schema)]
    item: Any
    if p.spec.choices is not None:
        item = Annotated[Literal[tuple(p.spec.choices)], BeforeValidator(A.fold(p.spec.choices))]
    elif p.item is bool:
        item = Annotated[bool, Strict()]
    elif p.item is int:
        item = Annotated[int, BeforeValidator(A.integral), Strict(), AfterValidator(A.stored(alias))]
    elif p.item is float:
        item = Annotated[float, Strict(), Field(allow_inf_nan=False)]
    else:
        text = p.spec.metavar is None or p.spec.metavar in A.TEXT_METAVARS
        item = Annotated[str, Strict(), AfterValidator(A.text_rule(alias))]
        if not text:
            item = Annotated[item, BeforeValidator(A.number_as_text)]
        if isinstance(p.kind, JsonText):  # a JSON text (`--extra-body`)
            item = Annotated[item, AfterValidator(A.json_value(alias))]
    return list[item] if p.many else item


def _shown_default(p: Param) -> tuple[bool, Any]:
    """Whether an agent is shown a default for the parameter, and which: the one it gets (its
    `AgentDefault`), else an option's own when it says something (a text, a number, a non-empty
    list; not a flag's False)."""
    if p.agent_default is not REQUIRED:
        return True, p.agent_default
    d = p.default
    if isinstance(p.spec, Opt) and isinstance(d, (str, int, float, tuple)) and not isinstance(d, bool) \
            and d not in ((), False):
        return True, list(d) if isinstance(d, tuple) else d
    return False, None


def _description(p: Param, alias: str) -> str | None:
    """What an agent reads of the parameter: its help, or an argument's generic one by its name."""
    if p.agent_json is not None:  # its schema describes it
        return None
    text = p.spec.help or (A.GENERIC_ARG_HELP.get(alias) or A.GENERIC_ARG_HELP.get(p.name) if isinstance(p.spec, Arg) else None)
    return " ".join(text.split()) if text else None


_MODELS: dict[tuple[Any, ...], Any] = {}


def model(v: Verb, base: Any = None) -> Any:
    """The verb's argument model (a pydantic model made once from its signature, on `base` where a
    face gives one: the MCP face's is the MCP SDK's `ArgModelBase`, the anchor being its
    `func_metadata`): a field per parameter, aliased by its tool name, required where the signature
    gives no default and an agent gets none, described by its help, typed and checked as an agent's
    JSON value is (`optlog.api.arguments`). An MCP tool's input schema and its validation are this
    model's (`tests/architecture/test_verb_models.py` holds the tools/list equal to it)."""
    key = (v.path, base)
    if key not in _MODELS:
        from pydantic import BaseModel, ConfigDict, Field, create_model  # deferred: pydantic, only where a model is asked for

        fields: dict[str, Any] = {}
        taken: list[str] = []
        for p in v.params():
            alias = tool_name(p, taken)
            taken.append(alias)
            required = p.required and p.agent_default is REQUIRED
            default: Any = ... if required else (p.agent_default if p.agent_default is not REQUIRED
                                             else (None if p.default is REQUIRED else p.default))
            show, shown = _shown_default(p)
            extra = _schema_default(show, shown)
            fields[p.name] = (_field_type(p, alias),
                              Field(default, alias=alias, description=_description(p, alias), json_schema_extra=extra,
                                    validate_default=p.agent_default is not REQUIRED))
        name = "".join(w.title() for w in "_".join(v.path).replace("-", "_").split("_")) + "Args"
        config = ConfigDict(extra="forbid")  # by alias only: the tool names are the only names
        if base is None:
            _MODELS[key] = create_model(name, __config__=config, **fields)
        else:
            assert issubclass(base, BaseModel)
            made = type(name + "Base", (base,), {"model_config": {**base.model_config, **config}, "__module__": __name__})
            _MODELS[key] = create_model(name, __base__=made, **fields)
    return _MODELS[key]


def _schema_default(show: bool, value: Any) -> Any:
    """The field's `default` in the JSON schema: the one an agent is shown, or none."""

    def fix(schema: dict[str, Any]) -> None:
        if show:
            schema["default"] = value
        else:
            schema.pop("default", None)

    return fix


def catalogue() -> dict[tuple[str, ...], Verb]:
    """Every declared verb, by path (each noun's module imported, and the modules of its `parts`)."""
    for mod in sorted(set(NOUNS.values())):
        importlib.import_module(mod)
    seen: set[str] = set()
    while True:
        parts = {m for g in _GROUPS.values() for m in g.parts.values()} - seen
        if not parts:
            break
        for mod in sorted(parts):
            importlib.import_module(mod)
        seen |= parts
    return {p: v for name in NOUNS for p, v in verbs_under((name,)).items()}
