"""The status vocabulary and its glyphs, apart from the pydantic models: the dashboard paints its
first frame with these before anything heavy is imported."""

from __future__ import annotations

HYP_STATUSES: tuple[str, ...] = ("open", "testing", "confirmed", "falsified", "inconclusive", "superseded")
PRED_STATUSES: tuple[str, ...] = ("untested", "confirmed", "falsified", "inconclusive")
RUN_STATUSES: tuple[str, ...] = ("queued", "running", "succeeded", "failed", "cancelled", "interrupted")
LEVEL_OUTCOMES: tuple[str, ...] = ("holds", "fails", "unclear")

STATUS_GLYPH = {
    "open": "○",
    "testing": "◐",
    "confirmed": "✔",
    "falsified": "✘",
    "inconclusive": "?",
    "superseded": "↷",
    "untested": "·",
}
