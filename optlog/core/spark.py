"""Sparklines: a series as one line of block characters, for the dashboard's live telemetry.

Pure. Text, not a widget, so it reads the same under NO_COLOR, in snapshots and in tmux.
"""

from __future__ import annotations

from collections.abc import Sequence

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None], width: int, lo: float | None = None, hi: float | None = None) -> str:
    """The last `width` values as bars scaled between `lo` and `hi` (default: the values' own range,
    from 0 when all are positive); a missing value is a space."""
    tail = list(values)[-width:] if width > 0 else []
    seen = [v for v in tail if v is not None]
    if not seen:
        return " " * len(tail)
    low = lo if lo is not None else min(0.0, min(seen))
    high = hi if hi is not None else max(seen)
    span = high - low
    out = []
    for v in tail:
        if v is None:
            out.append(" ")
        elif span <= 0:
            out.append(BARS[0])
        else:
            i = int((min(max(v, low), high) - low) / span * (len(BARS) - 1) + 0.5)
            out.append(BARS[i])
    return "".join(out)
