"""The service layer as the dashboard reaches it: one doorway, loaded once after the first frame.

The dashboard paints its first frame from a stdlib-only read (`dashboard.quick_tree`) while the
service layer (SQLAlchemy, pydantic: ~0.4 s) loads behind it. `optlog.tui.app.svc()` is the one
place that import is deferred; every pane takes its verbs from here.
"""

from __future__ import annotations

from optlog.service import (
    dashboard,
    evidence,
    history,
    hypotheses,
    launch,
    plans,
    predictions,
    report,
    todos,
    verdicts,
)

__all__ = ["dashboard", "evidence", "history", "hypotheses", "launch", "plans", "predictions", "report",
           "todos", "verdicts"]
