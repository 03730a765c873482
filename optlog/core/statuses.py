"""The status vocabulary and its glyphs, apart from the pydantic models: the dashboard paints its
first frame with these before anything heavy is imported."""

from __future__ import annotations

from typing import Literal, get_args

# Each vocabulary is written once, as the type the models check; the tuples (click choices, JSON
# schemas, messages) are computed from it.
HypStatus = Literal["open", "testing", "confirmed", "falsified", "inconclusive", "superseded"]
PredStatus = Literal["untested", "confirmed", "falsified", "inconclusive"]
HYP_STATUSES: tuple[str, ...] = get_args(HypStatus)
PRED_STATUSES: tuple[str, ...] = get_args(PredStatus)
RUN_STATUSES: tuple[str, ...] = ("queued", "running", "succeeded", "failed", "cancelled", "interrupted")
LIVE_RUN_STATUSES: tuple[str, ...] = RUN_STATUSES[:2]  # a run or launch not finished yet: queued, running
WAITING = "waiting"  # a running launch that waits for the machine (or GPU) lock: what `run wait` says then
LAUNCH_VIEW_STATUSES: tuple[str, ...] = (*RUN_STATUSES, WAITING)
LEVEL_OUTCOMES: tuple[str, ...] = ("holds", "fails", "unclear")



def told_apart(a: str, b: str) -> bool:
    """Whether two rival hypotheses' statuses leave nothing to discriminate (optlog next): one
    confirmed and the other falsified, or both falsified (neither story survives). Both confirmed is
    not: each claim held and neither excluded the other (overlapping predictions)."""
    return {a, b} == {"confirmed", "falsified"} or a == b == "falsified"


STATUS_GLYPH = {
    "open": "○",
    "testing": "◐",
    "confirmed": "✔",
    "falsified": "✘",
    "inconclusive": "?",
    "superseded": "↷",
    "untested": "·",
}
