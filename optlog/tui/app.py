"""The dashboard: every step of the loop, watched live and done from the keyboard.

Thin face: all data comes from, and every action goes to, the service layer, always in thread
workers (database, git, files and subprocesses block). Another process's changes (an agent's CLI
calls, a launch elsewhere, a hand edit of a hypothesis file) are noticed by polling one cheap change
token twice a second; only then is what's on screen reloaded.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Log, Static, TabbedContent, TabPane, Tree

from optlog.core import posthoc as PH
from optlog.core import runtable as RT
from optlog.core import text as TX
from optlog.core.expr import ExprError
from optlog.core.labels import parse_pairs
from optlog.core.numfmt import fmt_count, fmt_num, fmt_ratio
from optlog.core.report import pareto_view
from optlog.core.spark import sparkline
from optlog.core.statuses import HYP_STATUSES, STATUS_GLYPH, reader_text
from optlog.errors import BadInput
from optlog.service.context import Ctx
from optlog.tui.forms import Field, FormScreen

TODO_NEXT = {"pending": "in_progress", "in_progress": "completed", "completed": "pending", "cancelled": "pending"}
TODO_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
RUN_PAGE = 200
DETAIL_DELAY_S = 0.06  # a detail loads when the cursor has rested this long
OVERVIEW_MIN = (140, 30)  # the terminal size from which the overview is a pane, not a line
OVERVIEW_TODOS = 8


class PlainTable(DataTable):
    """A DataTable whose text cells are plain text: a todo `[x]` or a label `[fp4]` is not markup."""

    def add_row(self, *cells: Any, **kw: Any) -> Any:
        return super().add_row(*(Text(c) if isinstance(c, str) else c for c in cells), **kw)


class RunsTable(PlainTable):
    """The runs table: its keys act on the runs (the app does the work; they show in the footer
    while the table has the focus, and in the command palette)."""

    BINDINGS = [
        Binding("slash", "app.filter_runs", "Filter"),
        Binding("s", "app.sort_runs", "Sort"),
        Binding("S", "app.reverse_runs", "Reverse"),
        Binding("G", "app.group_runs", "Group"),
        Binding("m", "app.mark_run", "Mark"),
        Binding("d", "app.diff_runs", "Diff"),
        Binding("M", "app.choose_metrics", "Metrics"),
        Binding("F", "app.pareto_runs", "Pareto"),
        # a row table does not scroll sideways (no horizontal bar): home/end go to the first/last run
        Binding("home", "scroll_top", "First run", show=False),
        Binding("end", "scroll_bottom", "Last run", show=False),
    ]


class PlotBox(Vertical):
    """Where a plot goes; the plotext widget (and its import) comes with the first plot, not with
    the first frame. Shown only while it has something to show (class `shown`)."""

    def draw(self, fn: Callable[[Any], None]) -> None:
        """Clear the plot (mounting it the first time) and let `fn` draw on its plotext object."""
        from textual_plotext import PlotextPlot  # deferred: plotext only when a chart is drawn

        if not self.children:
            self.mount(PlotextPlot())
        plot = self.query_one(PlotextPlot)
        p = plot.plt
        p.clear_data()
        p.clear_figure()
        fn(p)
        plot.refresh()


def _rows(t: Table, *cells: Any) -> None:
    t.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))


class OptlogApp(App[None]):
    TITLE = "optlog"
    CSS_PATH = "app.tcss"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
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

    @dataclass
    class Loaded(Message):
        what: str
        data: Any

    def __init__(self, ctx: Ctx, poll_s: float = 0.5) -> None:
        super().__init__()
        self.ctx = ctx
        self.poll_s = poll_s
        self.token: Any = None
        self.selected_hyp: str | None = None
        self.selected_run: int | None = None
        self.runs_loaded = 0
        self.runs_total = 0
        # the runs table's view (core.runtable): every run's light row, and what the person chose
        self.run_rows: list[dict[str, Any]] = []
        self.run_metrics: list[str] | None = None  # None: the service's default choice
        self.shown_metrics: list[str] = []
        self.known_metrics: list[str] = []
        self.run_filter = ""
        self._run_pred: Callable[[dict[str, Any]], bool] | None = None
        self.run_sort: tuple[str, bool] = ("id", False)  # column key, descending
        self.run_group: str | None = None
        self.marked: list[int] = []  # at most two: a and b of `run diff`
        self._run_view: list[dict[str, Any]] = []  # filtered, grouped, sorted
        self._run_groups: dict[int, str] = {}  # run id → its group's label, on the group's first row
        self._run_cols: list[str] = []
        self._run_shown: tuple[Any, ...] | None = None  # what the run detail should show: a run, or a diff
        self.hyp_docs: dict[str, Any] = {}
        self.active_launch: int | None = None
        self._launches: list[dict[str, Any]] = []  # live launches, for the overview's launch pane
        self._live: Any = None  # telemetry.live sampler, while a launch runs on this machine
        self._live_series: dict[str, list[float | None]] = {}
        self._live_keys: list[tuple[str, str, str]] = []
        self._ov: dict[str, Any] | None = None
        self.loads = 0  # how many reloads happened (tests wait on it)
        self._detail_timers: dict[str, Any] = {}
        self.detail: dict[str, Any] | None = None  # the hypothesis shown in the detail pane
        ctx.on_notice = self._notice

        # opening the database (SQLAlchemy, pydantic and YAML imports, schema check, launch recovery)
        # starts once the first frame is painted from the index (`quick_tree`): started earlier, it
        # would compete with Textual's own start-up for the interpreter
        self._warm = threading.Thread(target=self._warm_up, name="optlog-warm-up", daemon=True)
        self._full_started = False
        # the first frame's tree, read (stdlib only, ~30 ms) while Textual sets itself up
        self._quick: list[dict[str, Any]] | None = None
        self._quick_thread = threading.Thread(target=self._read_quick, name="optlog-quick-tree", daemon=True)
        self._quick_thread.start()

    def _read_quick(self) -> None:
        from optlog.service.dashboard import quick_tree  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self._quick = quick_tree(self.ctx.ws)
        except Exception:  # noqa: BLE001 - the full load paints it, or says what is wrong
            self._quick = None

    def _warm_up(self) -> None:
        try:
            name = self.ctx.config.name
            self.call_from_thread(setattr, self, "sub_title", name)  # the workspace name
            self.ctx.open()  # the database, identity, recovery and committed evidence (Ctx.open)
            from optlog.service import dashboard, hypotheses, todos  # noqa: F401 # deferred: the service layer (~0.6 s) after the first frame
        except Exception:  # noqa: BLE001 - the first load reports it
            pass

    def _start_full(self) -> None:
        """Open the database and load everything (once): after the first frame, or at once when
        there is no quick tree to paint."""
        if self._full_started:
            return
        self._full_started = True
        self._warm.start()
        self.reload()
        self.set_interval(self.poll_s, self.poll)

    def notify(self, message: str, *args: Any, **kw: Any) -> None:
        """Every notification passes the output rule (an error's text may quote data)."""
        super().notify(TX.shown(str(message)), *args, **kw)

    def _notice(self, text: str) -> None:
        """Narration from the service layer, from whichever thread it came."""
        if threading.get_ident() == self._thread_id:
            self.notify(text)
        else:
            self.call_from_thread(self.notify, text)

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="hyp", id="tabs"):
            with TabPane("Hypotheses", id="hyp"):
                yield Static("", id="overview-line")  # the overview in one line, on a small terminal
                with Horizontal(id="hyp-pane"):
                    yield Tree("hypotheses", id="hyp-tree")
                    with Vertical(id="hyp-right"):
                        with VerticalScroll(id="hyp-detail"):
                            yield Static("Select a hypothesis (↑/↓, enter).", id="hyp-text")
                        yield PlotBox(id="pred-plot")
                    with VerticalScroll(id="overview"):  # what the agent is doing, what is due
                        yield Static("", id="overview-launch")  # the live launch, one line a fact
                        yield Static("", id="overview-telemetry")  # this machine while it runs a launch
                        yield Static("", id="overview-text")
            with TabPane("Todos", id="todos"):
                yield PlainTable(id="todo-table", cursor_type="row", zebra_stripes=True)
            with TabPane("Runs", id="runs"):
                with Vertical(id="runs-pane"):
                    yield Static("", id="runs-bar")  # shown of total, filter, sort, group, marks
                    yield RunsTable(id="runs-table", cursor_type="row", zebra_stripes=True)
                    with VerticalScroll(id="run-detail"):
                        yield Static("", id="run-text")
                    yield PlotBox(id="tel-plot")
                    yield Log(id="launch-box", max_lines=200)
            with TabPane("Plans", id="plans"):
                yield PlainTable(id="plan-table", cursor_type="row", zebra_stripes=True)
            with TabPane("Log", id="log"):
                yield PlainTable(id="log-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="status-line")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.query_one("#hyp-tree", Tree)
        tree.show_root = False
        tree.guide_depth = 2
        self.query_one("#todo-table", DataTable).add_columns("", "id", "priority", "todo", "hypothesis")
        self.query_one("#plan-table", DataTable).add_columns("rank", "id", "score", "status", "title", "why")
        self.query_one("#log-table", DataTable).add_columns("when", "event", "hypothesis", "subject")
        tree.focus()
        self._fit_overview()
        if self._quick_thread.is_alive():
            self.quick_load()
        else:  # read already: the very first frame shows the tree
            self._after_quick()

    @work(thread=True, exclusive=True, group="quick", exit_on_error=False)
    def quick_load(self) -> None:
        self._quick_thread.join()
        self.call_from_thread(self._after_quick)

    def _after_quick(self) -> None:
        """Paint the quick tree if there is one, then (or at once) open the database and load."""
        if self._quick:
            self._show_hyps_quick(self._quick)
        else:
            self._start_full()

    def _show_hyps_quick(self, roots: list[dict[str, Any]]) -> None:
        if self._full_started:
            return  # the full load won the race
        self._paint_tree(TX.shown_tree(roots))
        self.call_after_refresh(self._start_full)

    # ------------------------------------------------------------------ workers
    def run_service(self, fn: Callable[[Ctx], Any], done: str | None = None, then: Callable[[Any], None] | None = None) -> None:
        """Call a service verb in a thread; errors become notifications; reload afterwards."""

        def job() -> None:
            try:
                res = fn(self.ctx)
            except Exception as e:  # noqa: BLE001 - every failure is shown, none crashes the app
                self.call_from_thread(self.notify, str(e), severity="error", timeout=8)
                return
            if done:
                self.call_from_thread(self.notify, done)
            if then is not None:
                self.call_from_thread(then, res)
            self.call_from_thread(self.reload)

        self.run_worker(job, thread=True, group="action", exit_on_error=False)

    def _db_ready(self) -> bool:
        """The database is open (or failed to: the load says so). Before the full start, a reload is
        moot: the full start loads everything anyway."""
        if not self._full_started:
            return False
        self._warm.join()
        return True

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def poll(self) -> None:
        if not self._db_ready():
            return
        from optlog.service.dashboard import change_token  # deferred: the service layer (~0.6 s) after the first frame

        try:
            tok = change_token(self.ctx)
        except Exception:
            return
        if tok != self.token:
            self.token = tok
            self._load_all()
        elif self.active_launch is not None:  # elapsed time and the log move between database writes
            from optlog.service.dashboard import live_launches  # deferred: the service layer (~0.6 s) after the first frame

            try:
                self.post_message(self.Loaded("launches", live_launches(self.ctx)))
            except Exception:  # noqa: BLE001 - the next reload says what is wrong
                pass
        self._sample_live()

    def _sample_live(self) -> None:
        """One reading of this machine while one of the live launches runs here (poll's thread)."""
        here = any(la.get("here") for la in self._launches)
        if not here:
            if self._live is not None:
                self._live.close()
                self._live = None
                self.post_message(self.Loaded("telemetry", None))
            return
        try:
            if self._live is None:
                from optlog.service.dashboard import live_sampler  # deferred: the service layer (~0.6 s) after the first frame

                self._live = live_sampler()
            reading = self._live.read()
        except Exception:  # noqa: BLE001 - telemetry is a view; the launch's own record is the evidence
            return
        self.post_message(self.Loaded("telemetry", (self._live, reading)))

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def reload(self) -> None:
        if not self._db_ready():
            return
        from optlog.service.dashboard import change_token  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self.token = change_token(self.ctx)
        except Exception:
            pass
        self._load_all()

    def _load_all(self) -> None:
        """What is on screen, in the order a person looks: the tree first (one read of the hypothesis
        files, which the overview, the detail and the plans reuse), then todos and the overview,
        launches, the selected detail, the ranked plans, and the runs."""
        from optlog.service import dashboard as D  # deferred: the service layer (~0.6 s) after the first frame
        from optlog.service import todos as T  # deferred: the service layer (~0.6 s) after the first frame

        shown = self.selected_hyp  # None on the first load: the tree's first node loads its own detail
        try:
            hyps = D.hypotheses_view(self.ctx)
            self.post_message(self.Loaded("hyps", hyps))
            todos = T.list_(self.ctx)
            self.post_message(self.Loaded("todos", todos))
            self.post_message(self.Loaded("overview", D.overview(self.ctx, todos, hyps[1])))  # no second read
            self.post_message(self.Loaded("launches", D.live_launches(self.ctx)))
            if shown:
                self.post_message(self.Loaded("hyp-detail", D.hypothesis_detail(self.ctx, shown, hyps[1])))
            self.post_message(self.Loaded("plans", self._plans(hyps[1])))
            # last: every run (0.2-0.6 s at 10,000) is for the Runs tab, not the first screen
            self.post_message(self.Loaded("runs", D.runs_index(self.ctx, self.run_metrics)))
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, f"could not load: {e}", severity="error", timeout=8)
        self.post_message(self.Loaded("done", None))

    def _plans(self, docs: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        from optlog.service import plans as Pl  # deferred: the service layer (~0.6 s) after the first frame

        return list(Pl.list_(self.ctx, docs=docs)["plans"])

    # ------------------------------------------------------------------ applying loaded data
    def on_optlog_app_loaded(self, msg: "OptlogApp.Loaded") -> None:
        try:
            with self.batch_update():
                # the output rule: every string the app shows passes `shown` (no ESC, OSC 52 or bidi
                # override from a run's labels, a commit or a file reaches the terminal)
                getattr(self, f"_show_{msg.what.replace('-', '_')}")(TX.shown_tree(msg.data))
        except NoMatches:  # a load that finished while the app was closing
            pass

    def _show_done(self, _: Any) -> None:
        self.loads += 1
        n_h = len(self.hyp_docs)
        self.query_one("#status-line", Static).update(
            f"{n_h} hypotheses · {self.runs_total} runs · live: updates appear within a second"
        )

    def _show_hyps(self, data: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
        roots, docs = data
        self.hyp_docs = docs
        self._paint_tree(roots, load_detail=True)

    def _paint_tree(self, roots: list[dict[str, Any]], load_detail: bool = False) -> None:
        tree = self.query_one("#hyp-tree", Tree)
        keep = self.selected_hyp
        tree.clear()
        self._tree_labels: list[tuple[Any, dict[str, Any], int]] = []
        width = self._tree_width()
        target = None

        def add(parent: Any, node: dict[str, Any], depth: int) -> None:
            nonlocal target
            kids = node["children_nodes"]
            preds = node["predictions"]
            tn = parent.add(_hyp_label(node, width - _indent(depth)), data=node["id"], expand=True,
                            allow_expand=bool(kids or preds))
            self._tree_labels.append((tn, node, depth))
            if node["id"] == keep:
                target = tn
            for p in preds:  # a leaf per prediction; selecting it selects its hypothesis
                leaf = tn.add_leaf(_pred_label(p, node["id"], width - _indent(depth + 1)), data=node["id"])
                self._tree_labels.append((leaf, {"pred": p, "hyp": node["id"]}, depth + 1))
            for k in kids:
                add(tn, k, depth + 1)

        for r in roots:
            add(tree.root, r, 0)
        if target is not None:
            tree.move_cursor(target)
        elif tree.root.children and keep is None:
            self.selected_hyp = tree.root.children[0].data  # before the move: no debounced detail load
            tree.move_cursor(tree.root.children[0])
            if load_detail:
                self.load_hyp_detail(self.selected_hyp)

    def _tree_width(self) -> int:
        tree = self.query_one("#hyp-tree", Tree)
        return tree.scrollable_content_region.width or 40

    def _relabel_tree(self) -> None:
        """Titles are cut to the tree's width: a resize cuts them again (the nodes stay)."""
        width = self._tree_width()
        for tn, node, depth in getattr(self, "_tree_labels", []):
            w = width - _indent(depth)
            tn.set_label(_pred_label(node["pred"], node["hyp"], w) if "pred" in node else _hyp_label(node, w))

    def on_resize(self, event: events.Resize) -> None:
        self._fit_overview(event.size)  # the event's size: the app's own may not have followed yet
        self.call_after_refresh(self._relabel_tree)  # the tree's width follows the terminal's

    def _fit_overview(self, size: Any = None) -> None:
        """The overview is a pane beside the tree on a large terminal, one line above it on a small
        one (80×24 keeps the tree and the detail readable)."""
        size = size or self.size
        wide = size.width >= OVERVIEW_MIN[0] and size.height >= OVERVIEW_MIN[1]
        self.query_one("#overview").display = wide
        self.query_one("#overview-line").display = not wide
        self.query_one("#hyp-pane").set_class(wide, "-wide")

    def _show_hyp_detail(self, h: dict[str, Any]) -> None:
        if h.get("id") != self.selected_hyp:
            return
        self.detail = h
        self.query_one("#hyp-text", Static).update(_hyp_renderable(h))
        self._plot_prediction(h)

    def _plot_prediction(self, h: dict[str, Any]) -> None:
        """The prediction's plot: each group's metric by level, every measured point marked and
        its repeats' spread as a bar (on a log2 axis for concurrency-like levels); beside it, when
        the verdict tested a quantity against a threshold, that quantity per level (with its
        interval) between the lines of what the prediction expects."""
        plot = self.query_one("#pred-plot", PlotBox)
        series = h.get("plot")
        if not series:
            plot.remove_class("shown")
            return
        plot.add_class("shown")

        xl = series["x"]
        xs = [math.log2(v) for v in series["xv"]] if series.get("log2") else list(range(1, len(xl) + 1))
        thr = series.get("threshold")
        est = series.get("estimates") or []
        expected = thr is not None and any(e is not None for e in est)
        per = series["title"].split(" by ", 1)[-1].split(" (")[0] + (" (log2)" if series.get("log2") else "")

        def groups(plt: Any) -> None:
            # a marker per group besides its colour: the groups stay apart under NO_COLOR
            for (name, ys), color, mark in zip(series["groups"].items(), ("orange", "cyan"), ("●", "■")):
                pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
                if not pts:
                    continue
                plt.plot([p[0] for p in pts], [p[1] for p in pts], label=name, marker="braille", color=color)
                plt.scatter([p[0] for p in pts], [p[1] for p in pts], marker=mark, color=color)
                for x, sp in zip(xs, (series.get("spread") or {}).get(name) or []):
                    if sp:
                        plt.plot([x, x], list(sp), marker="│", color=color)
            plt.xticks(xs, xl)
            plt.xlabel(per)
            plt.title(series["title"])

        def quantity(plt: Any) -> None:
            pts = [(x, e) for x, e in zip(xs, est) if e is not None]
            for x, ci in zip(xs, series.get("ci") or []):
                if ci and len(ci) == 2:
                    plt.plot([x, x], [float(ci[0]), float(ci[1])], marker="│", color="green", yside="right")
            q = series.get("quantity") or "tested"
            plt.scatter([p[0] for p in pts], [p[1] for p in pts], marker="✚", color="green", yside="right",
                        label=f"{q} (right axis)")
            lines = [float(t) for t in (thr if isinstance(thr, list) else [thr])]
            for t in lines:  # drawn as data on the right axis (an hline lands on the left one)
                plt.plot([xs[0], xs[-1]], [t, t], marker="─", color="red", yside="right")
            seen = lines + [p[1] for p in pts] + [float(c) for ci in (series.get("ci") or []) if ci for c in ci]
            lo, hi = min(seen), max(seen)
            pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
            plt.ylim(lo - pad, hi + pad, yside="right")
            plt.title(f"{series['title']}; expected {series.get('expect')}: red lines, right axis")

        def draw(plt: Any) -> None:
            groups(plt)
            if expected:  # the tested quantity on the right-hand axis, between what is expected
                quantity(plt)

        plot.draw(draw)

    def _show_overview(self, ov: dict[str, Any]) -> None:
        self._ov = ov
        self._paint_overview()

    def _paint_overview(self) -> None:
        if self._ov is None:
            return
        box = self.query_one("#overview-launch", Static)
        box.display = bool(self._launches)
        if self._launches:
            width = box.size.width or self.query_one("#overview").size.width - 2
            box.update(Text("\n").join(_launch_text(la, width if width > 10 else 60) for la in self._launches))
        self.query_one("#overview-text", Static).update(_overview_text(self._ov))
        self.query_one("#overview-line", Static).update(_overview_line(self._ov, self._launches))

    def _show_todos(self, todos: list[dict[str, Any]]) -> None:
        t = self.query_one("#todo-table", DataTable)
        cur = t.cursor_row
        t.clear()
        for td in todos:
            t.add_row(TODO_MARK.get(td["status"], "[?]"), td["id"], td.get("priority") or "", td["content"],
                      td.get("hypothesis") or "", key=td["id"])
        if todos:
            t.move_cursor(row=min(cur, len(todos) - 1))

    def _show_runs(self, ix: dict[str, Any]) -> None:
        self.run_rows = ix["rows"]
        self.runs_total = len(self.run_rows)
        self.shown_metrics = ix["metrics"]
        self.known_metrics = ix["known_metrics"]
        self._render_runs(keep=True)

    def _render_runs(self, keep: bool = False) -> None:
        """Filter, group and sort the runs in memory (core.runtable), rebuild the columns (a column
        per label that varies among the shown runs, one per chosen metric) and show the first page.
        With `keep` (a reload: new runs came) the rows loaded so far stay loaded and the cursor on
        the selected run; otherwise (a new order or filter) the cursor goes to the top."""
        rows = [r for r in self.run_rows if self._run_pred(r)] if self._run_pred else list(self.run_rows)
        cols = RT.columns(rows, self.shown_metrics)
        col, desc = self.run_sort
        if col not in cols:
            col, desc = self.run_sort = ("id", False)
        view: list[dict[str, Any]] = []
        self._run_groups = {}
        for name, members in RT.group_rows(RT.sort_rows(rows, col, desc), self.run_group):
            if name is not None and members:
                self._run_groups[members[0]["id"]] = f"{name} ({len(members)})"
            view.extend(members)
        self._run_view = view
        self._run_cols = cols
        t = self.query_one("#runs-table", DataTable)
        t.clear(columns=True)
        if self.run_group:
            t.add_column(Text(self.run_group, style="bold"), key="group")
        t.add_column("", key="mark", width=1)
        for c in cols:
            t.add_column(self._col_header(c), key=c)
        want = self.selected_run if keep else None
        n = max(RUN_PAGE, self.runs_loaded) if keep else RUN_PAGE
        self.runs_loaded = 0
        self._add_run_rows(n)
        at = next((i for i, r in enumerate(view[:self.runs_loaded]) if r["id"] == want), None)
        if view:
            t.move_cursor(row=at or 0)
            self.selected_run = view[at or 0]["id"]  # no highlight event when the row index stays
        else:
            self.selected_run = None
            self.query_one("#run-text", Static).update(Text("no runs match the filter" if self._run_pred else "no runs yet",
                                                            style="dim"))
        self._runs_bar()

    def _col_header(self, c: str) -> Text:
        col, desc = self.run_sort
        name = {"id": "id", "flags": "⚑", "status": "status"}.get(c) or c[2:]
        arrow = (" ▼" if desc else " ▲") if c == col else ""
        return Text(name + arrow, style="bold" if c == col else ("cyan" if c.startswith("l:") else ""),
                    justify="right" if c.startswith("m:") or c == "id" else "left")

    def _add_run_rows(self, upto: int) -> None:
        """Add the view's rows up to `upto` (a page at a time: a DataTable of 10,000 rows is slow to build)."""
        t = self.query_one("#runs-table", DataTable)
        for r in self._run_view[self.runs_loaded:upto]:
            cells: list[Any] = []
            if self.run_group:
                g = self._run_groups.get(r["id"])
                cells.append(Text(g, style="bold") if g else "")
            cells.append(self._mark_cell(r["id"]))
            cells.extend(_run_cell(r, c) for c in self._run_cols)
            t.add_row(*cells, key=str(r["id"]))
        self.runs_loaded = t.row_count

    def _mark_cell(self, rid: int) -> Text:
        if rid in self.marked:
            return Text("ab"[self.marked.index(rid)], style="bold reverse")
        return Text("")

    def _runs_bar(self) -> None:
        shown, total = len(self._run_view), self.runs_total
        col, desc = self.run_sort
        # separators end a span, never start one (see `_hyp_label`)
        parts: list[tuple[str, str]] = [(f"{fmt_count(shown)} of {fmt_count(total)} runs" if shown != total else f"{fmt_count(total)} runs", "bold")]
        if self.run_filter:
            parts += [("filter ", "dim"), (self.run_filter, "yellow")]
        parts += [("sort ", "dim"), ((col if col in RT.FIXED else col[2:]) + (" ▼" if desc else " ▲"), "")]
        if self.run_group:
            parts += [("by ", "dim"), (self.run_group, "")]
        if self.marked:
            parts += [("marked ", "dim"), (" ".join(f"{'ab'[i]}={m}" for i, m in enumerate(self.marked)), "bold")]
        parts += [("   ".join(f"{g} {n}" for n, g in RT.FLAG_GLYPHS), "dim")]
        out = Text.assemble(*((t + ("   " if i + 1 < len(parts) and not t.endswith(" ") else ""), st)
                              for i, (t, st) in enumerate(parts)))
        out.no_wrap = True
        out.overflow = "ellipsis"
        self.query_one("#runs-bar", Static).update(out)

    def _show_run_detail(self, r: dict[str, Any]) -> None:
        if self._run_shown != ("run", r["id"]):
            return  # a diff was asked for, or the cursor moved on, since this load started
        self.query_one("#run-text", Static).update(_run_renderable(r))
        plot = self.query_one("#tel-plot", PlotBox)
        series = {k: v for k, v in ((r.get("telemetry") or {}).get("series") or {}).items() if v}
        if not series:  # a recorded run has no samples: no empty frame
            plot.remove_class("shown")
            return
        plot.add_class("shown")

        def draw(plt: Any) -> None:
            for name, pts in list(series.items())[:3]:
                if pts:
                    plt.plot([p[0] for p in pts], [p[1] for p in pts], label=name, marker="braille")
            plt.title(f"run {r['id']} telemetry")

        plot.draw(draw)

    def _show_telemetry(self, data: tuple[Any, dict[str, float]] | None) -> None:
        box = self.query_one("#overview-telemetry", Static)
        if data is None:
            self._live_series, self._live_keys = {}, []
            box.display = False
            return
        sampler, reading = data
        for k in set(reading) | set(self._live_series):
            self._live_series.setdefault(k, [None] * max((len(v) for v in self._live_series.values()), default=0))
            self._live_series[k] = (self._live_series[k] + [reading.get(k)])[-LIVE_POINTS:]
        self._live_keys = sampler.series({k for k, v in self._live_series.items() if any(x is not None for x in v)})
        box.display = bool(self._live_keys)
        width = box.size.width or self.query_one("#overview").size.width - 2
        box.update(_telemetry_text(sampler.kind, self._live_keys, self._live_series, width if width > 20 else 60))

    def _show_launches(self, launches: list[dict[str, Any]]) -> None:
        self._launches = launches
        self._paint_overview()
        box = self.query_one("#launch-box", Log)
        if not launches:
            box.remove_class("shown")
            self.active_launch = None
            return
        box.add_class("shown")
        la = launches[-1]
        self.active_launch = la["id"]
        pr = la["progress"]
        box.clear()
        box.write_line(f"launch {la['id']} {la['status']} {la.get('spec') or ''}  (c: cancel)")
        for k in ("done", "total", "current", "elapsed_s", "last_metric"):
            if k in pr:
                box.write_line(f"  {k}: {pr[k]}")
        for line in _study_lines(la.get("study")):
            box.write_line(line)
        for line in la.get("log_tail", [])[-5:]:
            box.write_line(f"  | {line}")

    def _show_plans(self, plans: list[dict[str, Any]]) -> None:
        t = self.query_one("#plan-table", DataTable)
        t.clear()
        for p in plans:
            t.add_row(str(p.get("rank") or "–"), str(p["id"]), fmt_num(p.get("score")), p.get("status", ""),
                      p.get("title", ""), p.get("reason") or "", key=str(p["id"]))

    def _show_log(self, events: list[dict[str, Any]]) -> None:
        t = self.query_one("#log-table", DataTable)
        t.clear()
        for e in events:
            t.add_row(str(e.get("at", ""))[:19], e.get("event") or "", e.get("hypothesis") or "", e.get("subject", ""))

    # ------------------------------------------------------------------ selection
    @on(Tree.NodeHighlighted, "#hyp-tree")
    def _hyp_highlighted(self, event: Tree.NodeHighlighted) -> None:
        hid = event.node.data
        if hid and hid != self.selected_hyp:
            self.selected_hyp = hid
            self._debounced("hyp", lambda: self.load_hyp_detail(hid))

    def _debounced(self, what: str, fn: Callable[[], object], delay: float = DETAIL_DELAY_S) -> None:
        """Load a detail once the cursor rests: holding ↓ repaints the table, not every detail."""
        t = self._detail_timers.pop(what, None)
        if t is not None:
            t.stop()
        self._detail_timers[what] = self.set_timer(delay, fn)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_hyp_detail(self, hid: str) -> None:
        from optlog.service import dashboard as D  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self.post_message(self.Loaded("hyp-detail", D.hypothesis_detail(self.ctx, hid)))
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, str(e), severity="error")

    @on(DataTable.RowHighlighted, "#runs-table")
    def _run_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        rid = int(event.row_key.value)
        if rid != self._cursor_run(event.data_table) or (rid == self.selected_run and self._run_shown and self._run_shown[0] == "diff"):
            return  # a late event (keys typed ahead): the cursor is elsewhere, or a diff was asked on this row
        self.selected_run = rid
        self._run_shown = ("run", rid)
        self._debounced("run", lambda: self.load_run_detail(rid))
        t = event.data_table
        if event.cursor_row >= t.row_count - 20 and self.runs_loaded < len(self._run_view):
            self._add_run_rows(self.runs_loaded + RUN_PAGE)  # the next page, from memory

    @on(DataTable.HeaderSelected, "#runs-table")
    def _run_header(self, event: DataTable.HeaderSelected) -> None:
        col = str(event.column_key.value)
        if col in self._run_cols:
            cur, desc = self.run_sort
            self.run_sort = (col, not desc if col == cur else col.startswith("m:"))
            self._render_runs()

    @work(thread=True, exclusive=True, group="run-detail", exit_on_error=False)
    def load_run_detail(self, rid: int) -> None:
        from optlog.service import evidence as E  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self.post_message(self.Loaded("run-detail", E.show_run(self.ctx, rid)))
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, str(e), severity="error")

    @work(thread=True, exclusive=True, group="run-diff", exit_on_error=False)
    def load_run_diff(self, a: int, b: int) -> None:
        from optlog.service.verdicts import runs_diff  # deferred: the service layer (~0.6 s) after the first frame

        try:
            self.post_message(self.Loaded("run-diff", runs_diff(self.ctx, a, b)))
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, str(e), severity="error")

    def _show_run_diff(self, d: dict[str, Any]) -> None:
        if self._run_shown != ("diff", d["a"], d["b"]):
            return  # the cursor moved on
        self.query_one("#run-text", Static).update(_diff_renderable(d))
        self.query_one("#tel-plot", PlotBox).remove_class("shown")

    def _selected_todo(self) -> str | None:
        t = self.query_one("#todo-table", DataTable)
        if t.row_count == 0:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key
        return str(key.value) if key and key.value is not None else None

    # ------------------------------------------------------------------ actions
    def action_tab(self, tab: str) -> None:
        self.query_one("#tabs", TabbedContent).active = tab
        focus = {"hyp": "#hyp-tree", "todos": "#todo-table", "runs": "#runs-table", "plans": "#plan-table", "log": "#log-table"}
        self.query_one(focus[tab]).focus()
        if tab == "log":
            self.action_show_log()

    def action_reload(self) -> None:
        self.reload()

    # ------------------------------------------------------------------ the runs table's own keys
    def _on_runs(self) -> bool:
        if self.query_one("#tabs", TabbedContent).active != "runs":
            self.action_tab("runs")
        return True

    def _cursor_run(self, table: Any = None) -> int | None:
        """The run under the cursor (the table's own state: `selected_run` follows it by events).
        `table`: the event's own, for an event that arrives while the app is closing."""
        t = table if table is not None else self.query_one("#runs-table", DataTable)
        if t.row_count == 0:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key
        return int(key.value) if key and key.value is not None else None

    def action_filter_runs(self) -> None:
        """`/`: the runs that match a selector, as `--a` takes it (`config=tp8 concurrency=64`) or a
        condition as `--where` takes it (`concurrency >= 64 and status == succeeded`)."""
        self._on_runs()

        def go(v: dict[str, Any]) -> None:
            text = v["filter"].strip()
            try:
                pred = RT.parse_filter(text)
            except (BadInput, ExprError) as e:
                self.notify(f"filter: {e}", severity="error", timeout=8)
                return
            self.run_filter, self._run_pred = text, pred
            self._render_runs()

        self._ask("Filter runs (empty: all runs)", [
            Field("filter", "K=V … as --a takes them, or a condition as --where takes it", self.run_filter,
                  placeholder="config=tp8   or   concurrency >= 64 and status == succeeded")], go)

    def action_sort_runs(self) -> None:
        """`s`: sort by the next column (metrics largest first); `S` reverses; a header click sorts by it."""
        self._on_runs()
        cols = list(self._run_cols)
        if not cols:
            return
        cur, _ = self.run_sort
        nxt = cols[(cols.index(cur) + 1) % len(cols)] if cur in cols else cols[0]
        self.run_sort = (nxt, nxt.startswith("m:"))
        self._render_runs()

    def action_reverse_runs(self) -> None:
        self._on_runs()
        col, desc = self.run_sort
        self.run_sort = (col, not desc)
        self._render_runs()

    def action_group_runs(self) -> None:
        """`G`: no groups → by launch → by hypothesis → no groups."""
        self._on_runs()
        order = [None, *RT.GROUPS]
        self.run_group = order[(order.index(self.run_group) + 1) % len(order)]
        self._render_runs()

    def action_mark_run(self) -> None:
        """`m`: mark the selected run (a, then b; a third mark replaces the oldest), again to unmark."""
        self._on_runs()
        rid = self._cursor_run()
        if rid is None:
            return
        before = list(self.marked)
        if rid in self.marked:
            self.marked.remove(rid)
        else:
            self.marked = (self.marked + [rid])[-2:]
        t = self.query_one("#runs-table", DataTable)
        for m in set(before) | set(self.marked):
            if str(m) in t.rows:
                t.update_cell(str(m), "mark", self._mark_cell(m))
        self._runs_bar()

    def action_diff_runs(self) -> None:
        """`d`: `run diff` of the two marked runs (or the marked one against the selected one)."""
        self._on_runs()
        pair = list(self.marked)
        cur = self._cursor_run()
        if len(pair) == 1 and cur is not None and cur != pair[0]:
            pair.append(cur)
        if len(pair) != 2:
            self.notify("mark two runs with m (or one, and select the other)", severity="warning")
            return
        t = self._detail_timers.pop("run", None)
        if t is not None:  # the selected run's detail would replace the diff
            t.stop()
        self.selected_run = cur
        self._run_shown = ("diff", pair[0], pair[1])
        self.load_run_diff(pair[0], pair[1])

    def action_pareto_runs(self) -> None:
        """`F`: the shown serving runs as tokens/s per user against tokens/s per GPU, with the Pareto
        front (the runs no other shown run beats on both), as `vllm bench sweep plot_pareto` draws it."""
        self._on_runs()
        pv = pareto_view(self._run_view)
        if len(pv["points"]) < 2:
            self.notify("the Pareto view needs two shown runs with output_throughput and a concurrency "
                        "(or median_tpot_ms)", severity="warning", timeout=8)
            return
        self._run_shown = ("pareto",)
        varying = RT.varying_labels(self._run_view)
        text = Text()
        text.append(f"Pareto front of {len(pv['points'])} shown runs", style="bold")
        text.append("  (output tok/s per user against per GPU; GPUs from the gpus or tp×pp×dp labels, else 1)\n", style="dim")
        for p in pv["front"]:
            lab = " ".join(f"{k}={p['labels'][k]}" for k in varying if k in p["labels"])
            text.append(f"  run {p['id']:<6} {fmt_num(p['per_user']):>9} /user  {fmt_num(p['per_gpu']):>9} /GPU  {lab}\n")
        self.query_one("#run-text", Static).update(text)
        plot = self.query_one("#tel-plot", PlotBox)
        plot.add_class("shown")
        on = {p["id"] for p in pv["front"]}
        rest = [p for p in pv["points"] if p["id"] not in on]

        def draw(plt: Any) -> None:
            if rest:
                plt.scatter([p["per_gpu"] for p in rest], [p["per_user"] for p in rest], label="runs", marker="dot")
            plt.plot([p["per_gpu"] for p in pv["front"]], [p["per_user"] for p in pv["front"]],
                     label="Pareto front", marker="hd")
            plt.xlabel("output tok/s per GPU")
            plt.ylabel("output tok/s per user")
            plt.title("Pareto view of the shown runs")

        plot.draw(draw)

    def action_choose_metrics(self) -> None:
        """`M`: which metrics have a column (empty: the default, the predictions' metrics first)."""
        self._on_runs()

        def go(v: dict[str, Any]) -> None:
            want = [x.strip() for x in v["metrics"].replace(" ", ",").split(",") if x.strip()]
            unknown = [m for m in want if m not in self.known_metrics]
            if unknown:
                hint = {m: get_close_matches(m, self.known_metrics, 1) for m in unknown}
                self.notify("no run has " + ", ".join(m + (f" (did you mean {h[0]}?)" if h else "") for m, h in hint.items()),
                            severity="warning", timeout=8)
            self.run_metrics = [m for m in want if m in self.known_metrics] or None
            self.reload()

        known = ", ".join(self.known_metrics[:12]) + (" …" if len(self.known_metrics) > 12 else "")
        self._ask("Metric columns", [Field("metrics", f"Comma-separated (the runs have: {known})",
                                           ", ".join(self.shown_metrics))], go)

    def _ask(self, title: str, fields: list[Field], then: Callable[[dict[str, Any]], None]) -> None:
        def cb(vals: dict[str, Any] | None) -> None:
            if vals is not None:
                then(vals)

        self.push_screen(FormScreen(title, fields), cb)

    def action_add_hypothesis(self, parent: str | None = None) -> None:
        from optlog.service import hypotheses as H  # deferred: the service layer (~0.6 s) after the first frame

        title = f"New hypothesis (pivot from {parent})" if parent else "New hypothesis"
        self._ask(title, [Field("title", "Title", required=True), Field("statement", "Statement"),
                          Field("rationale", "Rationale"), Field("rival", "Rival id (optional)")],
                  lambda v: self.run_service(
                      lambda c: H.add(c, v["title"], statement=v["statement"], rationale=v["rationale"],
                                      parent=parent, rivals=tuple(x for x in [v["rival"].strip()] if x)),
                      done="hypothesis added"))

    def action_pivot(self) -> None:
        if not self.selected_hyp:
            self.notify("select the hypothesis to pivot from", severity="warning")
            return
        self.action_add_hypothesis(parent=self.selected_hyp)

    def action_add_prediction(self) -> None:
        hid = self.selected_hyp
        if not hid:
            self.notify("select a hypothesis first", severity="warning")
            return

        def go(v: dict[str, Any]) -> None:
            from optlog.service import predictions as P  # deferred: the service layer (~0.6 s) after the first frame

            # the form's "K=V, K=V" text is this face's syntax: parsed here, the verb takes typed selectors
            sel = lambda s, f: parse_pairs([x.strip() for x in s.split(",") if x.strip()], f)  # noqa: E731
            self.run_service(lambda c: P.add(c, hid, expect=v["expect"], metric=v["metric"] or None,
                                             a=sel(v["a"], "--a"), b=sel(v["b"], "--b"), where=v["where"] or None,
                                             per=v["per"] or None, margin=float(v["margin"]) if v["margin"] else None),
                             done="prediction added")

        self._ask(f"New prediction for {hid}", [
            Field("expect", "Expression (a > b, a / b in [0.3, 0.6], …)", required=True),
            Field("metric", "Metric", "total_token_throughput"),
            Field("a", "Group a (K=V, comma-separated)", placeholder="config=tp4pp2"),
            Field("b", "Group b (K=V, comma-separated)", placeholder="config=tp8"),
            Field("per", "Judged per label", "concurrency"),
            Field("where", "Where (optional)"),
            Field("margin", "Margin (optional)"),
        ], go)

    def action_add_note(self) -> None:
        from optlog.service import evidence as E  # deferred: the service layer (~0.6 s) after the first frame

        hid = self.selected_hyp
        self._ask(f"New note{' on ' + hid if hid else ''}", [Field("text", "Note", required=True), Field("link", "Link (optional)")],
                  lambda v: self.run_service(lambda c: E.add_note(c, v["text"], hid, v["link"] or None), done="note added"))

    def action_add_todo(self) -> None:
        from optlog.service import todos as T  # deferred: the service layer (~0.6 s) after the first frame

        hid = self.selected_hyp
        self._ask("New todo", [Field("content", "Todo", required=True),
                               Field("priority", "Priority", "medium", choices=["high", "medium", "low"]),
                               Field("hypothesis", "Hypothesis (optional)", hid or "")],
                  lambda v: self.run_service(lambda c: T.add(c, v["content"], v["priority"], v["hypothesis"] or None),
                                             done="todo added"))

    def _todo_status(self, to: Callable[[str], str]) -> None:
        from optlog.service import todos as T  # deferred: the service layer (~0.6 s) after the first frame

        tid = self._selected_todo()
        if tid is None:
            self.notify("no todo selected (2: todos)", severity="warning")
            return
        self.run_service(lambda c: T.set_(c, tid, to(next(t["status"] for t in T.list_(c) if t["id"] == tid))))

    def action_advance_todo(self) -> None:
        if self.query_one("#tabs", TabbedContent).active != "todos":
            return
        self._todo_status(lambda s: TODO_NEXT.get(s, "pending"))

    def action_cancel_todo(self) -> None:
        self._todo_status(lambda s: "cancelled")

    def action_verdict(self) -> None:
        from optlog.service import verdicts as V  # deferred: the service layer (~0.6 s) after the first frame

        def summary(res: dict[str, Any]) -> None:
            lines = [f"{r['hypothesis']}: {r['status']}" for r in res.get("results", [])]
            self.notify("\n".join(lines) or "no predictions to judge", title="verdict", timeout=8)

        self.run_service(lambda c: V.evaluate(c, all=True), then=summary)

    def action_next_experiment(self) -> None:
        """`optlog next` for the selected hypothesis (all pairs without one): the best candidate of
        each pair, and the spec it wrote (service.nextexp; nothing is launched)."""
        from optlog.service import nextexp as NX  # deferred: the service layer (~0.6 s) after the first frame

        hid = self.selected_hyp

        def summary(res: dict[str, Any]) -> None:
            lines = []
            for e in res.get("pairs", []):
                c = e["candidates"][0] if e["candidates"] else None
                lines.append(f"{e['hypothesis']} vs {e['other']}: {e['state']}"
                             + (f"; vary {c['axis']} to {', '.join(map(str, c['levels']))}" if c else "")
                             + (f"; wrote {e['spec']}" if e.get("spec") else "")
                             + ("; missing: " + "; ".join(e["missing"][:2]) if e.get("missing") else ""))
            self.notify("\n".join(lines) or res.get("note") or "no rival or parent to tell apart",
                        title="next experiment", timeout=12)

        self.run_service(lambda c: NX.analyse(c, hid), then=summary)

    def action_override(self) -> None:
        from optlog.service import hypotheses as H  # deferred: the service layer (~0.6 s) after the first frame

        hid = self.selected_hyp
        if not hid:
            self.notify("select a hypothesis first", severity="warning")
            return
        self._ask(f"Override the status of {hid}", [Field("status", "Status", choices=list(HYP_STATUSES)),
                                                     Field("why", "Why", required=True)],
                  lambda v: self.run_service(lambda c: H.set_status(c, hid, v["status"], v["why"]), done="status set"))

    def action_invalidate(self) -> None:
        from optlog.service import verdicts as V  # deferred: the service layer (~0.6 s) after the first frame

        rid = self.selected_run
        if rid is None:
            self.notify("select a run first (3: runs)", severity="warning")
            return
        self._ask(f"Invalidate run {rid}", [Field("why", "Why is this run wrong?", required=True)],
                  lambda v: self.run_service(lambda c: V.invalidate(c, rid, v["why"]), done=f"run {rid} invalidated"))

    def action_launch(self) -> None:
        from optlog.service import launch as Lh  # deferred: the service layer (~0.6 s) after the first frame

        def go(v: dict[str, Any]) -> None:
            spec = v["spec"].strip()
            self.run_service(lambda c: Lh.launch(c, spec, hypothesis=v["hypothesis"] or None, detach=True),
                             done="launch started")
            self.action_tab("runs")

        self._ask("Launch a run spec", [Field("spec", "Spec file", "runs/", required=True),
                                        Field("hypothesis", "Hypothesis (optional)", self.selected_hyp or "")], go)

    def action_cancel_launch(self) -> None:
        from optlog.service import launch as Lh  # deferred: the service layer (~0.6 s) after the first frame

        lid = self.active_launch
        if lid is None:
            self.notify("no launch is running", severity="warning")
            return
        self.run_service(lambda c: Lh.cancel(c, f"L{lid}"), done=f"launch {lid} cancelled")

    def action_add_plan(self) -> None:
        from optlog.service import plans as Pl  # deferred: the service layer (~0.6 s) after the first frame

        def go(v: dict[str, Any]) -> None:
            needs = tuple(x.strip() for x in v["needs"].split(",") if x.strip())
            self.run_service(lambda c: Pl.add(c, v["title"], gain=v["gain"], effort=v["effort"],
                                              confidence=v["confidence"], needs=needs), done="plan added")

        self._ask("New improvement plan", [Field("title", "Title", required=True),
                                           Field("gain", "Gain range (e.g. 10-30%)", required=True),
                                           Field("effort", "Effort", "M", choices=["S", "M", "L"]),
                                           Field("confidence", "Confidence 0-1", "0.5", required=True),
                                           Field("needs", "Needs hypotheses (comma-separated)", self.selected_hyp or "")], go)

    def action_render_plans(self) -> None:
        from optlog.service import plans as Pl  # deferred: the service layer (~0.6 s) after the first frame

        self.run_service(lambda c: Pl.render(c), done="plans rendered and committed")

    def action_report(self) -> None:
        from optlog.service import report as Rp  # deferred: the service layer (~0.6 s) after the first frame

        self.run_service(lambda c: Rp.write(c), then=lambda r: self.notify(f"report written: {r.get('file', '')}"))

    @work(thread=True, exclusive=True, group="log", exit_on_error=False)
    def action_show_log(self) -> None:
        try:
            from optlog.service import history as Hi  # deferred: the service layer (~0.6 s) after the first frame

            events = Hi.log(self.ctx, None).get("events", [])
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, f"log: {e}", severity="error")
            return
        self.post_message(self.Loaded("log", events))
        self.call_from_thread(setattr, self.query_one("#tabs", TabbedContent), "active", "log")

    def get_system_commands(self, screen: Screen) -> Any:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            if isinstance(b, Binding) and b.action not in ("quit",) and not b.action.startswith("tab("):
                # "key S", not "[S]": a bracketed letter is markup (S strikes the title out, A vanishes)
                yield SystemCommand(f"{b.description}  (key {b.key})", f"optlog: {b.description.lower()}",
                                    (lambda a=b.action: self.run_action(a)))
        for b in RunsTable.BINDINGS:
            if isinstance(b, Binding) and b.action.startswith("app."):
                key = "/" if b.key == "slash" else b.key
                yield SystemCommand(f"Runs: {b.description}  (key {key})", f"optlog: runs table, {b.description.lower()}",
                                    (lambda a=b.action.removeprefix("app."): self.run_action(a)))


