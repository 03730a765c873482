"""`json` — any JSON or JSONL result file, read through a key map.

Input: one JSON object, an array of objects, or JSONL (one object per line): one run per object.
`--key-map NAME=PATH` (repeatable) takes metric NAME from the dotted PATH of each object
(`output_throughput=results.throughput.output`, list items by index: `runs.0.tps`); a key map entry
`label.NAME=PATH` sets a label instead. Without a key map entry for them, keys already named
canonically (DESIGN.md §4) anywhere at the top level of the object are taken as they are.

The tool's own keys: every numeric leaf (nested keys joined with '.') is kept as metric
`raw.<path>` unless it is already stored under the same canonical name; the rest goes to `raw`.
A file with no canonical metric at all (neither by name nor through the key map) is refused with
the list of names it could have used. Labels: only those given by `label.*` key map entries (plus
`--label` on the command line).
"""

from __future__ import annotations

from typing import Any

from optlog.core import metrics as M
from optlog.runs.parsers._common import (
    Doc,
    ParsedResult,
    clean,
    fail,
    finite,
    jsonl_objects,
    metric_key,
    put,
)
from optlog.runs.parsers.keymap import apply_key_map

TOOL = "json"
MAX_RAW_METRICS = 200


def _leaves(o: Any, prefix: str, out: dict[str, float]) -> None:
    if len(out) >= MAX_RAW_METRICS:
        return
    if isinstance(o, dict):
        for k, v in o.items():
            _leaves(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(o, (int, float)) and not isinstance(o, bool):
        f = finite(o)
        if f is not None:
            out[prefix] = f


def parse(doc: Doc) -> list[ParsedResult]:
    out: list[ParsedResult] = []
    for i, (line, o) in enumerate(jsonl_objects(doc, TOOL)):
        metrics: dict[str, float] = {}
        canonical = M.canonical()
        for k in canonical:
            if k in o:
                put(metrics, k, o[k])
        labels: dict[str, Any] = {}
        apply_key_map(doc, TOOL, o, metrics, labels, line)
        if not any(k in metrics for k in canonical) and not any(not k.startswith("label.") for k in doc.key_map):
            raise fail(TOOL, doc.path, "no canonical metric (" + ", ".join(canonical[:8]) + ", …) and no --key-map "
                       "NAME=PATH naming one", line=line, field_="key_map")
        leaves: dict[str, float] = {}
        _leaves(o, "", leaves)
        for k, v in leaves.items():
            if k not in metrics:
                metrics["raw." + metric_key(k)] = v
        labels["tool"] = TOOL
        rest = {k: v for k, v in o.items() if not (isinstance(v, (int, float)) and not isinstance(v, bool))}
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=TOOL,
                                source=f"{doc.path}:{line}", file=doc.path, index=i))
    return out
