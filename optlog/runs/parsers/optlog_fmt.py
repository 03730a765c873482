"""`optlog` — the JSONL written by `optlog bench --output-file` (the built-in load generator).

It uses SGLang `bench_serving`'s key names (plus `failed`, `duration`, `max_concurrency`), so this is
the SGLang parser under another tool name (see `sglang.py` for the mapping, raw keys and labels).
Auto-detection recognises its lines by `"tool": "optlog"` (or an `optlog_version` key); without
either, such a file is detected as `sglang`, which reads the same numbers.
"""

from __future__ import annotations

from optlog.runs.parsers._common import Doc, ParsedResult
from optlog.runs.parsers.sglang import parse_serving


def parse(doc: Doc) -> list[ParsedResult]:
    out = parse_serving(doc, "optlog")
    for r in out:
        v = r.raw.get("optlog_version") or r.raw.get("version")
        if v and "tool_version" not in r.labels:
            r.labels["tool_version"] = str(v)
    return out