def _todo_doing(t: dict[str, Any]) -> str:
    """A todo as the agent says it: its `activeForm` ("Benchmarking tp8") while in progress."""
    return (t.get("activeForm") if t["status"] == "in_progress" else None) or t["content"]


def _dur(s: float | None) -> str:
    if s is None:
        return "–"
    s = int(round(s))
    h, m, sec = s // 3600, s // 60 % 60, s % 60
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def _point(la: dict[str, Any]) -> tuple[int, int]:
    """(the point being measured, of how many): done + 1 while a point runs."""
    return la["done"] + (1 if la.get("current") else 0), la["total"]


def _bar(done: int, total: int, width: int = 16) -> str:
    full = round(width * done / total) if total else 0
    return "█" * full + "░" * (width - full)


_LOG_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)\.\d+Z ")


LIVE_POINTS = 120  # readings kept for the sparklines (a minute at the default poll)


def _telemetry_text(kind: str, keys: list[tuple[str, str, str]], series: dict[str, list[float | None]],
                    width: int = 60) -> Text:
    """This machine's live series as sparklines: `power  ▁▂▅▇█  412 W` (GPU) or load and CPU use."""
    out = Text()
    out.append("This machine, live " + ("(GPUs)" if kind == "gpu" else "(CPU)") + "\n", style="bold")
    for key, label, unit in keys:
        vals = series.get(key) or []
        last = next((v for v in reversed(vals) if v is not None), None)
        now = (fmt_num(last) + (f" {unit}" if unit else "")) if last is not None else "–"
        out.append(f"{label:<9}", style="dim")
        w = max(8, width - 9 - 12)
        out.append(sparkline(vals, w).rjust(w), style="cyan")  # the newest reading beside its value
        out.append(f" {now}\n")
    return out


