"""Run specs (`runs/*.yaml`): typed models, loading with file/line/field errors, sweep planning and
rendering of each point's commands.

Contract (DESIGN.md §6): name, executor, params, matrix, include, repeats, server (cmd, env, ready,
check, stop), bench (cmd, parser, env, timeout_s), labels, telemetry, timeouts, on_error.

Everything here is checked before anything is written: `load_spec` validates the shape, `plan`
expands the points and renders every command of every point once with stand-in values, so an
unknown placeholder is reported with the spec's file, line and field and exit code 2.
"""

from __future__ import annotations

import json
import math
import re
import signal as _signal
from collections import ChainMap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from optlog import settings
from optlog.core import labels as L
from optlog.core import template as T
from optlog.core.expr import ExprError, parse_where, where_labels
from optlog.core.limits import LIMITS
from optlog.core.numfmt import fmt_count
from optlog.core.sweep import expand
from optlog.core.text import check, problem
from optlog.core.tune import SearchParam, active_params
from optlog.errors import BadInput, param
from optlog.runs import order as O, record, sets as S
from optlog.runs.executors import registry as executor_registry
from optlog.runs.parsers import canonical_format
from optlog.runs.sets import SPEC_KEYS
from optlog.yamlio import flow, line_of, parse_text, read_text, scalar_text, validate

# set by optlog for each point, or (`env`) the environment a template reads as `{{ env.NAME }}`
RESERVED = ("out", "repeat", "run_id", "launch_id", "server_url", "name", "tune_worker", T.ENV)
Scalar = Union[bool, int, float, str]
Cmd = Union[str, list[Union[str, int, float]]]


