"""How a verb is declared: once, as a typed function; each face is generated from the declaration.

A verb is a function `fn(call, *, **params) -> document`. Its parameters are read from its own
signature: the annotation gives the type, `Annotated[...]` metadata gives what a face shows of it
(`Arg`/`Opt`: the CLI's spelling, help, metavar; `AgentDefault`/`AgentJson`: what an agent gets),
the signature's default is the default (none: required). So a parameter is spelt in two places,
its signature and the call into the layer below, and nothing a face needs is written twice:

- the CLI (`optlog.cli.commands`) builds each click command from a `Verb`: `int`/`float` → click
  types, `tuple[X, ...]` → repeatable, `bool` → a flag, `choices` → `click.Choice`, `Pairs`/
  `JsonText` → the K=V and JSON click types;
- the MCP face (`optlog.cli.tools`) turns the same command into a tool, whose call converts JSON
  arguments to the typed values and calls the verb with the server's long-lived context;
- the TUI's actions call the verb function itself (`optlog.tui.actions`).

This module imports nothing of a face (no click, no Textual): a verb is plain typed Python, and
the catalogue (`optlog.api.catalogue`) is what the faces walk.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

if TYPE_CHECKING:
    from optlog.service.context import Ctx

REQUIRED: Any = inspect.Parameter.empty

# a document rendered for a person: a fixed text, a function of the document, or None (JSON)
Human = Callable[[Any], "str | None"] | str | None
# the exit code of a call, from its document and the typed arguments it was called with (`verdict
# --check` fails on what `verdict` alone only reports); None: 0
Exit = Callable[[Any, Mapping[str, Any]], int]


class Call:
    """What a verb gets besides its typed arguments: the face's service context (made on first
    use: `init` and `demo` never open one), the folder named by -C, whether the face has a
    narration channel (the CLI's stderr, under --json too) or only the document (the MCP face),
    and the face's dashboard, where it has one to open (`demo` ends in it on a terminal).
    `tools`: the MCP tools as the faces that have them make them (`agent tools` describes them;
    the table is derived from the click commands above this layer), None in a face without."""

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
    human: Human = None
    exit: Exit | None = None
    text: Callable[..., int | None] | None = None  # the CLI without --json does this instead (a stream)
    agent: Mapping[str, Any] = field(default_factory=dict)  # read_only, output, skip, description, long_help
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


def verb(path: str, human: Human = None, *, exit: Exit | None = None,  # noqa: A002
         text: Callable[..., int | None] | None = None, name: str = "",
         **agent: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn` as the verb at `path` ("todo add"). `human` renders its document for a person;
    `exit` maps the document and typed arguments to the exit code; `agent` holds what only the MCP
    face reads (`read_only`, `output`, `skip`, `description`, `long_help`). The function is returned
    unchanged: the TUI and tests call it as it is."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = tuple(path.split())
        _VERBS[key] = Verb(key, fn, human, exit, text, dict(agent), name)
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


def _field_type(p: Param) -> Any:
    """The JSON-facing type of one parameter: K=V pairs an object, a JSON value anything, a choice a
    Literal, a repeatable a list."""
    if p.agent_json is not None or isinstance(p.kind, JsonText):
        return Any
    if isinstance(p.kind, Pairs):
        return dict[str, Any]
    item: Any = p.item if p.item in (int, float, bool) else str
    if p.spec.choices is not None:
        item = Literal[tuple(p.spec.choices)]
        if isinstance(p.spec, Opt) and not p.spec.case_sensitive:  # `--effort s` is `S`
            from pydantic import BeforeValidator  # deferred: pydantic, only where a model is asked for

            fold = {c.lower(): c for c in p.spec.choices}
            item = Annotated[item, BeforeValidator(lambda x: fold.get(x.lower(), x) if isinstance(x, str) else x)]
    return list[item] if p.many else item


_MODELS: dict[tuple[str, ...], Any] = {}


def model(v: Verb) -> Any:
    """The verb's argument model (a pydantic model made once from its signature; the anchor: the MCP
    SDK's `func_metadata`): a field per parameter, aliased by its tool name, required where the
    signature gives no default and an agent gets none, described by its help. What an MCP tool's
    input schema and validation come from (`tests/architecture/test_verb_models.py` holds them equal)."""
    if v.path not in _MODELS:
        from pydantic import ConfigDict, Field, create_model  # deferred: pydantic, only where a model is asked for

        fields: dict[str, Any] = {}
        taken: list[str] = []
        for p in v.params():
            alias = tool_name(p, taken)
            taken.append(alias)
            required = p.required and p.agent_default is REQUIRED
            default = ... if required else (p.agent_default if p.agent_default is not REQUIRED
                                             else (None if p.default is REQUIRED else p.default))
            fields[p.name] = (_field_type(p), Field(default, alias=alias, description=p.spec.help))
        name = "".join(w.title() for w in "_".join(v.path).replace("-", "_").split("_")) + "Args"
        _MODELS[v.path] = create_model(name, __config__=ConfigDict(populate_by_name=True, extra="forbid"), **fields)
    return _MODELS[v.path]
