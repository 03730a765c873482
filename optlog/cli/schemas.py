"""JSON schemas of the main documents (DESIGN §7's shapes), for the MCP tools' output schemas.

Loose on purpose: they name the keys an agent relies on and allow more, so the CLI's documents
can grow (a new key is not a break). `tests/cli/test_agentface.py` validates real results against them.
"""

from __future__ import annotations

from typing import Any

from optlog.core.statuses import HYP_STATUSES, PRED_STATUSES, RUN_STATUSES
from optlog.core.todos import PRIORITIES, TODO_STATUSES


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


_S = {"type": "string"}
_N = {"type": ["integer", "null"]}
_PAGE = {"total": {"type": "integer"}, "offset": {"type": "integer"}, "next_offset": _N}
_PRED = _obj({"id": _S, "status": {"enum": list(PRED_STATUSES)}}, ["id", "status"])

SCHEMAS: dict[str, dict[str, Any]] = {
    "status": _obj({
        "workspace": _S,
        "hypotheses": _obj({"total": {"type": "integer"}, "open_total": {"type": "integer"},
                            "open": {"type": "array", "items": _obj({"id": _S, "status": {"enum": list(HYP_STATUSES)},
                                                                      "predictions": {"type": "array", "items": _PRED}},
                                                                     ["id", "status"])}}),
        "live_runs": {"type": "array"}, "runs_total": {"type": "integer"},
        "launches": {"type": "array", "items": _obj({"ref": _S, "status": {"enum": list(RUN_STATUSES)},
                                                      "runs": {"type": "object"}}, ["ref", "status"])},
        "verdict_due": {"type": "array", "items": _obj({"id": _S, "evidence_at": _S}, ["id"])},
        "latest_verdicts": {"type": "array"},
        "todos": {"type": "array", "items": _obj({"id": _S, "status": {"enum": list(TODO_STATUSES)}})},
        "invalidations": _obj({"total": {"type": "integer"}, "latest": {"type": "array"}}),
        "next": {"type": "array", "maxItems": 3,
                 "items": _obj({"call": _S, "arguments": {"type": "object"}, "why": _S}, ["call", "arguments"])},
    }, ["workspace", "hypotheses", "live_runs", "runs_total", "todos", "next"]),
    "hypothesis_list": _obj({"hypotheses": {"type": "array", "items": _obj({"id": _S})}, **_PAGE}, ["hypotheses"]),
    "hypothesis_show": _obj({"id": _S, "title": _S, "status": {"enum": list(HYP_STATUSES)},
                             "predictions": {"type": "array", "items": _PRED}, "verdicts": {"type": "array"}},
                            ["id", "title", "status", "predictions", "verdicts"]),
    "run_list": _obj({"runs": {"type": "array", "items": _obj({"id": {"type": "integer"}})}, **_PAGE}, ["runs"]),
    "run_wait": _obj({"status": {"enum": list(RUN_STATUSES)}, "timed_out": {"type": "boolean"}}, ["status"]),
    "verdict": _obj({"results": {"type": "array", "items": _obj({
        "hypothesis": _S, "status": {"enum": list(HYP_STATUSES)}, "changed": {"type": "boolean"},
        "predictions": {"type": "array", "items": _PRED}}, ["hypothesis", "status", "predictions"])},
        "warnings": {"type": "array"}}, ["results"]),
    "todo_list": _obj({"todos": {"type": "array", "items": _obj({
        "id": _S, "content": _S, "status": {"enum": list(TODO_STATUSES)},
        "priority": {"enum": [*PRIORITIES, None]}}, ["id", "content", "status"])}}, ["todos"]),
}