class _S(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _check_cmd(v: Any) -> Any:
    if isinstance(v, str) and not v.strip():
        raise ValueError("empty command")
    if isinstance(v, list) and not v:
        raise ValueError("empty command")
    if isinstance(v, str):
        try:
            T.split(v)
        except T.TemplateError as e:
            raise ValueError(str(e)) from None
    return v


def _check_regex(v: str | None) -> str | None:
    if v is not None:
        try:
            re.compile(v)
        except re.error as e:
            raise ValueError(f"not a valid regular expression: {e}") from None
    return v


class Ready(_S):
    url: str | None = None
    log_regex: str | None = None
    timeout_s: float | None = Field(default=None, gt=0)
    interval_s: float = Field(default=0.5, gt=0, le=60)

    _rx = field_validator("log_regex")(classmethod(lambda cls, v: _check_regex(v)))

    @model_validator(mode="after")
    def _one(self) -> "Ready":
        if not self.url and not self.log_regex:
            raise ValueError("ready needs `url` (polled until HTTP 200) or `log_regex` (a line of the server's log)")
        return self


class Check(_S):
    prompts: list[str] = Field(min_length=1)
    expect_regex: str
    api: Literal["completions", "chat"] = "completions"
    max_tokens: int = Field(default=16, ge=1, le=4096)
    model: str | None = None
    url: str | None = None  # base URL; default: --server-url or the scheme://host:port of ready.url
    timeout_s: float | None = Field(default=None, gt=0)

    _rx = field_validator("expect_regex")(classmethod(lambda cls, v: _check_regex(v)))


class Stop(_S):
    cmd: Cmd | None = None
    signal: str = "SIGTERM"
    timeout_s: float | None = Field(default=None, gt=0)

    _cmd = field_validator("cmd")(classmethod(lambda cls, v: _check_cmd(v) if v is not None else v))

    @field_validator("signal")
    @classmethod
    def _sig(cls, v: str) -> str:
        name = v.upper() if v.upper().startswith("SIG") else "SIG" + v.upper()
        if not isinstance(getattr(_signal, name, None), _signal.Signals):
            raise ValueError(f"unknown signal {v!r} (e.g. SIGTERM, SIGINT)")
        return name


class ServerSpec(_S):
    cmd: Cmd
    env: dict[str, Scalar] = Field(default_factory=dict)
    cwd: str | None = None
    ready: Ready | None = None
    check: Check | None = None
    stop: Stop | None = None

    _cmd = field_validator("cmd")(classmethod(lambda cls, v: _check_cmd(v)))


class BenchSpec(_S):
    cmd: Cmd
    parser: str | None = "json"
    env: dict[str, Scalar] = Field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float | None = Field(default=None, gt=0)
    key_map: dict[str, str] | None = None
    results: list[str] | None = None  # globs under {{ out }}; default every file but the bench's own logs

    _cmd = field_validator("cmd")(classmethod(lambda cls, v: _check_cmd(v)))

    @field_validator("results")
    @classmethod
    def _results(cls, v: list[str] | None) -> list[str] | None:
        """Globs relative to the run's output folder, which they cannot leave: an absolute path, `~`
        or a `..` part would read another file as the result (Path.glob also refuses an absolute
        pattern, but only at run time, after the bench ran)."""
        for g in v or ():
            parts = g.replace("\\", "/").split("/")
            if not g.strip() or g.startswith(("/", "~")) or ".." in parts:
                raise ValueError(f"{g!r} is not under the run's output folder: give a glob relative to it "
                                 "({{ out }}), such as result.json or *.jsonl")
        return v


class Timeouts(_S):
    ready_s: float = Field(default=1800, gt=0)
    check_s: float = Field(default=60, gt=0)
    bench_s: float | None = Field(default=None, gt=0)
    stop_s: float = Field(default=30, gt=0)


class SearchParamSpec(_S):
    """One dimension of `search:` (optlog tune): `low`/`high` (ints: an integer range; `log: true`
    for a log scale; `step`), or `choices`, and optionally `when: "parallel > 1"` over the
    parameters listed before it."""

    low: Union[int, float, None] = None
    high: Union[int, float, None] = None
    log: bool = False
    step: Union[int, float, None] = Field(default=None, gt=0)
    choices: list[Scalar] | None = Field(default=None, min_length=1)
    type: Literal["int", "float"] | None = None
    when: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> "SearchParamSpec":
        rng = self.low is not None or self.high is not None
        if self.choices is not None:
            if rng or self.log or self.step is not None or self.type is not None:
                raise ValueError("give either `choices` or a range (`low`, `high`, `log`, `step`), not both")
            return self
        if self.low is None or self.high is None:
            raise ValueError("a search parameter is a range (`low` and `high`) or a list of `choices`")
        for v in (self.low, self.high):
            if isinstance(v, bool):
                raise ValueError("`low` and `high` are numbers")
        if self.low > self.high:
            raise ValueError(f"empty range: low {self.low} > high {self.high}")
        if self.log and self.low <= 0:
            raise ValueError(f"a log scale needs low > 0 (got {self.low})")
        if self.log and self.step is not None:
            raise ValueError("`log` and `step` cannot be combined (Optuna samples one or the other)")
        if self.kind == "int":
            for k in ("low", "high", "step"):
                v = getattr(self, k)
                if v is not None and float(v) != int(v):
                    raise ValueError(f"an integer range needs an integer `{k}` (got {v})")
        return self

    @property
    def kind(self) -> str:
        if self.choices is not None:
            return "choice"
        if self.type is not None:
            return self.type
        ints = all(isinstance(v, int) for v in (self.low, self.high) if v is not None)
        return "int" if ints and (self.step is None or isinstance(self.step, int)) else "float"

    @field_validator("when")
    @classmethod
    def _when(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_where(v)
            except ExprError as e:
                raise ValueError(f"bad condition: {e.pretty()}") from None
        return v


class RunSpec(_S):
    name: str | None = None
    description: str | None = None
    executor: Any = "local"
    params: dict[str, Any] = Field(default_factory=dict)
    matrix: dict[str, list[Scalar]] = Field(default_factory=dict)
    include: list[dict[str, Scalar]] = Field(default_factory=list)
    search: dict[str, SearchParamSpec] = Field(default_factory=dict)  # optlog tune (docs/tune.md)
    repeats: int = Field(default=1, ge=1, le=1000)
    server: ServerSpec | None = None
    bench: BenchSpec
    labels: dict[str, Scalar] = Field(default_factory=dict)
    telemetry: Union[bool, dict[str, Any], None] = None
    timeouts: Timeouts = Field(default_factory=Timeouts)
    on_error: Literal["continue", "stop"] = "continue"
    order: O.Order | None = None  # runs.order; None: interleaved
    order_seed: int | None = None
    # more names whose values are credentials (params, env variables, flags): redacted like HF_TOKEN
    secret: list[str] = Field(default_factory=list, max_length=100)

    @field_validator("executor")
    @classmethod
    def _executor(cls, v: Any) -> Any:
        return executor_registry.parse(v)  # each kind's target syntax (optlog.runs.executors)

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"matrix axis {k!r} has no values")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("empty name")
        return v


# ----------------------------------------------------------------------------- loading


@dataclass
class LoadedSpec:
    spec: RunSpec
    file: str  # as shown in errors (relative to the workspace when inside it)
    path: Path
    text: str
    data: dict[str, Any]

    def bad(self, message: str, *loc: Any, code: str = "invalid_field") -> BadInput:
        fld = ".".join(str(p) for p in loc) or None
        return BadInput(message, file=self.file, line=line_of(self.text, tuple(loc)) if loc else None, field=fld, code=code)

    @property
    def name(self) -> str:
        return self.spec.name or self.path.stem


def load_spec(path: Path, shown: str | None = None) -> LoadedSpec:
    shown = shown or str(path)
    if not path.is_file():
        raise BadInput(f"no such run spec: {shown}", field="spec", code="not_found")

    text = read_text(path, shown)
    data = parse_text(text, shown)
    if not isinstance(data, dict):
        raise BadInput("a run spec is a mapping (name, params, matrix, server, bench, …)", file=shown, line=1)
    _check_values(data, text, shown)
    spec = validate(RunSpec, data, text, shown)
    ls = LoadedSpec(spec, shown, path, text, data)
    _check_keys(ls)
    return ls


def _reserved(k: str) -> str:
    if k == T.ENV:
        return f"{k!r} is reserved: templates read the environment as {{{{ env.NAME }}}}; name the value differently"
    return f"{k!r} is reserved (set by optlog for each point)"


def _check_keys(ls: LoadedSpec) -> None:
    s = ls.spec
    for k, v in s.labels.items():
        why = problem(v, multiline=False) if isinstance(v, str) else None
        if why is not None:
            raise ls.bad(f"a label value is one line: {why}", "labels", k, code="bad_text")
    if s.bench.parser is not None:
        try:
            canonical_format(s.bench.parser)
        except BadInput as e:
            raise ls.bad(e.message.replace("result format", "parser"), "bench", "parser", code="unknown_parser") from None
    for where, keys in (("params", s.params), ("matrix", s.matrix), ("labels", s.labels)):
        for k in keys:
            if not L.KEY_RE.match(k):
                raise ls.bad(f"bad name {k!r}: use letters, digits, '_', '.', '-'", where, k)
            if k in RESERVED and where != "labels":
                raise ls.bad(_reserved(k), where, k)
            if k in SPEC_KEYS and where != "labels":
                raise ls.bad(f"{k!r} is a spec field (`{param('sets')} {k}=…` sets it); name the value differently", where, k)
    _check_search(ls)
    for i, inc in enumerate(s.include):
        for k in inc:
            if not L.KEY_RE.match(k):
                raise ls.bad(f"bad name {k!r}: use letters, digits, '_', '.', '-'", "include", i, k)
            if k in RESERVED or k in SPEC_KEYS:
                raise ls.bad(_reserved(k) if k in RESERVED else
                             f"{k!r} is a spec field (`{param('sets')} {k}=…` sets it); name the value differently",
                             "include", i, k)
            if k in s.matrix:
                raise ls.bad(f"{k!r} is both a matrix axis and an include key; include entries are crossed "
                             "with the matrix, so a key belongs to one of them", "include", i, k)


def _check_values(data: dict[str, Any], text: str, shown: str) -> None:
    """Matrix, include and label values label their runs: each is checked as a label value is
    (`core/labels.check_value`: no number past the largest double), by the text the file writes
    it as (YAML reads `1.0e+400` as inf), with the file, line and field, before the spec's shape
    is validated (whose refusal of an inf would name no number) (issue 42)."""
    def items(v: Any) -> Iterable[tuple[Any, Any]]:
        return v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()

    places: list[tuple[tuple[Any, ...], str, Any]] = [
        (("matrix", k, i), "matrix axis", x) for k, vals in items(data.get("matrix")) for i, x in items(vals)]
    places += [(("include", i, k), "include", x) for i, inc in items(data.get("include")) for k, x in items(inc)]
    places += [(("labels", k), "label", x) for k, x in items(data.get("labels"))]
    for loc, what, v in places:
        if isinstance(v, float) and math.isinf(v):
            v = scalar_text(text, loc) or v
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            try:
                L.check_value(str(loc[1] if loc[0] == "matrix" else loc[-1]), v, what=what)
            except BadInput as e:
                raise BadInput(e.message, file=shown, line=line_of(text, loc), field=".".join(map(str, loc)),
                               code="out_of_range") from None


def _check_search(ls: LoadedSpec) -> None:
    """`search:` names a value some template uses, comes without matrix/include (each trial is one
    point), and a `when:` speaks of parameters listed before it and has a default in `params:`."""
    s = ls.spec
    if not s.search:
        return
    if s.matrix or s.include:
        raise ls.bad("a spec with `search:` has no `matrix:` or `include:`: each trial of optlog tune is one "
                     "point (put fixed values in `params:`)", "matrix" if s.matrix else "include")
    used = record.used_names(ls.data) | record.label_names(ls.data)
    seen: list[str] = []
    for k, p in s.search.items():
        if not L.KEY_RE.match(k):
            raise ls.bad(f"bad name {k!r}: use letters, digits, '_', '.', '-'", "search", k)
        if k in RESERVED or k in SPEC_KEYS:
            raise ls.bad(_reserved(k), "search", k)
        if k not in used:
            raise ls.bad(f"no template uses {{{{ {k} }}}}: searching it would change nothing", "search", k,
                         code="unused")
        if p.when is not None:
            names = where_labels(parse_where(p.when))
            for n in names:
                if n not in seen:
                    raise ls.bad(f"`when` may name only the search parameters listed before {k!r} "
                                 f"({', '.join(seen) or 'none'}); {n!r} is not one", "search", k, "when")
            if k not in s.params:
                raise ls.bad(f"{k!r} has a `when:`; give params.{k}, the value the templates get when the "
                             "condition is false", "search", k, "when")
        seen.append(k)


def search_space(ls: LoadedSpec) -> list[Any]:
    """The spec's `search:` as `core.tune.SearchParam`s, in the spec's order."""
    out = []
    for k, p in ls.spec.search.items():
        kind = p.kind
        out.append(SearchParam(
            name=k, kind=kind,
            low=None if p.low is None else (int(p.low) if kind == "int" else float(p.low)),
            high=None if p.high is None else (int(p.high) if kind == "int" else float(p.high)),
            log=p.log, step=None if p.step is None else (int(p.step) if kind == "int" else float(p.step)),
            choices=tuple(p.choices or ()), when=parse_where(p.when) if p.when else None, when_text=p.when))
    return out


# ----------------------------------------------------------------------------- planning


SetPairs = Sequence[Sequence[Any]]
"""`--set` as (K, V) pairs: the CLI's texts split by its click type, an MCP call's object items, or
[K, V] lists back from JSON (a tune worker's arguments). V is text or already typed."""


def typed_sets(pairs: SetPairs) -> dict[str, Any]:
    """The values `--set` gives the templates (a later key wins). A text V is read as the command
    line always read it: an int, a float, a `[a, b]` list for a matrix axis, else the text. A typed
    V (an MCP call's number or boolean, or a JSON list for a matrix axis) is taken as it is once
    checked, so `{"matrix.concurrency": [1, 2]}` is the axis that `matrix.concurrency=[1,2]` is."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        k = L.check_key(str(k), "sets")
        if k in RESERVED:
            raise BadInput(_reserved(k), field="sets")
        out[k] = _set_value(k, v)
    return out


def _set_value(k: str, v: Any) -> Any:
    if isinstance(v, str):  # a number past the largest double is refused as a label's is (issue 42)
        return _typed(k, L.check_value(k, check(v.strip(), "sets", multiline=False), "sets", what=param("sets")))
    if isinstance(v, bool):
        return L.canonical(v)  # as the command line's `true` reaches a template
    if isinstance(v, (int, float)) and math.isfinite(v):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(x, (int, float, str)) and _finite(x) for x in v):
        # the items as the CLI's `[a, b]` gives them (YAML-typed: `[1, "1"]` stays that)
        return [L.check_value(k, check(x, "sets", multiline=False), "sets", what=param("sets")) if isinstance(x, str)
                else x for x in v]
    raise BadInput(f"{param('sets')} {k}: a text, a finite number or a list of them (a matrix axis), got {json.dumps(v, default=str)[:80]}",
                   field="sets")


def _finite(x: Any) -> bool:
    return not isinstance(x, float) or math.isfinite(x)


def set_texts(pairs: SetPairs) -> list[str]:
    """The pairs as the command line spells them, `K=V` (a typed V as the text that `typed_sets`
    reads back as the same value): the `sets` of a launch's committed record, a remote worker's `--set`."""
    return [f"{k}={v if isinstance(v, str) else flow(list(v)) if isinstance(v, (list, tuple)) else json.dumps(v)}"
            for k, v in pairs]


def record_sets(texts: Iterable[Any]) -> list[tuple[str, str]]:
    """The `sets` of a committed launch record (`set_texts`) as pairs again."""
    return [(k, v) for k, eq, v in (str(t).partition("=") for t in texts) if eq]


def _typed(k: str, v: str) -> Any:
    s = v.strip()
    if s.startswith("[") and s.endswith("]"):
        try:
            val = parse_text(s, "sets")
        except BadInput:
            return v
        if isinstance(val, list) and all(isinstance(x, (int, float, str, bool)) for x in val):
            for i in range(len(val)):  # each item by the text it is written as (`1.0e+400` reads as inf)
                L.check_value(k, scalar_text(s, (i,)) or val[i], "sets", what=param("sets"))
            return val
        return v
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    return v


@dataclass
class Point:
    """One run to make: the template values, its labels, the repeat index."""

    values: dict[str, Any]
    labels: dict[str, Any]
    repeat: int
    server_key: str = ""
    rendered: dict[str, Any] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)  # what it names beyond its labels (runs.record)
    order: dict[str, Any] = field(default_factory=dict)  # how the launch's points were ordered (runs.order)
    on_error: str = "continue"


def plan(ls: LoadedSpec, sets: dict[str, Any], server_url: str | None = None, *,
         trial: dict[str, Any] | None = None, worker: int = 0) -> list[Point]:
    """Expand matrix × include × repeats, apply `--set`, render everything once (so bad templates are
    reported before anything is written), and order the points to minimise server restarts.

    A spec with `search:` plans one trial: `trial` (the parameters optlog tune chose; None: the low
    end of every range, to check the templates) becomes a one-point matrix, so its values are the
    runs' labels; `worker` is `{{ tune_worker }}` (a port per local worker)."""
    s = ls.spec
    applied = S.apply(sets, params=s.params, matrix=s.matrix, include=s.include,
                      used=record.used_names(ls.data) | record.label_names(ls.data))
    params, matrix, include = applied.params, applied.matrix, applied.include
    if s.search:
        chosen = trial if trial is not None else active_params(search_space(ls), lambda p: p.first)
        params = {**params, "tune_worker": worker}
        matrix = {**matrix, **{k: [v] for k, v in chosen.items()}}
        for k in chosen:
            params.pop(k, None)
    repeats = applied.spec.get("repeats", s.repeats)
    _check_size(ls, matrix, include, repeats)
    # a value `--set` gave a template is what this launch varied: a label, so that launches of one
    # spec with `--set itl=5` and `--set itl=10` are told apart and `compare --by itl` reads them
    varied = {k: params[k] for k in sets if k in params and k not in S.SPEC_KEYS and not k.startswith("matrix.")
              and isinstance(params[k], (int, float, str)) and not isinstance(params[k], bool)}
    points: list[Point] = []
    for vals in expand(matrix, include):
        for r in range(repeats):
            values = {**params, **vals, "repeat": r, "name": ls.name}
            labels = {**varied, **vals}
            for k, v in s.labels.items():
                labels[k] = _render(ls, ("labels", k), v, values) if isinstance(v, str) else v
            labels["repeat"] = r
            points.append(Point(values=values, labels=labels, repeat=r))
    record.annotate(ls.data, points)
    for p in points:
        p.rendered = render_point(ls, p.values, launch_dir="/nonexistent/launch", out="/nonexistent/out",
                                  server_url=server_url, run_id=0, launch_id=0)
        p.server_key = json.dumps(p.rendered.get("server"), sort_keys=True)
    ordered, how = O.arrange(points, applied.spec.get("order", s.order), applied.spec.get("order_seed", s.order_seed),
                             server=lambda p: p.server_key, repeat=lambda p: p.repeat)
    for p in ordered:
        p.order = how
        p.on_error = applied.spec.get("on_error", s.on_error)
    return ordered


def _check_size(ls: LoadedSpec, matrix: dict[str, list[Any]], include: list[dict[str, Any]], repeats: int) -> None:
    """Count the points before making any: a few short lines of YAML can ask for millions."""
    n = repeats * max(1, len(include))
    for k, vals in matrix.items():
        n *= len(vals)
        if n > LIMITS.matrix_points:
            break
    if n > LIMITS.matrix_points:
        sizes = " × ".join(f"{k}: {len(v)}" for k, v in matrix.items())
        extra = (f" × {len(include)} include" if include else "") + (f" × {repeats} repeats" if repeats > 1 else "")
        raise ls.bad(f"the sweep has more than {fmt_count(LIMITS.matrix_points)} points ({sizes}{extra}); split it into "
                     f"several specs or use {param('sets')} to narrow an axis", "matrix" if matrix else "include",
                     code="too_large")


def _with_env(values: dict[str, Any]) -> Mapping[str, Any]:
    """The values and, under `env`, the environment where optlog runs (`{{ env.NAME }}`)."""
    return ChainMap(values, {T.ENV: settings.environ()})


def _render(ls: LoadedSpec, loc: tuple[Any, ...], text: Any, values: dict[str, Any]) -> str:
    try:
        return T.render(str(text), _with_env(values))
    except T.TemplateError as e:
        raise ls.bad(str(e), *loc, code="bad_placeholder") from None


def _argv(ls: LoadedSpec, loc: tuple[Any, ...], cmd: Any, values: dict[str, Any]) -> list[str]:
    try:
        return T.render_argv(cmd, _with_env(values))
    except T.TemplateError as e:
        raise ls.bad(str(e), *loc, code="bad_placeholder") from None


def _env(ls: LoadedSpec, loc: tuple[Any, ...], env: dict[str, Any], values: dict[str, Any]) -> dict[str, str]:
    return {k: _render(ls, (*loc, k), T.to_text(v), values) for k, v in env.items()}


def base_url(url: str | None) -> str | None:
    if not url:
        return None
    u = urlparse(url)
    if not u.scheme or not u.netloc:
        return None
    return f"{u.scheme}://{u.netloc}"


def render_point(ls: LoadedSpec, values: dict[str, Any], *, launch_dir: str, out: str, server_url: str | None,
                 run_id: int, launch_id: int) -> dict[str, Any]:
    """Every command, environment and URL of one point, rendered (plain data, JSON-able)."""
    s = ls.spec
    t = s.timeouts
    v = {**values, "launch_id": launch_id, "server_url": server_url or ""}
    out_d: dict[str, Any] = {"server": None}
    if s.server is not None:
        sv = {**v, "out": launch_dir}
        srv = s.server
        ready: dict[str, Any] | None = None
        if srv.ready is not None:
            ready = {
                "url": _render(ls, ("server", "ready", "url"), srv.ready.url, sv) if srv.ready.url else None,
                "log_regex": srv.ready.log_regex,
                "timeout_s": srv.ready.timeout_s or t.ready_s,
                "interval_s": srv.ready.interval_s,
            }
        derived = server_url or base_url(ready["url"] if ready else None)
        sv["server_url"] = derived or ""
        v["server_url"] = derived or ""
        check = None
        if srv.check is not None:
            c = srv.check
            check = {
                "prompts": [_render(ls, ("server", "check", "prompts", i), p, sv) for i, p in enumerate(c.prompts)],
                "expect_regex": c.expect_regex,
                "api": c.api,
                "max_tokens": c.max_tokens,
                "model": _render(ls, ("server", "check", "model"), c.model, sv) if c.model else None,
                "url": (_render(ls, ("server", "check", "url"), c.url, sv) if c.url else None) or derived,
                "timeout_s": c.timeout_s or t.check_s,
            }
            if not check["url"]:
                raise ls.bad(f"the check needs the server's URL: give `check.url`, a `ready.url`, or {param('server_url')}",
                             "server", "check")
        stop = None
        if srv.stop is not None:
            stop = {
                "argv": _argv(ls, ("server", "stop", "cmd"), srv.stop.cmd, sv) if srv.stop.cmd is not None else None,
                "signal": srv.stop.signal,
                "timeout_s": srv.stop.timeout_s or t.stop_s,
            }
        out_d["server"] = {
            "argv": _argv(ls, ("server", "cmd"), srv.cmd, sv),
            "env": _env(ls, ("server", "env"), srv.env, sv),
            "cwd": _render(ls, ("server", "cwd"), srv.cwd, sv) if srv.cwd else None,
            "ready": ready,
            "check": check,
            "stop": stop or {"argv": None, "signal": "SIGTERM", "timeout_s": t.stop_s},
        }
    bv = {**v, "out": out, "run_id": run_id}
    b = s.bench
    out_d["bench"] = {
        "argv": _argv(ls, ("bench", "cmd"), b.cmd, bv),
        "env": _env(ls, ("bench", "env"), b.env, bv),
        "cwd": _render(ls, ("bench", "cwd"), b.cwd, bv) if b.cwd else None,
        "timeout_s": b.timeout_s or t.bench_s,
        "parser": b.parser,
        "key_map": b.key_map,
        "results": b.results,
    }
    out_d["server_url"] = v["server_url"] or None
    tel = s.telemetry
    if isinstance(tel, dict):
        out_d["telemetry"] = {k: (_render(ls, ("telemetry", k), x, v) if isinstance(x, str) else x) for k, x in tel.items()}
    else:
        out_d["telemetry"] = tel
    return out_d


def resolve_cwd(root: Path, cwd: str | None) -> Path:
    """A spec's cwd: relative to the workspace root (wherever optlog was started), default the root."""
    if not cwd:
        return root
    p = Path(cwd)
    return p if p.is_absolute() else root / p
