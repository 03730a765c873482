"""A verb parameter as a field of the verb's argument model (`optlog.api.verb.model`): its JSON type,
its description and default as an agent reads them, and the checks a JSON value gets on the way
to the typed value the verb takes (issue 46: the MCP face's schema and validation come from here,
not from click).

pydantic does the type checks (strict: a number is no title, a text no number, `true` no 1); what
is optlog's own is a validator on the field: an integral float is an integer (`2.0`), a number may
be the text of a run id (`4`), a choice is matched without case (`newest`), every string passes the
text rule (`optlog.core.text.problem`), a whole number stays within what the database stores, `K=V`
pairs become the typed pairs the verb takes (an object's items, or the CLI's `"K=V"` texts), a JSON
value gets the tree checks every file gets. Those raise the error a face shows (`BadInput`, naming
the parameter as the model's alias spells it); pydantic's own refusals are worded by `refusal`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from optlog.core import text as TX
from optlog.core.labels import check_key, parse_pair
from optlog.core.limits import LIMITS
from optlog.errors import BadInput, OptlogError, close_matches

# Text parameters (a title, a reason, a path, a name), by metavar: a JSON number there is a mistake,
# not a title (issue 34). Parameters whose text may be a number (a run id `4`, `confidence` F, a
# threshold) take one, as its text.
TEXT_METAVARS = frozenset({"TEXT", "PATH", "FILE", "FILE…", "FILE|-", "NAME", "URL", "SPEC", "[SPEC]", "AGENT",
                           "LABEL", "HYP", "[HYP]", "EXECUTOR", "STUDY", "METRIC", "TITLE", "T", "P"})
# what an argument without help of its own says to an agent, by its tool name
GENERIC_ARG_HELP = {
    "hypothesis": "The hypothesis id.",
    "spec": "A run spec: a file under runs/ (name or path).",
    "files": "Result files to import (paths in the workspace).",
    "path": "A folder (default: the server's workspace).",
    "title": "A short title.",
    "text": "The text.",
    "url": "The server's base URL, e.g. http://127.0.0.1:8000.",
}
_SCALARS = (str, int, float, bool)


def usage(message: str, field: str | None, choices: Sequence[str] | None = None, given: Any = None) -> BadInput:
    """A refused argument (exit 2, code `usage`), with the close choices where there are some."""
    extra: dict[str, Any] = {}
    if choices and isinstance(given, str):
        close = close_matches(given, list(choices), cutoff=0.5)
        if close:
            extra["did_you_mean"] = close
            message += f" (did you mean {', '.join(repr(c) for c in close)}?)"
    return BadInput(message, field=field, code="usage", extra=extra)


def shown(v: Any) -> str:
    return json.dumps(v, default=str)[:60]


def text_rule(field: str) -> Callable[[Any], Any]:
    """Every string an agent passes is input like any other: it passes the CLI's text rule."""

    def check(v: Any) -> Any:
        if isinstance(v, str):
            why = TX.problem(v, multiline=True, max_chars=LIMITS.arg_chars)
            if why is not None:
                raise BadInput(why, field=field, code="bad_text")
        return v

    return check


def integral(v: Any) -> Any:
    """`2.0` is the integer 2 (a JSON number has no kind); `2.5` stays, and is refused."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


def number_as_text(v: Any) -> Any:
    """A run id `4`, a threshold `0.5`: the text of the number."""
    return str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def stored(field: str) -> Callable[[int], int]:
    """A whole number the database can store (±(2^63 − 1), issue 42)."""

    def check(n: int) -> int:
        if not -LIMITS.int_max <= n <= LIMITS.int_max:
            raise usage(f"{field} is past the largest whole number optlog stores ({LIMITS.int_max}), "
                        f"got {str(n)[:40]}", field)
        return n

    return check


def fold(choices: Sequence[str]) -> Callable[[Any], Any]:
    low = {c.lower(): c for c in choices}
    return lambda v: low.get(v.lower(), v) if isinstance(v, str) else v


def pairs(field: str, *, lists: bool, many: bool) -> Callable[[Any], Any]:
    """`K=V` pairs as an agent passes them (an object; a list of `"K=V"` texts; one text) → the
    (K, V) pairs the verb takes, each key by the label-name rule, each value as typed."""
    kinds = "a string, a number or a list of them" if lists else "a string or a number"

    def convert(v: Any) -> Any:
        items = list(v.items()) if isinstance(v, dict) else v if isinstance(v, list) else [v]
        out: list[tuple[str, Any]] = []
        for it in items:
            if isinstance(it, tuple):
                key, x = it
                axis = lists and isinstance(x, list) and all(isinstance(e, _SCALARS) for e in x)
                if isinstance(x, dict) or (isinstance(x, list) and not axis):
                    raise usage(f"{field}: the value of {key!r} must be {kinds}", field)
                for s in (key, *(x if axis else [x])):
                    text_rule(field)(s)
                out.append((check_key(str(key), field), x))
            else:
                if isinstance(it, bool) or not isinstance(it, (str, int, float)):
                    raise usage(f"{field} must be a string, got {shown(it)}", field)
                out.append(parse_pair(str(it), field))
        return tuple(out) if many else out[-1]

    return convert


def json_value(field: str) -> Callable[[Any], Any]:
    """A JSON value: a text holding one (parsed under the guards every file has: size, depth, the
    text rule), or the value itself (the same tree checks). Errors name the place inside it
    (`todos.0.content`)."""

    def convert(v: Any) -> Any:
        try:
            if isinstance(v, str):
                from optlog.yamlio import parse_json  # deferred: optlog.yamlio loads PyYAML

                return parse_json(v, field)
            TX.check_tree(v, field, None)
            return v
        except BadInput as e:  # the parameter is the place, not a file
            e.field, e.file = f"{field}.{e.field}" if e.field else field, None
            raise

    return convert


# ---------------------------------------------------------------- pydantic's refusals, said as optlog says them


def refusal(tool: str, err: Any, aliases: Sequence[str], choices: Mapping[str, Sequence[str]]) -> OptlogError:
    """The first of a pydantic `ValidationError`'s errors as the error document an agent gets: an
    unknown parameter first, then the parameters in their order; `field` the parameter's alias."""
    errors = sorted(err.errors(), key=lambda e: e["type"] != "extra_forbidden")
    e = errors[0]
    loc = e.get("loc") or ()
    name = str(loc[0]) if loc else None
    kind, given = e["type"], e.get("input")
    if kind == "extra_forbidden":
        return usage(f"{tool} has no parameter {name!r}; its parameters: {', '.join(aliases) or 'none'}",
                     name, list(aliases), name)
    if kind == "missing":
        return usage(f"{tool} needs {name}", name)
    words = {"string_type": "a string", "int_type": "an integer", "int_from_float": "an integer",
             "int_parsing": "an integer", "float_type": "a number", "float_parsing": "a number",
             "finite_number": "a finite number", "bool_type": "true or false", "list_type": "an array"}
    if kind in words:
        return usage(f"{name} must be {words[kind]}, got {shown(given)}", name)
    if kind == "literal_error" and name is not None and name in choices:
        got = repr(given) if isinstance(given, str) else shown(given)
        return usage(f"{name} must be one of {', '.join(choices[name])}, got {got}", name, choices[name], given)
    return usage(f"{name}: {e.get('msg', 'not a valid value')}", name)
