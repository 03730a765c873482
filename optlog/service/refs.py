"""Checking references to hypotheses from other records (todos, runs, notes, launches).

Below `hypotheses` and `evidence` both: a link check needs only the workspace's files, and keeping
it here lets `hypotheses.show` read evidence without a cycle.
"""

from __future__ import annotations

from optlog.core.text import is_id
from optlog.errors import not_found
from optlog.needs import Files


def require(ctx: Files, hid: str | None, field: str = "hypothesis") -> str | None:
    """Check that a referenced hypothesis exists (for links from todos, runs, notes); a path such
    as `../optlog` is no id, so it names no file."""
    if hid is None:
        return None
    if not is_id(hid) or not ctx.ws.hypothesis_file(hid).is_file():
        d = ctx.ws.hypotheses_dir
        raise not_found("hypothesis", hid, [f.stem for f in d.glob("*.yaml")] if d.is_dir() else [], field=field)
    return hid
