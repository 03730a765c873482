"""The Runs tab: every run in a table the person filters, sorts, groups and marks in memory
(`core.runtable`, as `run list` selects), the selected run's `run show` or the two marked runs'
`run diff` below it, its telemetry plot, the Pareto view, and the live launch's box."""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any, Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Log, Static, TabbedContent

from optlog.core import runtable as RT
from optlog.core import views as VW
from optlog.core import units as U
from optlog.core.expr import ExprError
from optlog.core.numfmt import fmt_count, fmt_num, fmt_ratio
from optlog.core.report import pareto_view
from optlog.errors import BadInput
from optlog.tui.forms import Field, FormScreen
from optlog.tui.messages import MetricsChosen, RunDiffAsked, RunSelected
from optlog.tui.panes.overview import study_lines
from optlog.tui.widgets import PlainTable, PlotBox, Rest, rows, x_axis, y_axis

RUN_PAGE = 200


class RunsTable(PlainTable):
    """The runs table; the keys that act on the runs are the pane's (`RunsPane.BINDINGS`: they
    show in the footer while the table has the focus, and in the command palette)."""

    BINDINGS = [
        # a row table does not scroll sideways (no horizontal bar): home/end go to the first/last run
        Binding("home", "scroll_top", "First run", show=False),
        Binding("end", "scroll_bottom", "Last run", show=False),
    ]