def _study_lines(st: dict[str, Any] | None) -> list[str]:
    """An optlog tune launch's study (service.tune.live_summary): its trials by state, then its best
    so far (the front so far, with several objectives), one line each, shortest first."""
    if not st:
        return []
    states = ", ".join(f"{n} {k}" for k, n in sorted(st["states"].items(), key=lambda kv: (kv[0] != "complete", kv[0])))
    out = [f"study {st['study']}: {st['trials']} trial(s)" + (f" ({states})" if states else "")]
    objs = st.get("objectives") or []
    best = st.get("best") or []
    if not best:
        return [*out, "no feasible completed trial yet"]
    what = "best" if len(st.get("directions") or []) == 1 else "front"
    out.append(f"{what} so far" + (" (re-measured):" if st.get("remeasured") else " (first readings):"))
    for b in best:
        vals = (b.get("remeasured") or {}).get("values") or b.get("values") or []
        out.append(f"  #{b['number']} " + " ".join(f"{k}={v}" for k, v in b["params"].items()) + " → "
                   + ", ".join(f"{m}={fmt_num(v)}" for m, v in zip(objs, vals)))
    return out


def _launch_text(la: dict[str, Any], width: int = 60) -> Text:
    """The live launch as the overview shows it: the point of N with its labels, elapsed and left,
    the failures so far (wrapped: what failed matters), the log's last lines (cut to `width`)."""
    out = Text()
    out.append(f"Launch L{la['id']}  ", style="bold")
    out.append(f"{la['status']}  ", style="yellow")
    out.append(f"{la.get('spec') or ''}\n", style="dim")
    n, total = _point(la)
    between = not la.get("current") or n > total
    out.append((f"{la['done']} of {total} points done  " if between else f"point {n} of {total}  ") if total
               else "starting  ", style="bold")
    out.append(_bar(la["done"], total) + "\n" if total else "\n", style="green")
    cur = la.get("current") or {}
    if cur.get("labels"):
        out.append("now: ", style="dim")
        out.append(_cut(" ".join(f"{k}={v}" for k, v in cur["labels"].items()), width - 5 - 12) + f"  (run {cur.get('run')})\n")
    out.append("elapsed ", style="dim")
    out.append(_dur(la.get("elapsed_s")) + "  ")
    out.append("left ", style="dim")
    out.append(("~" + _dur(la["remaining_s"])) if la.get("remaining_s") is not None else "– (after the first point)")
    out.append("   c: cancel\n", style="dim")
    for i, line in enumerate(_study_lines(la.get("study"))):
        out.append(_cut(line, width) + "\n", style="bold" if i == 0 else "")
    for f in la.get("failed") or []:
        # an error is several lines (what failed, then a stderr tail): its first and last say it
        lines = [ln.strip() for ln in (f.get("error") or "").splitlines() if ln.strip() and not ln.startswith("---")]
        said = lines[0] + (f" … {lines[-1]}" if len(lines) > 1 else "") if lines else ""
        out.append(f"✘ run {f['id']} failed: ", style="red bold")
        out.append(_cut(said, 160) + (f" ({f['cause']})" if f.get("cause") else "") + "\n", style="red")
    if la.get("failed_total", 0) > len(la.get("failed") or []):
        out.append(f"  … {la['failed_total']} failed in all\n", style="red")
    for line in la.get("log_tail") or []:
        out.append("│ ", style="dim")  # the log's own ISO stamp, cut to the time of day
        out.append(_cut(_LOG_STAMP.sub(r"\1 ", line), width - 2) + "\n", style="dim")
    return out


