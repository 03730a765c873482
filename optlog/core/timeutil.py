"""Timestamps as ISO-8601 UTC strings: sortable as text, readable in YAML and JSON.

`OPTLOG_NOW` (tests and examples only) fixes the clock: set it to an ISO-8601 time
(`2026-02-17T09:00:00Z`) and every timestamp optlog writes is that time, so a script that rebuilds a
workspace from recorded data (examples/glm5_case_study.py) produces the same bytes on every run.
Never set it in real use: verdicts, runs and plans would all claim the same moment.
"""

from __future__ import annotations

from datetime import datetime, timezone

from optlog import settings
from optlog.errors import BadInput, param


def _fmt(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_iso() -> str:
    fixed = settings.read("now")
    if fixed:
        dt = parse_iso(fixed.strip())
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return _fmt(dt)
    return _fmt(datetime.now(timezone.utc))


def parse_iso(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def since_time(text: str | None) -> str | None:
    """A `since` as every verb reads it (run list, note list, log, report; their MCP tools): a date
    (`2026-12-01`: midnight UTC), a time without a zone (UTC) or with one (`2026-12-01T08:00+02:00`),
    given back as optlog writes its timestamps (UTC, milliseconds, `Z`), so comparing the texts
    compares the moments. Anything else is refused naming `since` (BadInput, exit 2): a text that
    is no time matched nothing, silently, in `run list`."""
    if text is None or not text.strip():
        return None
    try:
        dt = parse_iso(text.strip())
    except ValueError:
        raise BadInput(f"{param('since')} takes a time (ISO 8601, e.g. 2026-12-01 or 2026-12-01T08:00), got {text!r}",
                       field="since") from None
    return _fmt(dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc))


def at_or_after(stamp: str, since: str) -> bool:
    """A timestamp written in any ISO 8601 form (git's `…+01:00`, optlog's `….000Z`) is at or after
    `since` (a `since_time`): compared as moments, not as texts."""
    try:
        dt = parse_iso(str(stamp))
    except ValueError:
        return False
    return _fmt(dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)) >= since


def fmt_elapsed(s: float) -> str:
    """A wait or a long step as a person reads it on a progress line: `45s`, `4m33s`, `1h02m`."""
    n = max(0, int(s))
    if n < 60:
        return f"{n}s"
    if n < 3600:
        return f"{n // 60}m{n % 60:02d}s"
    return f"{n // 3600}h{n % 3600 // 60:02d}m"
