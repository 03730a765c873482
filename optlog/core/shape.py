"""Shaping documents for a reader with a small context: pages, field selection, a byte bound.

Pure functions over JSON-like values, shared by the service verbs (pages and fields are options of
the commands themselves) and the MCP face (the last-resort byte bound).
"""

from __future__ import annotations

import json
from typing import Any


def size(doc: Any) -> int:
    """Bytes of the compact JSON encoding (what an agent's context pays for)."""
    return len(json.dumps(doc, default=str, ensure_ascii=False, separators=(",", ":")).encode())


def page(items: list[Any], limit: int | None, offset: int = 0) -> tuple[list[Any], dict[str, Any]]:
    """A slice of `items` and its page facts: `total`, `offset`, `next_offset` (None at the end)."""
    total = len(items)
    offset = max(0, offset or 0)
    end = total if limit is None else min(total, offset + max(0, limit))
    return items[offset:end], {"total": total, "offset": offset, "next_offset": end if end < total else None}


def page_facts(total: int, offset: int, returned: int) -> dict[str, Any]:
    end = offset + returned
    return {"total": total, "offset": offset, "next_offset": end if end < total else None}


def parse_fields(fields: str | None) -> list[str] | None:
    if not fields:
        return None
    return [f.strip() for f in fields.split(",") if f.strip()]


def project(row: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
    """Only `fields` of `row` (dotted names reach into dicts: `metrics.output_throughput`)."""
    if not fields:
        return row
    out: dict[str, Any] = {}
    for f in fields:
        head, _, rest = f.partition(".")
        if head not in row:
            continue
        if rest and isinstance(row[head], dict):
            sub = out.setdefault(head, {})
            if rest in row[head]:
                sub[rest] = row[head][rest]
        else:
            out[head] = row[head]
    return out


def fit(doc: Any, limit: int, hint: str) -> Any:
    """`doc` cut to at most `limit` bytes by dropping the tails of its longest lists (and then
    shortening its longest strings), with a `truncated` note saying what was cut and `hint` (how
    to ask for the rest). A document already within the bound is returned unchanged."""
    if size(doc) <= limit or not isinstance(doc, dict):
        return doc
    original = doc
    doc = json.loads(json.dumps(doc, default=str))
    cut: dict[str, int] = {}
    paged = _page_key(doc)
    if paged is not None:  # said before cutting, so the note's own bytes are within the bound
        hint = f"next_offset continues with the first of {paged} not shown; {hint}"

    def lists(d: Any, path: str) -> list[tuple[str, list[Any]]]:
        out: list[tuple[str, list[Any]]] = []
        if isinstance(d, dict):
            for k, v in d.items():
                out += lists(v, f"{path}.{k}" if path else k)
        elif isinstance(d, list):
            if len(d) > 1:
                out.append((path, d))
            for i, v in enumerate(d[:3]):
                out += lists(v, f"{path}[{i}]")
        return out

    doc["truncated"] = {"cut": cut, "hint": hint}
    for _ in range(2000):
        if size(doc) <= limit:
            break
        ls = lists({k: v for k, v in doc.items() if k != "truncated"}, "")
        if not ls:
            break
        path, lst = max(ls, key=lambda x: size(x[1]))
        n = max(1, len(lst) // 4) if size(lst) > 2 * limit else 1
        del lst[len(lst) - n:]
        cut[path] = cut.get(path, 0) + n
    # still too big: long strings are cut in the middle of their text
    for _ in range(200):
        if size(doc) <= limit:
            break
        best: tuple[int, Any, Any] | None = None
        stack: list[Any] = [doc]
        while stack:
            d = stack.pop()
            items = d.items() if isinstance(d, dict) else enumerate(d) if isinstance(d, list) else ()
            for k, v in items:
                if isinstance(v, str) and (best is None or len(v) > best[0]):
                    best = (len(v), d, k)
                elif isinstance(v, (dict, list)):
                    stack.append(v)
        if best is None or best[0] < 40:
            break
        _, d, k = best
        d[k] = d[k][: best[0] // 2] + "…"
        cut["strings"] = cut.get("strings", 0) + 1
    if not cut:  # nothing could be cut: the document as it was, never a note that cuts nothing
        return original
    if paged is not None and paged in cut:
        # the page itself was cut: the next page starts at the first item not shown, so following
        # `next_offset` still visits every item once (issue 31)
        end = doc["offset"] + len(doc[paged])
        doc["next_offset"] = end if end < doc["total"] else None
    return doc


def _page_key(doc: dict[str, Any]) -> str | None:
    """The top-level list that is the page of a paged document (one with `total`, `offset` and
    `next_offset`): the one whose length is what the page returned."""
    off, total = doc.get("offset"), doc.get("total")
    if not isinstance(off, int) or not isinstance(total, int) or "next_offset" not in doc:
        return None
    nxt = doc["next_offset"]
    returned = (nxt if isinstance(nxt, int) else total) - off
    keys = [k for k, v in doc.items() if isinstance(v, list) and len(v) == returned]
    return keys[0] if len(keys) == 1 else None