def _overview_text(ov: dict[str, Any]) -> Text:
    """The overview pane below the live launch: the agent's open todos, the verdicts due, the latest
    verdicts."""
    out = Text()
    todos = ov["todos"]
    out.append(f"Agent's todos  {len(todos)} open of {ov['todos_total']}\n", style="bold")
    for t in todos[:OVERVIEW_TODOS]:
        doing = t["status"] == "in_progress"
        out.append(f"{TODO_MARK[t['status']]} ", style="yellow" if doing else "dim")
        out.append(_todo_doing(t) + (f"  ({t['hypothesis']})" if t.get("hypothesis") else "") + "\n",
                   style="bold" if doing else "")
    if len(todos) > OVERVIEW_TODOS:
        out.append(f"  … {len(todos) - OVERVIEW_TODOS} more (2: todos)\n", style="dim")
    if not todos:
        out.append("  none open\n", style="dim")
    out.append("\nVerdict due\n", style="bold")
    for d in ov["due"]:
        out.append("! ", style="yellow")
        out.append(f"{d['id']}  ", style="bold")
        out.append(f"evidence {str(d['evidence_at'])[:16]}, verdict {str(d.get('verdict_at') or 'none')[:16]}\n",
                   style="dim")
    if not ov["due"]:
        out.append("  none: every verdict is current\n", style="dim")
    out.append("\nLatest verdicts\n", style="bold")
    for v in ov["verdicts"]:
        out.append(f"{STATUS_GLYPH.get(v['status'], ' ')} ", style=_status_style(v["status"]))
        out.append(f"{v['hypothesis']}  ", style="bold")
        out.append(f"{v['status']}  ", style=_status_style(v["status"]))
        out.append(f"{str(v['at'])[:16]}\n", style="dim")
        out.append(f"  {reader_text(v['summary'], v['status'])}\n")
    if not ov["verdicts"]:
        out.append("  none yet (v: verdict)\n", style="dim")
    out.rstrip()
    return out


