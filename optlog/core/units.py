"""The unit of a metric or label: the one place a report, a plot axis or the dashboard looks it up
(`median_ttft_ms` → ms, `output_throughput` → tok/s, `gpu_power_w` → W).

The unit, the direction and the range come from the metrics registry (optlog.core.metrics): a
registered metric or label by its row, any other name by the habits of its name (a `_ms` suffix, a
`throughput` in tokens per second). A name that follows none has no unit (None): an axis then shows
the bare name rather than a guessed unit. Pure.
"""

from __future__ import annotations

from optlog.core.metrics import better, bounds, higher_is_better, unit

__all__ = ["better", "bounds", "higher_is_better", "unit", "with_unit"]


def with_unit(name: str, u: str | None = None) -> str:
    """`median_ttft_ms (ms)`: an axis title or a table header; the bare name when it has no unit."""
    u = u if u is not None else unit(name)
    return f"{name} ({u})" if u else name
