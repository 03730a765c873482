"""Human renderings of documents shared by verbs: small tables and one-line summaries. A verb's
`human` renderer is a pure function of its document; the CLI prints it (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.core.hypothesis import STATUS_GLYPH
from optlog.core.numfmt import fmt_num  # noqa: F401  (the verbs take it from here)
from optlog.core.views import kv  # noqa: F401  (the verbs take it from here; the dashboard uses it too)


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


def runs_table(d: dict[str, Any]) -> str:
    """A run list document as a table: id, status, labels and the first three metrics."""
    rows = d["runs"]
    if not rows:
        return "no runs"
    keys: list[str] = []
    for r in rows:
        for k in r.get("metrics", {}):
            if k not in keys and len(keys) < 3 and not k.startswith("raw."):
                keys.append(k)
    body = [
        [r.get("id"), str(r.get("status", "")) + (" (invalid)" if r.get("invalidated") else ""), kv(r.get("labels", {}))] +
        [fmt_num(r.get("metrics", {}).get(k)) for k in keys]
        for r in rows
    ]
    return table(body, ["id", "status", "labels", *keys])
