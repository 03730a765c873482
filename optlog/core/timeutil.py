"""Timestamps as ISO-8601 UTC strings: sortable as text, readable in YAML and JSON.

`OPTLOG_NOW` (tests and examples only) fixes the clock: set it to an ISO-8601 time
(`2026-02-17T09:00:00Z`) and every timestamp optlog writes is that time, so a script that rebuilds a
workspace from recorded data (examples/glm5_case_study.py) produces the same bytes on every run.
Never set it in real use: verdicts, runs and plans would all claim the same moment.
"""

from __future__ import annotations

from datetime import datetime, timezone

from optlog import settings


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


def fmt_elapsed(s: float) -> str:
    """A wait or a long step as a person reads it on a progress line: `45s`, `4m33s`, `1h02m`."""
    n = max(0, int(s))
    if n < 60:
        return f"{n}s"
    if n < 3600:
        return f"{n // 60}m{n % 60:02d}s"
    return f"{n // 3600}h{n % 3600 // 60:02d}m"
