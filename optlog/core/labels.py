"""Typed label values: 256 and "256" are the same label value, and 1024 sorts after 256.

A label value is kept as canonical text plus, when it reads as a number, that number. Selection
compares canonical text; ordering puts numbers first (by value), then text.
"""

from __future__ import annotations

import math
import re
from typing import Any

from optlog.core.text import check
from optlog.errors import BadInput

KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,199}\Z")  # \Z: `$` would let a final newline in
# set (value "true") on a run that overlapped another launch on its target (optlog.runs.targetlock):
# verdicts treat such runs as not comparable unless a prediction selects on this label
CONCURRENT = "concurrent"
# a block the user measured a and b in together (`--label block=monday-1`): verdicts pair the runs of
# a and b that share it and judge the per-block ratios (DESIGN §5), like the cycles of a launch
BLOCK = "block"
_INT_RE = re.compile(r"^[+-]?\d+$")


def as_number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(float(v)) or math.isinf(float(v)) else None
    if isinstance(v, str):
        s = v.strip()
        if not s:
            return None
        try:
            f = float(s)
        except ValueError:
            return None
        return None if math.isnan(f) else f
    return None


def canonical(v: Any) -> str:
    """Canonical text of a label value: numbers without trailing zeros, booleans lower-case."""
    if isinstance(v, bool):
        return "true" if v else "false"
    n = as_number(v)
    if n is not None:
        if math.isinf(n):
            return "inf" if n > 0 else "-inf"
        if n.is_integer() and abs(n) < 1e15:
            return str(int(n))
        return repr(n)
    if v is None:
        return ""
    return str(v).strip()


def typed(v: Any) -> int | float | str:
    """The value as JSON shows it: an int or float when numeric, else text."""
    n = as_number(v)
    if n is None:
        return canonical(v)
    if math.isinf(n):
        return canonical(v)
    return int(n) if n.is_integer() and abs(n) < 1e15 else n


def sort_key(v: Any) -> tuple[int, float, str]:
    n = as_number(v)
    return (0, n, "") if n is not None else (1, 0.0, canonical(v))


def check_key(key: str, field: str = "--label") -> str:
    if not KEY_RE.match(key):
        raise BadInput(f"bad label name {key!r}: use letters, digits, '_', '.', '-'", field=field)
    return key


def parse_pair(text: str, field: str = "--label") -> tuple[str, str]:
    """`K=V` from the command line."""
    if "=" not in text:
        raise BadInput(f"expected KEY=VALUE, got {text!r} (no '=')", field=field)
    k, v = text.split("=", 1)
    k = k.strip()
    if not k:
        raise BadInput(f"expected KEY=VALUE, got {text!r} (empty key)", field=field)
    return check_key(k, field), check(v.strip(), field, multiline=False)


def parse_pairs(items: list[str] | tuple[str, ...], field: str = "--label") -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items:
        k, v = parse_pair(it, field)
        out[k] = v
    return out
