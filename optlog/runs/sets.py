"""What `--set K=V` may change in a run spec, so that nothing the user typed is silently ignored.

`--set thread=4` (a typo of `threads`) used to run the full sweep, and `--set repeats=5` left the
repeats at 3. A key is accepted when it is:

- a value some template uses (server, bench, telemetry or labels), a matrix axis or an include key
  (a list `[a, b]` for a matrix axis sets its values);
- `matrix.K=[a, b]`: the values of axis K (a new axis if a template uses K);
- a spec-level field: `repeats` (an integer ≥ 1), `order` and `order_seed` (see runs.order),
  `on_error` (continue or stop).

Anything else is exit 2 with a did-you-mean (difflib) over the keys that exist.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from optlog.errors import BadInput, param
from optlog.runs.order import ORDERS

SPEC_KEYS = ("repeats", "order", "order_seed", "on_error")
"""Spec-level fields `--set` can change; a params/matrix/include key may not take these names."""
FIXED_FIELDS = ("name", "description", "executor", "params", "include", "server", "bench", "labels",
                "telemetry", "timeouts", "secret")


@dataclass
class Applied:
    params: dict[str, Any]
    matrix: dict[str, list[Any]]
    include: list[dict[str, Any]]
    spec: dict[str, Any]  # spec-level overrides (repeats, order, …)


def _refuse(key: str, message: str, known: set[str]) -> BadInput:
    close = difflib.get_close_matches(key, sorted(known), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return BadInput(f"{param('sets')} {key}: {message}{hint}", field="sets", code="unknown_key")


def _spec_value(key: str, v: Any) -> Any:
    if key == "repeats":
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1000:
            raise BadInput(f"{param('sets')} repeats: an integer from 1 to 1000, got {v!r}", field="sets")
        return v
    if key == "order_seed":
        if isinstance(v, bool) or not isinstance(v, int):
            raise BadInput(f"{param('sets')} order_seed: an integer, got {v!r}", field="sets")
        return v
    if key == "order":
        if v not in ORDERS:
            raise BadInput(f"{param('sets')} order: one of {', '.join(ORDERS)}, got {v!r}", field="sets")
        return v
    if v not in ("continue", "stop"):
        raise BadInput(f"{param('sets')} on_error: continue or stop, got {v!r}", field="sets")
    return v


def apply(sets: dict[str, Any], *, params: dict[str, Any], matrix: dict[str, list[Any]],
          include: list[dict[str, Any]], used: set[str]) -> Applied:
    """Apply `--set` to the spec's values; `used`: every placeholder name the templates use."""
    params, matrix, include = dict(params), {k: list(v) for k, v in matrix.items()}, [dict(i) for i in include]
    inc_keys = {k for i in include for k in i}
    known = used | set(matrix) | inc_keys
    spec: dict[str, Any] = {}
    for k, v in sets.items():
        if k in SPEC_KEYS:
            spec[k] = _spec_value(k, v)
        elif k.startswith("matrix."):
            axis = k[len("matrix."):]
            if axis not in matrix and axis not in used:
                raise _refuse(k, f"{axis!r} is not a matrix axis and no template uses it",
                              {f"matrix.{a}" for a in matrix | dict.fromkeys(used)})
            matrix[axis] = list(v) if isinstance(v, list) else [v]
            params.pop(axis, None)
        elif k in matrix:
            matrix[k] = list(v) if isinstance(v, list) else [v]
        elif k in inc_keys:
            for i in include:
                i[k] = v
        elif k in used:
            params[k] = v
        elif k in FIXED_FIELDS:
            raise _refuse(k, f"{k!r} is a part of the spec --set cannot change (edit the spec); "
                             f"--set changes a value the templates use or {', '.join(SPEC_KEYS)}", set())
        elif k in params:
            raise _refuse(k, f"params.{k} is used by no template, so setting it would change nothing", known)
        else:
            raise _refuse(k, "no template, matrix axis, include key or spec field uses this name",
                          known | set(SPEC_KEYS))
    return Applied(params, matrix, include, spec)
