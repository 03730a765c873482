"""Points of a sweep: matrix (cartesian) crossed with include (explicit points), times repeats,
ordered so that points sharing a server run together. Pure: no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def expand(matrix: Mapping[str, Sequence[Any]], include: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every matrix combination crossed with every include entry (include outermost).

    No matrix and no include gives one empty point; an empty include crosses with nothing."""
    keys = list(matrix)
    combos = [dict(zip(keys, vals)) for vals in itertools.product(*(matrix[k] for k in keys))] if keys else [{}]
    incs = list(include) or [{}]
    return [{**inc, **combo} for inc in incs for combo in combos]


def group_order(items: Sequence[T], key: Callable[[T], Hashable]) -> list[T]:
    """Stable grouping: items with the same key become adjacent, groups in order of first appearance."""
    first: dict[Hashable, int] = {}
    for i, it in enumerate(items):
        first.setdefault(key(it), i)
    return [it for _, it in sorted(enumerate(items), key=lambda p: (first[key(p[1])], p[0]))]