def _overview_line(ov: dict[str, Any], launches: list[dict[str, Any]] | None = None) -> Text:
    """The overview in one line: the live launch's point of N, time left and failures, what the
    agent does now, how many todos are open, what is due, the newest verdict. Separators end a
    span (see `_hyp_label`)."""
    todos = ov["todos"]
    doing = [t for t in todos if t["status"] == "in_progress"]
    parts: list[tuple[str, str]] = []
    for la in launches or []:
        n, total = _point(la)
        left = la.get("remaining_s")
        parts += [(f"L{la['id']} ", "bold"), (f"{n}/{total} ", "yellow"),
                  (_dur(la.get("elapsed_s")) + (f" ~{_dur(left)} left" if left is not None else ""), "")]
        if la.get("failed_total"):
            parts.append((f"✘{la['failed_total']} failed", "red"))
    if doing:
        parts += [("doing: ", "dim"), (_todo_doing(doing[0]), "bold")]
    parts.append((f"{len(todos)} open todos", "dim"))
    if ov["due"]:
        parts += [("verdict due: ", "dim"), (", ".join(d["id"] for d in ov["due"]), "yellow")]
    if ov["verdicts"]:
        v = ov["verdicts"][0]
        parts += [("last: ", "dim"), (v["hypothesis"] + " ", "bold"), (v["status"], _status_style(v["status"]))]
    out = Text()
    for i, (text, style) in enumerate(parts):
        ends_item = i + 1 < len(parts) and not text.endswith((": ", " "))
        out.append(text + ("  " if ends_item else ""), style=style)
    out.no_wrap = True
    out.overflow = "ellipsis"
    return out


