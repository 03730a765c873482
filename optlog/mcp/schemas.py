"""JSON schemas of the main documents, for the MCP tools' output schemas: derived from the typed
documents (`optlog.service.documents`), so the contract is written once.

Loose on purpose: they name the keys an agent relies on and allow more (`additionalProperties` is
never false), so the documents can grow (a new key is not a break). The items of lists an agent may
cut with `fields` (hypotheses, runs) require nothing. `tests/cli/test_agentface.py` validates real
results against them.
"""

from __future__ import annotations

import types
import typing
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


def _cut_items(s: dict[str, Any], key: str) -> dict[str, Any]:
    """`s` with the items of list `key` loose (an agent's `fields` keeps only some keys)."""
    items = s["properties"][key]["items"]
    s["properties"][key]["items"] = {k: v for k, v in items.items() if k != "required"}
    return s


SCHEMAS: dict[str, dict[str, Any]] = {
    "status": schema(documents.StatusDoc),
    "hypothesis_list": _cut_items(schema(documents.HypothesisList), "hypotheses"),
    "hypothesis_show": {"type": "object", "anyOf": [schema(documents.HypothesisBrief), schema(documents.HypothesisShow)]},
    "run_list": _cut_items(schema(documents.RunList), "runs"),
    "run_wait": schema(documents.RunWait),
    "verdict": schema(documents.VerdictDoc),
    "todo_list": schema(documents.TodoList),
}
