"""The dashboard: every step of the loop, watched live and done from the keyboard.

Thin face: all data comes from, and every action goes to, the service layer, always in thread
workers (database, git, files and subprocesses block). Another process's changes (an agent's CLI
calls, a launch elsewhere, a hand edit of a hypothesis file) are noticed by polling one cheap change
token twice a second; only then is what's on screen reloaded.

This module wires the parts (as toolong's ui.py): the layout of tabs and panes, the keys, and which
pane each loaded message goes to. Reading is `loading.py`, the actions `actions.py`, the panes
`panes/`, the messages `messages.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual import events
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane, Tree

from optlog.api.session import Ctx, open_session
from optlog.tui.actions import Actions
from optlog.tui.loading import applies
from optlog.tui.messages import (HypothesesLoaded, HypothesisDetailLoaded, LaunchesLoaded, LoadFinished, LogLoaded,
                                 OverviewLoaded, PlansLoaded, RunDetailLoaded, RunDiffLoaded, RunsLoaded,
                                 TelemetrySampled, TodosLoaded)
from optlog.tui.panes.hypotheses import HypothesesPane
from optlog.tui.panes.log import LogTable
from optlog.tui.panes.overview import OverviewPane
from optlog.tui.panes.plans import PlansTable
from optlog.tui.panes.runs import RunsPane
from optlog.tui.panes.todos import TodosTable


class OptlogApp(Actions):
    TITLE = "optlog"
    CSS_PATH = "app.tcss"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "toggle_keys", "Keys"),  # `?`: every key of the focused pane and the app
        Binding("a", "add_hypothesis", "Hypothesis"),
        Binding("A", "pivot", "Pivot (child)"),
        Binding("p", "add_prediction", "Prediction"),
        Binding("n", "add_note", "Note"),
        Binding("t", "add_todo", "Todo"),
        Binding("space", "advance_todo", "Advance todo", show=False),
        Binding("x", "cancel_todo", "Cancel todo", show=False),
        Binding("v", "verdict", "Verdict"),
        Binding("N", "next_experiment", "Next experiment", show=False),
        Binding("o", "override", "Override"),
        Binding("i", "invalidate", "Invalidate run", show=False),
        Binding("l", "launch", "Launch"),
        Binding("c", "cancel_launch", "Cancel launch", show=False),
        Binding("P", "add_plan", "Plan", show=False),
        Binding("R", "render_plans", "Render plans", show=False),
        Binding("r", "report", "Report", show=False),
        Binding("g", "show_log", "Log"),
        Binding("f5", "reload", "Reload", show=False),
        Binding("1", "tab('hyp')", "Hypotheses", show=False),
        Binding("2", "tab('todos')", "Todos", show=False),
        Binding("3", "tab('runs')", "Runs", show=False),
        Binding("4", "tab('plans')", "Plans", show=False),
        Binding("5", "tab('log')", "Log", show=False),
    ]

    def __init__(self, ctx: Ctx, poll_s: float = 0.5) -> None:
        super().__init__(ctx, poll_s)
        self.hyp_docs: Mapping[str, Any] = {}
        self.loads = 0  # how many reloads happened (tests wait on it)

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        self.hyps, self.runs = HypothesesPane(id="hyp-pane"), RunsPane(id="runs-pane")
        yield Header()
        with TabbedContent(initial="hyp", id="tabs"):
            with TabPane("Hypotheses", id="hyp"):
                yield Static("", id="overview-line")  # the overview in one line, on a small terminal
                yield self.hyps
            with TabPane("Todos", id="todos"):
                yield TodosTable(id="todo-table", cursor_type="row", zebra_stripes=True)
            with TabPane("Runs", id="runs"):
                yield self.runs
            with TabPane("Plans", id="plans"):
                yield PlansTable(id="plan-table", cursor_type="row", zebra_stripes=True)
            with TabPane("Log", id="log"):
                yield LogTable(id="log-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="status-line")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#hyp-tree", Tree).focus()
        self.overview.fit(self.size)
        self.start_loading()

    @property
    def overview(self) -> OverviewPane:
        return self.query_one("#overview", OverviewPane)

    @property
    def selected_hyp(self) -> str | None:
        return self.hyps.selected

    @property
    def selected_run(self) -> int | None:
        return self.runs.selected

    @property
    def detail(self) -> dict[str, Any] | None:
        """The hypothesis shown in the detail pane."""
        return self.hyps.detail

    def action_toggle_keys(self) -> None:
        """`?`: the keys panel (Textual's, the same as ctrl+p → Keys), and `?` again closes it."""
        from textual.widgets import HelpPanel  # deferred: the keys panel only when `?` is pressed

        if self.screen.query(HelpPanel):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def on_resize(self, event: events.Resize) -> None:
        self.overview.fit(event.size)  # the event's size: the app's own may not have followed yet
        self.call_after_refresh(self.hyps.relabel)  # the tree's width follows the terminal's

    # ------------------------------------------------------------------ loaded data, to its pane
    @applies
    def on_hypotheses_loaded(self, msg: HypothesesLoaded) -> None:
        self.hyp_docs = msg.docs
        self.hyps.paint(msg.roots, load_detail=True)

    @applies
    def on_hypothesis_detail_loaded(self, msg: HypothesisDetailLoaded) -> None:
        self.hyps.show_detail(msg.detail)

    @applies
    def on_todos_loaded(self, msg: TodosLoaded) -> None:
        self.query_one("#todo-table", TodosTable).show(msg.todos)

    @applies
    def on_overview_loaded(self, msg: OverviewLoaded) -> None:
        self.overview.show_overview(msg.overview)

    @applies
    def on_launches_loaded(self, msg: LaunchesLoaded) -> None:
        self._launches = msg.launches
        self.overview.show_launches(msg.launches)
        self.active_launch = self.runs.show_launches(msg.launches)

    @applies
    def on_telemetry_sampled(self, msg: TelemetrySampled) -> None:
        self.overview.show_telemetry(msg.sampler, msg.reading)

    @applies
    def on_plans_loaded(self, msg: PlansLoaded) -> None:
        self.query_one("#plan-table", PlansTable).show(msg.plans)

    @applies
    def on_runs_loaded(self, msg: RunsLoaded) -> None:
        self.runs.show_index(msg.index)

    @applies
    def on_run_detail_loaded(self, msg: RunDetailLoaded) -> None:
        self.runs.show_run(msg.run)

    @applies
    def on_run_diff_loaded(self, msg: RunDiffLoaded) -> None:
        self.runs.show_diff(msg.diff)

    @applies
    def on_log_loaded(self, msg: LogLoaded) -> None:
        self.query_one("#log-table", LogTable).show(msg.events)

    @applies
    def on_load_finished(self, msg: LoadFinished) -> None:
        self.loads += 1
        self.query_one("#status-line", Static).update(
            f"{len(self.hyp_docs)} hypotheses · {self.runs.total} runs · live: updates appear within a second"
        )

    # ------------------------------------------------------------------ the command palette
    def get_system_commands(self, screen: Screen) -> Any:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            if isinstance(b, Binding) and b.action not in ("quit", "toggle_keys") and not b.action.startswith("tab("):
                # "key S", not "[S]": a bracketed letter is markup (S strikes the title out, A vanishes)
                yield SystemCommand(f"{b.description}  (key {b.key})", f"optlog: {b.description.lower()}",
                                    (lambda a=b.action: self.run_action(a)))
        for b in RunsPane.BINDINGS:
            if isinstance(b, Binding):
                key = "/" if b.key == "slash" else b.key
                yield SystemCommand(f"Runs: {b.description}  (key {key})", f"optlog: runs table, {b.description.lower()}",
                                    (lambda a=b.action: self.run_action(a, self.runs)))


def run_tui(chdir: str | None) -> None:
    """The dashboard on the workspace at (or above) `chdir`, the current folder when None."""
    OptlogApp(open_session(chdir, check_settings=False)).run()  # the database opens after the first frame