def _run_cell(r: dict[str, Any], col: str) -> Any:
    """One cell of the runs table: numbers right-aligned, flags and an invalidated run in red."""
    v = RT.cell_value(r, col)
    if col == "flags":
        return Text(v, style="red" if r.get("invalidated") else "yellow")
    if col == "status":
        return Text(v, style="red strike" if r.get("invalidated") else ("red" if v == "failed" else ""))
    if col.startswith("m:") or col == "id":
        return Text(fmt_num(v) if col.startswith("m:") else str(v), justify="right")
    return "" if v is None else Text(str(v))


def _diff_renderable(d: dict[str, Any]) -> Any:
    """`run diff` (service.verdicts.runs_diff) as the run detail shows it: only what differs."""
    a, b = d["a"], d["b"]
    parts: list[Any] = [Text.assemble((f"run {a} (a) vs run {b} (b)", "bold"), ("  ↑/↓: back to a run · m: unmark", "dim"))]
    if d.get("not_comparable"):
        parts.append(Text("not comparable: differ in " + ", ".join(x["key"] for x in d["not_comparable"]), style="yellow"))
    if not any(d.get(k) for k in ("labels", "metrics", "environment", "other", "rendered")):
        parts.append(Text("no differences", style="dim"))
    val = lambda x: "(none)" if x is None else fmt_num(x)  # noqa: E731
    for title, key in (("labels", "labels"), ("rendered with", "rendered"), ("environment", "environment"), ("run", "other")):
        if d.get(key):
            t = Table(box=None, pad_edge=False, show_edge=False, header_style="dim", title_justify="left")
            for c in (title, f"run {a}", f"run {b}"):
                t.add_column(c)
            for k, x in list(d[key].items())[:30]:
                _rows(t, k, val(x["a"]), val(x["b"]))
            parts += [Text(""), t]
    if d.get("metrics"):
        t = Table(box=None, pad_edge=False, show_edge=False, header_style="dim")
        t.add_column("metric")
        for c in (f"run {a}", f"run {b}", "b/a"):
            t.add_column(c, justify="right")
        for k, x in d["metrics"].items():
            r = x.get("ratio")
            _rows(t, k, val(x["a"]), val(x["b"]), Text(fmt_ratio(r),
                                                        style="green" if r and r > 1 else ("red" if r and r < 1 else "")))
        parts += [Text(""), t]
    return Group(*parts)


