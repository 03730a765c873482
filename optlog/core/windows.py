"""Time windows of a run's measured phase (the load generator's decode stretches): pure, imports nothing,
so the load generator's I/O-free core can use it beside telemetry."""

from __future__ import annotations


def join_windows(windows: list[tuple[float, float]] | list[list[float]], start: float | None = None,
                 end: float | None = None, max_n: int = 64) -> list[tuple[float, float]]:
    """Time windows sorted, overlapping ones joined, clipped to [start, end]; then the closest
    neighbours joined until at most `max_n` remain (a few ms between two requests' decodes is not
    worth a window of its own). Used for the measured phase of a run (loadgen → telemetry)."""
    ws = sorted((max(a, start) if start is not None else a, min(b, end) if end is not None else b) for a, b in windows)
    out: list[tuple[float, float]] = []
    for a, b in ws:
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    while len(out) > max_n:
        i = min(range(len(out) - 1), key=lambda j: out[j + 1][0] - out[j][1])
        out[i:i + 2] = [(out[i][0], out[i + 1][1])]
    return out
