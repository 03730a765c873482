"""A pause of the cyclic garbage collector while a step builds many objects and no cycle.

Why: each pass of the collector walks every object the process holds, and a pass comes every few
hundred allocations; a first read or an index sync at 10,000 hypotheses builds tens of thousands
of rows, lists and dicts, none in a cycle, so up to two thirds of its time went to passes that
freed nothing. Reference counting still frees everything as usual; the collector runs again after."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside (re-entrant: an inner pause leaves an outer one as it was)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
