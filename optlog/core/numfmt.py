"""How a number reads to a person, in one place: every face (CLI tables, the TUI, the markdown of
reports and plan files) formats numbers with these, so the same value reads the same everywhere.

Not here, on purpose: the numbers inside verdict and diagnosis reasons (core.verdict, core.diagnosis).
Those texts are committed in hypothesis files and compared to decide whether a verdict changed, so
their format is part of the record and changing it would rewrite history.
"""

from __future__ import annotations

import math
from typing import Any


def fmt_num(v: Any) -> str:
    """A measured value in a table cell: thousands separated from 1,000, one decimal from 10,
    three significant digits below; `–` for nothing."""
    if v is None:
        return "–"
    if isinstance(v, float):
        if v != v:
            return "nan"
        a = abs(v)
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 10:
            return f"{v:.1f}"
        if a == 0:
            return "0"
        return f"{v:.3g}"
    return str(v)


def fmt_value(v: Any) -> str:
    """A value a person wrote or a run recorded (labels, selectors, metrics) in markdown: whole
    numbers exact (thousands separated), others to about three significant digits; yes/no for
    booleans; dicts as k=v and lists comma-separated."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        f = float(v)
        if not math.isfinite(f):
            return str(v)
        if f.is_integer() and abs(f) < 1e15:
            return f"{int(f):,}" if abs(f) >= 1_000 else str(int(f))
        a = abs(f)
        if a >= 100:
            return f"{f:,.0f}"
        if a >= 1:
            return f"{f:.3g}" if a < 10 else f"{f:.1f}"
        return f"{f:.3g}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={fmt_value(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt_value(x) for x in v)
    return str(v)


def fmt_ratio(v: Any) -> str:
    """A ratio of two measurements (config vs baseline): three decimals; `–` when there is none."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "–"
    return f"{f:.3f}" if math.isfinite(f) else "–"


def fmt_pct(v: float | None) -> str:
    """A percentage (a plan's measured gain): as written, with its sign when negative."""
    if v is None:
        return "–"
    return f"{v:+g}%" if v < 0 else f"{v:g}%"


def fmt_gain(lo: float, hi: float) -> str:
    """A plan's expected gain, a percentage or a range of them."""
    return f"{lo:g}%" if lo == hi else f"{lo:g}–{hi:g}%"
