"""The one place list documents get their envelope: order, page, field selection.

Every list verb (`hypothesis list`, `run list`, `note list`, `todo list`, `prediction list`…) returns
`{KEY: rows, **page facts}` through `listing`, so the faces never wrap a list themselves. The page
facts (`total`, `offset`, `next_offset`) come only with a page (`limit` or `offset`): without one the
document is the one the CLI always printed (a script's `--json` contract stays).
"""

from __future__ import annotations

from typing import Any

from optlog.core.shape import page, parse_fields, project
from optlog.errors import BadInput, param

ORDERS = ("oldest", "newest")


def check_limit(limit: int | None, least: int = 0) -> None:
    if limit is not None and limit < least:
        raise BadInput(f"{param('limit')} must be at least {least}", field="limit")


def select(rows: list[dict[str, Any]], fields: str | list[str] | None) -> list[dict[str, Any]]:
    """Only `fields` of each row (comma-separated or a list; dotted names reach into dicts)."""
    fl = parse_fields(fields) if isinstance(fields, str) or fields is None else fields
    return [project(r, fl) for r in rows] if fl else rows


def paged(items: list[Any], limit: int | None, offset: int = 0, order: str = "oldest",
          fields: str | list[str] | None = None) -> tuple[list[Any], dict[str, Any]]:
    """Order, page and project a list already in oldest-first order: (rows, page facts)."""
    if order == "newest":
        items = items[::-1]
    check_limit(limit)
    rows, facts = page(items, limit, offset)
    if limit is None and not offset:
        facts = {}
    return select(rows, fields), facts


def listing(key: str, items: list[Any], limit: int | None = None, offset: int = 0, order: str = "oldest",
            fields: str | list[str] | None = None) -> dict[str, Any]:
    """`{key: the page of items, **page facts}`: the envelope of every list document."""
    rows, facts = paged(items, limit, offset, order, fields)
    return {key: rows, **facts}
