"""JSON schemas of the documents, for the MCP tools' output schemas: derived from each verb's return
type, a typed document (`optlog.service.documents`), so the contract is written once (`of_return`).

Not listed in `tools/list`: the 20 typed verbs' output schemas come to about 22.7 KB, and the list
(about 15.9 KB with the input schemas) is held under 16 KB, the price an agent pays before any work
(`tests/cli/test_agent_cost.py`); the structured result is the CLI's `--json` document
(docs/json.md).

Loose on purpose: they name the keys an agent relies on and allow more (`additionalProperties` is
never false), so the documents can grow (a new key is not a break). The items of lists an agent may
cut with `fields` (hypotheses, runs) require nothing. `tests/cli/test_agentface.py` checks them; `tests/architecture/test_verb_models.py` holds each
equal to the one made from its verb's return type.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

from optlog.api import documents


def schema(t: Any, *, loose: bool = False) -> dict[str, Any]:
    """The JSON schema of a type of `documents` (`loose`: no key is required, at any depth)."""
    origin = typing.get_origin(t)
    if origin in (typing.NotRequired, typing.Required):
        return schema(typing.get_args(t)[0], loose=loose)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(t)
        for m in meta:
            if isinstance(m, documents.Vocab):
                return {"enum": list(m.values)}
        return schema(base, loose=loose)
    if origin in (typing.Union, types.UnionType):
        alts = [schema(a, loose=loose) for a in typing.get_args(t)]
        if all(set(a) == {"type"} and isinstance(a["type"], str) for a in alts):
            return {"type": [a["type"] for a in alts]}
        if any("enum" in a for a in alts) and {"type": "null"} in alts:
            enum = [v for a in alts for v in a.get("enum", [])]
            return {"enum": [*enum, None]}
        return {"anyOf": alts}
    if origin is list:
        (item,) = typing.get_args(t) or (Any,)
        return {"type": "array", "items": schema(item, loose=loose)} if item is not Any else {"type": "array"}
    if origin is dict:
        return {"type": "object"}
    if t is type(None):
        return {"type": "null"}
    if t is Any:
        return {}
    if isinstance(t, type) and typing.is_typeddict(t):
        hints = typing.get_type_hints(t, include_extras=True)
        out: dict[str, Any] = {"type": "object", "properties": {k: schema(v, loose=loose) for k, v in hints.items()}}
        req = [k for k in hints if k in t.__required_keys__] if not loose else []  # type: ignore[attr-defined]
        if req:
            out["required"] = req
        return out
    return {"type": {str: "string", int: "integer", float: "number", bool: "boolean"}[t]}


def _loose_items(s: dict[str, Any]) -> dict[str, Any]:
    """`s` with the items of each of its lists loose (an agent's `fields` keeps only some keys)."""
    props = {k: ({**v, "items": {i: x for i, x in v["items"].items() if i != "required"}}
                 if v.get("type") == "array" and isinstance(v.get("items"), dict) else v)
             for k, v in s.get("properties", {}).items()}
    return {**s, "properties": props} if "properties" in s else s


def of_return(fn: Callable[..., Any], *, fields: bool = False) -> dict[str, Any] | None:
    """The output schema of a verb, from its return type: the schema of its typed document (a
    `documents` TypedDict), `anyOf` the alternatives where it returns one of several (a write's whole
    document or its acknowledgement); None where it returns a plain dict (no contract written yet).
    `fields`: the verb takes `fields`, so the items of its lists require nothing."""
    hint = typing.get_type_hints(fn).get("return")
    alts = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if not all(isinstance(a, type) and typing.is_typeddict(a) for a in alts):
        return None
    made = [schema(a) for a in alts]
    if fields:
        made = [_loose_items(m) for m in made]
    return made[0] if len(made) == 1 else {"type": "object", "anyOf": made}
