"""What the dashboard's parts tell each other, as typed Textual messages (as toolong's messages.py).

Two kinds:

* `Loaded` messages carry what a worker read for the screen (loading.py posts them to the app, whose
  handler, named by the class, hands each to its pane). Every string in them passes the output rule
  (`core.text.shown`: no ESC, OSC 52 or bidi override from a run's labels, a commit or a file reaches
  the terminal) once, here, when the message is made.
* The others are what a pane asks of the app: load a detail, a diff, other metric columns.

A handler is found by the message's class (`on_runs_loaded`), so a misspelt kind fails at import
and type-check time, not at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from collections.abc import Mapping
from typing import Any

from textual.message import Message

from optlog.core import text as TX


@dataclass
class Loaded(Message):
    """Data read for the screen; its strings pass the output rule when the message is made."""

    def __post_init__(self) -> None:
        for f in fields(self):
            setattr(self, f.name, TX.shown_tree(getattr(self, f.name)))
        super().__post_init__()


@dataclass
class HypothesesLoaded(Loaded):
    """The hypothesis tree (`service.dashboard.hypotheses_view`): the roots, and every document by id."""

    roots: list[dict[str, Any]]
    docs: Mapping[str, Any]


@dataclass
class HypothesisDetailLoaded(Loaded):
    """One hypothesis as the detail pane shows it (`service.dashboard.hypothesis_detail`)."""

    detail: dict[str, Any]


@dataclass
class TodosLoaded(Loaded):
    todos: list[dict[str, Any]]


@dataclass
class OverviewLoaded(Loaded):
    """The agent's open todos, the verdicts due and the latest ones (`service.dashboard.overview`)."""

    overview: dict[str, Any]


@dataclass
class LaunchesLoaded(Loaded):
    """The live launches (`service.dashboard.live_launches`), oldest first."""

    launches: list[dict[str, Any]]


@dataclass
class TelemetrySampled(Loaded):
    """One reading of this machine while a launch runs here; `sampler` None: no launch runs here."""

    sampler: Any
    reading: dict[str, float] | None


@dataclass
class PlansLoaded(Loaded):
    plans: list[dict[str, Any]]


@dataclass
class RunsLoaded(Loaded):
    """Every run's light row and the metric columns (`service.dashboard.runs_index`)."""

    index: dict[str, Any]


@dataclass
class RunDetailLoaded(Loaded):
    """`run show` of one run (`service.evidence.show_run`)."""

    run: dict[str, Any]


@dataclass
class RunDiffLoaded(Loaded):
    """`run diff` of two runs (`service.verdicts.runs_diff`)."""

    diff: dict[str, Any]


@dataclass
class LogLoaded(Loaded):
    """`optlog log`'s events (`service.history.log`)."""

    events: list[dict[str, Any]]


@dataclass
class LoadFinished(Message):
    """A full load is over (whether or not it succeeded): the status line, and tests, wait on it."""


@dataclass
class HypothesisSelected(Message):
    """The tree's cursor rested on a hypothesis: load its detail."""

    hid: str


@dataclass
class RunSelected(Message):
    """The runs table's cursor rested on a run: load its detail."""

    rid: int


@dataclass
class RunDiffAsked(Message):
    """Two runs were marked for `run diff`."""

    a: int
    b: int


@dataclass
class MetricsChosen(Message):
    """The metric columns the person chose (None: the service's default choice)."""

    metrics: list[str] | None
