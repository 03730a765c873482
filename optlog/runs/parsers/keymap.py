"""`--key-map K=SRC`: take metric K (or label `label.K`) from the dotted path SRC of a result object."""

from __future__ import annotations

from typing import Any

from optlog.errors import BadInput
from optlog.runs.parsers._common import Doc, finite, set_label

_MISSING = object()


def lookup(o: Any, path: str) -> Any:
    """`a.b.0.c` into nested dicts/lists; an exact key (even with dots or a colon) wins."""
    if isinstance(o, dict) and path in o:
        return o[path]
    cur = o
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur


def apply_key_map(doc: Doc, tool: str, o: Any, metrics: dict[str, float], labels: dict[str, Any],
                  line: int | None = None) -> None:
    for k, src in doc.key_map.items():
        v = lookup(o, src)
        if v is _MISSING:
            raise BadInput(f"{tool}: {'line %d: ' % line if line is not None else ''}key map {k}={src}: "
                           f"no {src!r} in this result", file=doc.path, line=line, field="--key-map")
        if k.startswith("label."):
            set_label(labels, k[len("label."):], v)
            continue
        f = finite(v)
        if f is None:
            raise BadInput(f"{tool}: {'line %d: ' % line if line is not None else ''}key map {k}={src}: "
                           f"{src!r} is {v!r}, not a number", file=doc.path, line=line, field="--key-map")
        metrics[k] = f