class RunsPane(Vertical):
    """The runs view's state (rows, filter, sort, group, marks, what the detail shows) and its keys."""

    BINDINGS = [
        Binding("slash", "filter_runs", "Filter"),
        Binding("s", "sort_runs", "Sort"),
        Binding("S", "reverse_runs", "Reverse"),
        Binding("G", "group_runs", "Group"),
        Binding("m", "mark_run", "Mark"),
        Binding("d", "diff_runs", "Diff"),
        Binding("M", "choose_metrics", "Metrics"),
        Binding("F", "pareto_runs", "Pareto"),
    ]

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.selected: int | None = None
        self.loaded = 0
        self.total = 0
        # the runs table's view (core.runtable): every run's light row, and what the person chose
        self.run_rows: list[dict[str, Any]] = []
        self.shown_metrics: list[str] = []
        self.known_metrics: list[str] = []
        self.run_filter = ""
        self._pred: Callable[[dict[str, Any]], bool] | None = None
        self.run_sort: tuple[str, bool] = ("id", False)  # column key, descending
        self.run_group: str | None = None
        self.marked: list[int] = []  # at most two: a and b of `run diff`
        self._view: list[dict[str, Any]] = []  # filtered, grouped, sorted
        self._groups: dict[int, str] = {}  # run id → its group's label, on the group's first row
        self._cols: list[str] = []
        self._shown: tuple[Any, ...] | None = None  # what the run detail should show: a run, or a diff
        self._rest = Rest(self)

    def compose(self) -> ComposeResult:
        yield Static("", id="runs-bar")  # shown of total, filter, sort, group, marks
        yield RunsTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="run-detail"):
            yield Static("", id="run-text")
        yield PlotBox(id="tel-plot")
        yield Log(id="launch-box", max_lines=200)

    @property
    def table(self) -> RunsTable:
        return self.query_one("#runs-table", RunsTable)

    def show_index(self, ix: dict[str, Any]) -> None:
        self.run_rows = ix["rows"]
        self.total = len(self.run_rows)
        self.shown_metrics = ix["metrics"]
        self.known_metrics = ix["known_metrics"]
        self.render_runs(keep=True)

    def render_runs(self, keep: bool = False) -> None:
        """Filter, group and sort the runs in memory (core.runtable), rebuild the columns (a column
        per label that varies among the shown runs, one per chosen metric) and show the first page.
        With `keep` (a reload: new runs came) the rows loaded so far stay loaded and the cursor on
        the selected run; otherwise (a new order or filter) the cursor goes to the top."""
        rows_ = [r for r in self.run_rows if self._pred(r)] if self._pred else list(self.run_rows)
        cols = RT.columns(rows_, self.shown_metrics)
        col, desc = self.run_sort
        if col not in cols:
            col, desc = self.run_sort = ("id", False)
        view: list[dict[str, Any]] = []
        self._groups = {}
        for name, members in RT.group_rows(RT.sort_rows(rows_, col, desc), self.run_group):
            if name is not None and members:
                self._groups[members[0]["id"]] = f"{name} ({len(members)})"
            view.extend(members)
        self._view = view
        self._cols = cols
        t = self.table
        t.clear(columns=True)
        if self.run_group:
            t.add_column(Text(self.run_group, style="bold"), key="group")
        t.add_column("", key="mark", width=1)
        for c in cols:
            t.add_column(self._col_header(c), key=c)
        want = self.selected if keep else None
        n = max(RUN_PAGE, self.loaded) if keep else RUN_PAGE
        self.loaded = 0
        self._add_rows(n)
        at = next((i for i, r in enumerate(view[:self.loaded]) if r["id"] == want), None)
        if view:
            t.move_cursor(row=at or 0)
            self.selected = view[at or 0]["id"]  # no highlight event when the row index stays
        else:
            self.selected = None
            self.query_one("#run-text", Static).update(Text("no runs match the filter" if self._pred else "no runs yet",
                                                            style="dim"))
        self._bar()

    def _col_header(self, c: str) -> Text:
        col, desc = self.run_sort
        name = {"id": "id", "flags": "⚑", "status": "status"}.get(c) or c[2:]
        arrow = (" ▼" if desc else " ▲") if c == col else ""
        return Text(name + arrow, style="bold" if c == col else ("cyan" if c.startswith("l:") else ""),
                    justify="right" if c.startswith("m:") or c == "id" else "left")

    def _add_rows(self, upto: int) -> None:
        """Add the view's rows up to `upto` (a page at a time: a DataTable of 10,000 rows is slow to build)."""
        t = self.table
        for r in self._view[self.loaded:upto]:
            cells: list[Any] = []
            if self.run_group:
                g = self._groups.get(r["id"])
                cells.append(Text(g, style="bold") if g else "")
            cells.append(self._mark_cell(r["id"]))
            cells.extend(_run_cell(r, c) for c in self._cols)
            t.add_row(*cells, key=str(r["id"]))
        self.loaded = t.row_count

    def _mark_cell(self, rid: int) -> Text:
        if rid in self.marked:
            return Text("ab"[self.marked.index(rid)], style="bold reverse")
        return Text("")

    def _bar(self) -> None:
        shown, total = len(self._view), self.total
        col, desc = self.run_sort
        # separators end a span, never start one (see `hypotheses._hyp_label`)
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

    def show_run(self, r: dict[str, Any]) -> None:
        if self._shown != ("run", r["id"]):
            return  # a diff was asked for, or the cursor moved on, since this load started
        self.query_one("#run-text", Static).update(_run_renderable(r))
        plot = self.query_one("#tel-plot", PlotBox)
        series = {k: v for k, v in ((r.get("telemetry") or {}).get("series") or {}).items() if v}
        if not series:  # a recorded run has no samples: no empty frame
            plot.remove_class("shown")
            return
        plot.add_class("shown")

        def draw(plt: Any) -> None:
            shown = [(name, pts) for name, pts in list(series.items())[:3] if pts]
            for name, pts in shown:
                plt.plot([p[0] for p in pts], [p[1] for p in pts], label=U.with_unit(name), marker="braille")
            x_axis(plt, [p[0] for _, pts in shown for p in pts], "s since the run's first sample")
            units = list(dict.fromkeys(u for name, _ in shown if (u := U.unit(name))))
            y_axis(plt, [p[1] for _, pts in shown for p in pts], ", ".join(units) or None)
            plt.title(f"run {r['id']} telemetry")

        plot.draw(draw)

    def show_diff(self, d: dict[str, Any]) -> None:
        if self._shown != ("diff", d["a"], d["b"]):
            return  # the cursor moved on
        self.query_one("#run-text", Static).update(_diff_renderable(d))
        self.query_one("#tel-plot", PlotBox).remove_class("shown")

    def show_launches(self, launches: list[dict[str, Any]]) -> int | None:
        """The newest live launch in the box under the runs; its id (None: none is live)."""
        box = self.query_one("#launch-box", Log)
        if not launches:
            box.remove_class("shown")
            return None
        box.add_class("shown")
        la = launches[-1]
        pr = la["progress"]
        box.clear()
        box.write_line(f"launch {la['id']} {la['status']} {la.get('spec') or ''}  (c: cancel)")
        for k in ("done", "total", "current", "elapsed_s", "last_metric"):
            if k in pr:
                box.write_line(f"  {k}: {pr[k]}")
        for line in study_lines(la.get("study")):
            box.write_line(line)
        for line in la.get("log_tail", [])[-5:]:
            box.write_line(f"  | {line}")
        return int(la["id"])

    # ------------------------------------------------------------------ selection
    @on(DataTable.RowHighlighted, "#runs-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        rid = int(event.row_key.value)
        if rid != self.cursor_run(event.data_table) or (rid == self.selected and self._shown and self._shown[0] == "diff"):
            return  # a late event (keys typed ahead): the cursor is elsewhere, or a diff was asked on this row
        self.selected = rid
        self._shown = ("run", rid)
        self._rest(lambda: self.post_message(RunSelected(rid)))
        t = event.data_table
        if event.cursor_row >= t.row_count - 20 and self.loaded < len(self._view):
            self._add_rows(self.loaded + RUN_PAGE)  # the next page, from memory

    @on(DataTable.HeaderSelected, "#runs-table")
    def _header(self, event: DataTable.HeaderSelected) -> None:
        col = str(event.column_key.value)
        if col in self._cols:
            cur, desc = self.run_sort
            self.run_sort = (col, not desc if col == cur else col.startswith("m:"))
            self.render_runs()

    def cursor_run(self, table: Any = None) -> int | None:
        """The run under the cursor (the table's own state: `selected` follows it by events).
        `table`: the event's own, for an event that arrives while the app is closing."""
        t = table if table is not None else self.table
        if t.row_count == 0:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key
        return int(key.value) if key and key.value is not None else None

    # ------------------------------------------------------------------ the runs table's own keys
    def _on_runs(self) -> None:
        """A key from the command palette while another tab shows: show this one first."""
        tabs = self.screen.query_one("#tabs", TabbedContent)
        if tabs.active != "runs":
            tabs.active = "runs"
            self.table.focus()

    def action_filter_runs(self) -> None:
        """`/`: the runs that match a selector, as `--a` takes it (`config=tp8 concurrency=64`) or a
        condition as `--where` takes it (`concurrency >= 64 and status == succeeded`)."""
        self._on_runs()

        def go(v: dict[str, Any] | None) -> None:
            if v is None:
                return
            text = v["filter"].strip()
            try:
                pred = RT.parse_filter(text)
            except (BadInput, ExprError) as e:
                self.notify(f"filter: {e}", severity="error", timeout=8)
                return
            self.run_filter, self._pred = text, pred
            self.render_runs()

        self.app.push_screen(FormScreen("Filter runs (empty: all runs)", [
            Field("filter", "K=V … as --a takes them, or a condition as --where takes it", self.run_filter,
                  placeholder="config=tp8   or   concurrency >= 64 and status == succeeded")]), go)

    def action_sort_runs(self) -> None:
        """`s`: sort by the next column (metrics largest first); `S` reverses; a header click sorts by it."""
        self._on_runs()
        cols = list(self._cols)
        if not cols:
            return
        cur, _ = self.run_sort
        nxt = cols[(cols.index(cur) + 1) % len(cols)] if cur in cols else cols[0]
        self.run_sort = (nxt, nxt.startswith("m:"))
        self.render_runs()

    def action_reverse_runs(self) -> None:
        self._on_runs()
        col, desc = self.run_sort
        self.run_sort = (col, not desc)
        self.render_runs()

    def action_group_runs(self) -> None:
        """`G`: no groups → by launch → by hypothesis → no groups."""
        self._on_runs()
        order = [None, *RT.GROUPS]
        self.run_group = order[(order.index(self.run_group) + 1) % len(order)]
        self.render_runs()

    def action_mark_run(self) -> None:
        """`m`: mark the selected run (a, then b; a third mark replaces the oldest), again to unmark."""
        self._on_runs()
        rid = self.cursor_run()
        if rid is None:
            return
        before = list(self.marked)
        if rid in self.marked:
            self.marked.remove(rid)
        else:
            self.marked = (self.marked + [rid])[-2:]
        t = self.table
        for m in set(before) | set(self.marked):
            if str(m) in t.rows:
                t.update_cell(str(m), "mark", self._mark_cell(m))
        self._bar()

    def action_diff_runs(self) -> None:
        """`d`: `run diff` of the two marked runs (or the marked one against the selected one)."""
        self._on_runs()
        pair = list(self.marked)
        cur = self.cursor_run()
        if len(pair) == 1 and cur is not None and cur != pair[0]:
            pair.append(cur)
        if len(pair) != 2:
            self.notify("mark two runs with m (or one, and select the other)", severity="warning")
            return
        self._rest.stop()  # the selected run's detail would replace the diff
        self.selected = cur
        self._shown = ("diff", pair[0], pair[1])
        self.post_message(RunDiffAsked(pair[0], pair[1]))

    def action_pareto_runs(self) -> None:
        """`F`: the shown serving runs as tokens/s per user against tokens/s per GPU, with the Pareto
        front (the runs no other shown run beats on both), as `vllm bench sweep plot_pareto` draws it."""
        self._on_runs()
        pv = pareto_view(self._view)
        if len(pv["points"]) < 2:
            self.notify("the Pareto view needs two shown runs with output_throughput and a concurrency "
                        "(or median_tpot_ms)", severity="warning", timeout=8)
            return
        self._shown = ("pareto",)
        varying = RT.varying_labels(self._view)
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
            x_axis(plt, [p["per_gpu"] for p in pv["points"]], "output tok/s per GPU")
            y_axis(plt, [p["per_user"] for p in pv["points"]], "output tok/s per user")
            plt.title("Pareto view of the shown runs")

        plot.draw(draw)

    def action_choose_metrics(self) -> None:
        """`M`: which metrics have a column (empty: the default, the predictions' metrics first)."""
        self._on_runs()

        def go(v: dict[str, Any] | None) -> None:
            if v is None:
                return
            want = [x.strip() for x in v["metrics"].replace(" ", ",").split(",") if x.strip()]
            unknown = [m for m in want if m not in self.known_metrics]
            if unknown:
                hint = {m: get_close_matches(m, self.known_metrics, 1) for m in unknown}
                self.notify("no run has " + ", ".join(m + (f" (did you mean {h[0]}?)" if h else "") for m, h in hint.items()),
                            severity="warning", timeout=8)
            self.post_message(MetricsChosen([m for m in want if m in self.known_metrics] or None))

        known = ", ".join(self.known_metrics[:12]) + (" …" if len(self.known_metrics) > 12 else "")
        self.app.push_screen(FormScreen("Metric columns", [Field("metrics", f"Comma-separated (the runs have: {known})",
                                                                 ", ".join(self.shown_metrics))]), go)


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
    if not VW.diff_differs(d):
        parts.append(Text("no differences", style="dim"))
    val = lambda x: "(none)" if x is None else fmt_num(x)  # noqa: E731
    for title, key in VW.DIFF_SECTIONS:  # as `run diff` prints them (core.views)
        if d.get(key):
            t = Table(box=None, pad_edge=False, show_edge=False, header_style="dim", title_justify="left")
            for c in (title, f"run {a}", f"run {b}"):
                t.add_column(c)
            for k, x in list(d[key].items())[:30]:
                rows(t, k, val(x["a"]), val(x["b"]))
            parts += [Text(""), t]
    if d.get("metrics"):
        t = Table(box=None, pad_edge=False, show_edge=False, header_style="dim")
        t.add_column("metric")
        for c in (f"run {a}", f"run {b}", "b/a"):
            t.add_column(c, justify="right")
        for k, x in d["metrics"].items():
            r = x.get("ratio")
            rows(t, k, val(x["a"]), val(x["b"]), Text(fmt_ratio(r),
                                                      style="green" if r and r > 1 else ("red" if r and r < 1 else "")))
        parts += [Text(""), t]
    return Group(*parts)


def _run_renderable(r: dict[str, Any]) -> Any:
    """`run show` as the run detail shows it."""
    parts: list[Any] = [Text.assemble((f"run {r['id']} ", "bold"), r["status"],
                                      (f"  INVALID: {r.get('invalid_reason')}" if r.get("invalidated") else "", "red"))]
    parts.append(Text(VW.kv(r["labels"]), style="cyan"))
    if r.get("error"):
        parts.append(Text(VW.run_error(r), style="red"))
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column("metric", style="dim")
    t.add_column("value", justify="right")
    for k, v in sorted(r["metrics"].items())[:40]:
        rows(t, k, fmt_num(v))
    parts.append(t)
    tel = r.get("telemetry") or {}
    if tel.get("text"):
        parts.append(Text(tel["text"]))
    return Group(*parts)
