"""The status vocabulary and its glyphs, apart from the pydantic models: the dashboard paints its
first frame with these before anything heavy is imported."""

from __future__ import annotations

import re
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


_WORDS = "|".join(sorted({*HYP_STATUSES, *PRED_STATUSES}, key=len, reverse=True))
_REPEAT = re.compile(rf"\b({_WORDS}): (?:\1: )+")
_LEAD = re.compile(rf"^({_WORDS})(?:: |, )")  # `confirmed: …`, `confirmed, post-hoc: …`
_OLD_VERSION = re.compile(r" \(v(\d+)(, edited after evidence)?\)")


def reader_text(summary: str, status: str | None = None) -> str:
    """A verdict's summary as a reader sees it beside its status: no status word said twice
    (`inconclusive: inconclusive: …`), none repeating the `status` printed just before it, and the
    prediction's version spelled out only where it was edited (summaries written before
    `prediction version N` was spelled out carry `(v1)`). Every face (report, dashboard, plan
    reasons) shows a summary through this one function."""
    s = " ".join(str(summary or "").split())
    s = _REPEAT.sub(r"\1: ", s)
    s = _OLD_VERSION.sub(lambda m: "" if m.group(1) == "1" and not m.group(2)
                         else f" (prediction version {m.group(1)}{m.group(2) or ''})", s)
    if status and (m := _LEAD.match(s)) and m.group(1) == status:
        s = s[m.end():]
    return s