def _indent(depth: int) -> int:
    """Cells the tree puts before a node's label at `depth` (guides, the expand icon, a margin)."""
    return 2 * depth + 3


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: max(0, n - 1)] + "…"


def _hyp_label(node: dict[str, Any], width: int) -> Text:
    """`glyph id  title  status  Np`: the claim beside its id, cut (never the id or the status) to
    fit `width` cells; dropped when fewer than 8 cells would be left for it. Separators end the
    span before them, never start one: SVG renderers (rsvg) drop a span's leading spaces, and the
    screenshots then read `comm-boundfalsified`."""
    st = node["status"]
    n_pred = len(node["predictions"])
    tail = st + (f"  {n_pred}p" if n_pred else "")
    room = width - 2 - len(node["id"]) - 2 - len(tail) - 2
    title = node.get("title") or ""
    parts: list[Any] = [(f"{STATUS_GLYPH.get(st, ' ')} ", _status_style(st)), (node["id"] + "  ", "bold")]
    if title and room >= 8:
        parts.append((_cut(title, room) + "  ", ""))
    parts.append((tail, _status_style(st) or "dim"))
    return Text.assemble(*parts)


def _pred_label(p: dict[str, Any], hid: str, width: int) -> Text:
    """A prediction under its hypothesis: `glyph p1  status  expect` (its id without the
    hypothesis's prefix)."""
    st = p.get("status") or "untested"
    pid = p["id"][len(hid) + 1:] if p["id"].startswith(hid + ".") else p["id"]
    head = f"{STATUS_GLYPH.get(st, ' ')} {pid}  {st}"
    room = width - len(head) - 2
    expect = p.get("expect") or ""
    if not expect or room < 6:
        return Text(head, style=_status_style(st) or "dim")
    return Text.assemble((head + "  ", _status_style(st) or "dim"), (_cut(expect, room), "dim"))


