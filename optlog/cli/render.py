"""Human renderings shared by commands: small tables and one-line summaries (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.core.hypothesis import STATUS_GLYPH


def table(rows: list[list[Any]], header: list[str]) -> str:
    cells = [[("" if c is None else str(c)) for c in r] for r in rows]
    widths = [len(h) for h in header]
    for r in cells:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    fmt = lambda r: "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()  # noqa: E731
    lines = [fmt(header), fmt(["-" * w for w in widths])]
    lines += [fmt(r) for r in cells]
    return "\n".join(lines)


def glyph(status: str) -> str:
    return STATUS_GLYPH.get(status, " ")


def fmt_num(v: Any) -> str:
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


def kv(labels: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in labels.items())
