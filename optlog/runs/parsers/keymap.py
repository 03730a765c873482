"""`--key-map K=SRC[:UNIT]`: take metric K (or label `label.K`) from the dotted path SRC of a result object.

A unit after the last `:` (`s`, `ms`, `us`, `ns`, `min`) converts the value into the unit metric K
names by its suffix (`_ms`, `_s`): `mean_ttft_ms=results_ttft_s_mean:s` stores 0.228 s as 228 ms.
Without one, a latency (`*_ms`) whose source says seconds (a `_s` / `_sec` / `seconds` path, or a
TTFT/end-to-end value under 1 ms) is refused rather than stored 1000× too small.
"""

from __future__ import annotations

import re
from typing import Any

from optlog.core import metrics as M
from optlog.errors import BadInput
from optlog.runs.parsers._common import Doc, finite, set_label

_MISSING = object()
UNITS = M.TIME_UNITS
_SECONDS_NAME = re.compile(r"(^|[_.])(s|sec|secs|seconds)($|[_.])", re.I)


def split_unit(src: str) -> tuple[str, str | None]:
    """`PATH:UNIT` → (PATH, UNIT) when UNIT is a known time unit; a path may itself hold a colon."""
    path, sep, unit = src.rpartition(":")
    if sep and path and unit.strip().lower() in UNITS:
        return path, unit.strip().lower()
    return src, None


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
    where = f"line {line}: " if line is not None else ""
    for k, full in doc.key_map.items():
        src, unit = (full, None) if k.startswith("label.") else split_unit(full)
        v = lookup(o, src)
        if v is _MISSING and src != full:
            v, src, unit = lookup(o, full), full, None
        if v is _MISSING:
            raise BadInput(f"{tool}: {where}key map {k}={full}: no {src!r} in this result", file=doc.path, line=line,
                           field="key_map")
        if k.startswith("label."):
            set_label(labels, k[len("label."):], v)
            continue
        f = finite(v)
        if f is None:
            raise BadInput(f"{tool}: {where}key map {k}={full}: {src!r} is {v!r}, not a number", file=doc.path,
                           line=line, field="key_map")
        want = M.time_scale(k)
        if unit is not None:
            if want is None:
                raise BadInput(f"{tool}: {where}key map {k}={full}: a unit converts into a metric named *_ms or *_s, "
                               f"not {k!r}", file=doc.path, line=line, field="key_map")
            f = f * UNITS[unit] / want
        elif want == UNITS["ms"] and (_SECONDS_NAME.search(src.rsplit(".", 1)[-1]) or
                                      (0 < f < 1.0 and re.search(r"(ttft|e2e_latency)_ms$", k))):
            raise BadInput(f"{tool}: {where}key map {k}={full}: {src!r} = {v!r} looks like seconds, and {k} is in "
                           f"milliseconds; say the unit: {k}={src}:s (or {src}:ms if it is milliseconds)",
                           file=doc.path, line=line, field="key_map")
        metrics[k] = f