def _status_style(status: str) -> str:
    return {"confirmed": "green", "falsified": "red", "testing": "yellow", "inconclusive": "magenta",
            "superseded": "dim"}.get(status, "")


def _hyp_renderable(h: dict[str, Any]) -> Any:
    parts: list[Any] = []
    head = Text.assemble((f"{STATUS_GLYPH.get(h['status'], ' ')} {h['id']}  ", "bold"), (h["status"], _status_style(h["status"])))
    parts += [head, Text(h["title"], style="italic")]
    if h.get("disagreement"):
        parts.append(Text(h["disagreement"], style="yellow"))
    last = (h.get("verdict_details") or [None])[-1]
    if last and last.get("post_hoc") and last.get("status") == h.get("auto_status", last.get("status")):
        parts.append(Text(PH.hypothesis_words(str(last["status"]), list(last["post_hoc"])), style="yellow"))
    for k in ("statement", "rationale"):
        if h.get(k):
            parts.append(Text.assemble((f"{k}: ", "dim"), h[k]))
    rel = []
    if h.get("parent"):
        rel.append(f"parent {h['parent']}")
    if h.get("children"):
        rel.append(f"children {', '.join(h['children'])}")
    if h.get("rivals"):
        rel.append(f"rivals {', '.join(h['rivals'])}")
    if rel:
        parts.append(Text(" · ".join(rel), style="cyan"))
    for p in h.get("predictions", []):
        ver = f" v{p['version']}" if p.get("version", 1) != 1 else ""  # a version only once edited
        parts.append(Text.assemble(("\n" + STATUS_GLYPH.get(p.get("status", ""), " ") + f" {p['id']}{ver} ", "bold"),
                                   (p.get("status", "") + "  ", _status_style(p.get("status", ""))), p["expect"] + "  ",
                                   (f"[{p.get('metric')}]" if p.get("metric") else "", "dim")))
        levels = p.get("levels") or []
        if p.get("post_hoc"):  # written after runs its groups select (core.posthoc): said above its reason
            parts.append(Text("  " + PH.words(p["post_hoc"]), style="yellow"))
        if p.get("explanation"):
            parts.append(Text("  " + p["explanation"], style="dim"))
        if levels:
            t = Table(box=None, pad_edge=False, show_edge=False, header_style="dim")
            # the tested quantity's estimate: the number the verdict decided on (as the report's findings)
            q = next((str(lv["quantity"]) for lv in levels if lv.get("quantity")), "estimate")
            for col in ("level", "a", "b", q, "n", "outcome"):
                t.add_column(col)
            for lv in levels:
                lvl = " ".join(f"{k}={v}" for k, v in (lv.get("level") or {}).items())
                n = lv.get("n") or {}
                est = lv.get("estimate") if lv.get("estimate") is not None else lv.get("ratio")
                _rows(t, lvl or "all", fmt_num(lv.get("a")), fmt_num(lv.get("b")), fmt_num(est),
                          f"{n.get('a', '')}/{n.get('b', '')}" if isinstance(n, dict) else str(n),
                          Text(str(lv.get("outcome", "")), style={"holds": "green", "fails": "red"}.get(lv.get("outcome", ""), "yellow")))
            parts.append(t)
    if h.get("verdicts"):
        parts.append(Text("\nverdict history", style="bold"))
        for v in h["verdicts"][-8:]:
            parts.append(Text(f"  {str(v['at'])[:16]} {v['status']} ({v['kind']}, {v['by']}): {v['summary']}"))
    if h.get("notes"):
        parts.append(Text("\nnotes", style="bold"))
        for n in h["notes"][-8:]:
            parts.append(Text(f"  • {n['text']}" + (f" <{n['link']}>" if n.get("link") else "")))
    if h.get("linked"):
        parts.append(Text(f"\nlinked runs ({h.get('linked_total', len(h['linked']))})", style="bold"))
        t = Table(box=None, pad_edge=False, show_edge=False, header_style="dim")
        for col in ("run", "status", "labels", "power W", "tensor %", "dram %", "diagnosis"):
            t.add_column(col)
        for r in h["linked"]:
            tel = r["telemetry"]
            _rows(t, str(r["id"]), r["status"] + (" ✘" if r.get("invalidated") else ""),
                      " ".join(f"{k}={v}" for k, v in r["labels"].items()), fmt_num(tel.get("gpu_power_w")),
                      fmt_num(tel.get("tensor_active")), fmt_num(tel.get("dram_bw_util")), r["diagnosis"])
        parts.append(t)
    return Group(*parts)


def _run_renderable(r: dict[str, Any]) -> Any:
    parts: list[Any] = [Text.assemble((f"run {r['id']} ", "bold"), r["status"],
                                      (f"  INVALID: {r.get('invalid_reason')}" if r.get("invalidated") else "", "red"))]
    parts.append(Text(" ".join(f"{k}={v}" for k, v in r["labels"].items()), style="cyan"))
    if r.get("error"):
        parts.append(Text(f"error: {r['error']}" + (f" (cause: {r['cause']})" if r.get("cause") else ""), style="red"))
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column("metric", style="dim")
    t.add_column("value", justify="right")
    for k, v in sorted(r["metrics"].items())[:40]:
        _rows(t, k, fmt_num(v))
    parts.append(t)
    tel = r.get("telemetry") or {}
    if tel.get("text"):
        parts.append(Text(tel["text"]))
    return Group(*parts)


def run_tui(ctx: Ctx) -> None:
    OptlogApp(ctx).run()
