"""Typed label values: 256 and "256" are the same label value, and 1024 sorts after 256.

A label value is kept as canonical text plus, when it reads as a number, that number. Selection
compares canonical text; ordering puts numbers first (by value), then text.
"""

from __future__ import annotations

import math
import re
from typing import Any

from optlog.core import metrics as M
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
    if isinstance(v, int):
        try:
            return float(v)
        except OverflowError:  # an integer past the largest double reads as the infinity it exceeds
            return math.copysign(math.inf, v)
    if isinstance(v, float):
        return None if math.isnan(v) else v
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


def check_key(key: str, field: str = "labels") -> str:
    if not KEY_RE.match(key):
        raise BadInput(f"bad label name {key!r}: use letters, digits, '_', '.', '-'", field=field)
    return key


_INF_WORDS = frozenset({"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"})


def check_value(key: str, v: Any, field: str = "labels", what: str = "label") -> Any:
    """A label value whose number is past the largest double (`1e400`, 400 digits) is refused, naming
    the label (issue 42): it would read as inf and compare equal to every other such typo. The word
    `inf` stays a value (`request_rate=inf`: no rate limit). Matrix, include and `--set` values are
    labels of their runs and pass here too (`what` names them: `matrix axis`, `--set`)."""
    n = as_number(v)
    if n is not None and math.isinf(n) and str(v).strip().lower() not in _INF_WORDS:
        text = str(v) if not isinstance(v, int) or v.bit_length() < 4000 else f"a whole number of {v.bit_length()} bits"
        shown = text if len(text) <= 40 else text[:20] + "…"
        raise BadInput(f"{what} {key}: {shown} is past the largest number optlog computes with (about 1.8e308)",
                       field=field)
    return v


def parse_pair(text: str, field: str = "labels") -> tuple[str, str]:
    """`K=V` from the command line."""
    if "=" not in text:
        raise BadInput(f"expected KEY=VALUE, got {text!r} (no '=')", field=field)
    k, v = text.split("=", 1)
    k = k.strip()
    if not k:
        raise BadInput(f"expected KEY=VALUE, got {text!r} (empty key)", field=field)
    return check_key(k, field), check_value(k, check(v.strip(), field, multiline=False), field)


def parse_pairs(items: list[str] | tuple[str, ...], field: str = "labels") -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items:
        k, v = parse_pair(it, field)
        out[k] = v
    return out


# What was run, in one vocabulary: the label names a launched run carries (optlog bench, run specs)
# and the names peer tools give the same settings. A reader that takes a tool's setting as a label
# names it through `setting_name`, so `compare --by concurrency` finds a vLLM sweep's
# `max_concurrency`, a genai-perf `concurrency` and a launched run's `concurrency` alike.
# The peer names are the labels' aliases in the metrics and labels registry (optlog.core.metrics).


def setting_name(key: str) -> str | None:
    """A tool's setting name as optlog's label name (`max_concurrency` → `concurrency`,
    `max-num-seqs` → `max_num_seqs`); None when it cannot be a label name at all."""
    k = re.sub(r"[^A-Za-z0-9_.]+", "_", str(key).strip()).strip("_").replace("-", "_")
    k = M.label_of_alias(k.lower()) or k
    return k if KEY_RE.match(k) else None
