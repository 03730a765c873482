"""What the faces say about a document, decided once.

The CLI writes `hypothesis show`, `run show`, `run diff` and `verdict` as text and the dashboard as Rich renderables;
which facts appear, in which order, and when there is nothing to say live here, so the two views
cannot drift apart (the second architecture review found the hypothesis view written twice)."""

from __future__ import annotations

from typing import Any

from optlog.core.statuses import STATUS_GLYPH

# `run diff`'s sections beside the metrics, as (title, document key), in the order both faces show them
DIFF_SECTIONS: tuple[tuple[str, str], ...] = (("labels", "labels"), ("rendered with", "rendered"),
                                              ("environment", "environment"), ("run", "other"))


def kv(pairs: dict[str, Any]) -> str:
    """Labels, a level or parameters as both faces write them: `config=tp8 concurrency=64`."""
    return " ".join(f"{k}={v}" for k, v in pairs.items())


def relations(h: dict[str, Any]) -> list[tuple[str, str]]:
    """A hypothesis's place in the tree, as (what, whom) pairs: parent, children, rivals (those it
    has, in that order)."""
    out: list[tuple[str, str]] = []
    if h.get("parent"):
        out.append(("parent", str(h["parent"])))
    for k in ("children", "rivals"):
        if h.get(k):
            out.append((k, ", ".join(h[k])))
    return out


def diff_differs(d: dict[str, Any]) -> bool:
    """Whether a `run diff` document has any difference to show."""
    return any(d.get(k) for _, k in DIFF_SECTIONS) or bool(d.get("metrics"))


def run_error(r: dict[str, Any]) -> str:
    """A failed run's error line as `run show` says it: the error, then its diagnosed cause."""
    return f"error: {r['error']}" + (f" (cause: {r['cause']})" if r.get("cause") else "")


def verdict_head(r: dict[str, Any]) -> str:
    """One hypothesis's line of a `verdict` document: `glyph id: status`, the automatic status beside
    an overridden one, `(unchanged)` when this verdict changed nothing. The CLI prints it above the
    predictions; the dashboard's notification is these lines."""
    st = r["status"] + (f" (automatic: {r['auto_status']})" if r["status"] != r["auto_status"] else "")
    return f"{STATUS_GLYPH.get(r['status'], ' ')} {r['hypothesis']}: {st}" + ("" if r["changed"] else " (unchanged)")
