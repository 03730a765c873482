"""What the dashboard reads beside the verbs (its writes are verbs: `optlog.tui.actions`): the read
models of `optlog.service.dashboard` and the two documents it shows whole (`run show`, `run diff`).
The TUI imports this after its first frame (the service layer costs ~0.6 s)."""

from __future__ import annotations

from optlog.service.dashboard import (change_token, hypotheses_view, hypothesis_detail, live_launches, live_sampler,
                                      overview, quick_tree, runs_index)
from optlog.service.evidence import show_run as run_detail
from optlog.service.plans import list_ as plans
from optlog.service.todos import list_ as todos
from optlog.service.verdicts import runs_diff

__all__ = ["change_token", "hypotheses_view", "hypothesis_detail", "live_launches", "live_sampler", "overview",
           "plans", "quick_tree", "run_detail", "runs_diff", "runs_index", "todos"]
