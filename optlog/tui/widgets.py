"""The dashboard's small shared widgets and styling helpers: what every pane draws with.

One home for how a status is coloured and a text cut, so the tree, the detail and the overview
cannot drift apart."""

from __future__ import annotations

from typing import Any, Callable

from rich.table import Table
from rich.text import Text
from textual.containers import Vertical
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import DataTable

from optlog.core.numfmt import axis_ticks


EMPTY = "__empty__"  # the row key of an empty table's one line saying what would fill it


class PlainTable(DataTable):
    """A DataTable whose text cells are plain text: a todo `[x]` or a label `[fp4]` is not markup."""

    def add_row(self, *cells: Any, **kw: Any) -> Any:
        return super().add_row(*(Text(c) if isinstance(c, str) else c for c in cells), **kw)

    def say_empty(self, text: str, column: int) -> None:
        """An empty tab says what would fill it (a header row alone reads as broken): one dim line
        in `column`, keyed EMPTY so no action takes it for an item."""
        cells: list[Any] = [""] * len(self.columns)
        cells[column] = Text(text, style="dim italic")
        super().add_row(*cells, key=EMPTY)


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


def y_axis(plt: Any, values: Any, unit: str | None = None, yside: str | None = None) -> None:
    """A plot's y axis as the tables write numbers (issue 44): round ticks labelled `14,000`, `0.5`
    (numfmt.axis_ticks) across `values`, and the numbers' unit as the axis's label."""
    lo, hi, ticks, labels = axis_ticks(values)
    plt.ylim(lo, hi, yside=yside)
    plt.yticks(ticks, labels, yside=yside)
    if unit:
        plt.ylabel(unit, yside=yside)


def x_axis(plt: Any, values: Any, label: str) -> None:
    """A numeric x axis as the tables write numbers, `label` (with its unit) under it."""
    lo, hi, ticks, labels = axis_ticks(values)
    plt.xlim(lo, hi)
    plt.xticks(ticks, labels)
    plt.xlabel(label)


def rows(t: Table, *cells: Any) -> None:
    """A row of a Rich table whose text cells are plain text (as `PlainTable`'s)."""
    t.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))


def cut(s: str, n: int) -> str:
    """`s` cut to `n` cells, an ellipsis marking the cut."""
    return s if len(s) <= n else s[: max(0, n - 1)] + "…"


def status_style(status: str) -> str:
    """A hypothesis's or prediction's status as a colour (the same everywhere on screen)."""
    return {"confirmed": "green", "falsified": "red", "testing": "yellow", "inconclusive": "magenta",
            "superseded": "dim"}.get(status, "")


DETAIL_DELAY_S = 0.06  # a detail loads when the cursor has rested this long


class Rest:
    """Call a function once the cursor rests on `node`: holding ↓ repaints a table, not every detail."""

    def __init__(self, node: Widget, delay: float = DETAIL_DELAY_S) -> None:
        self.node, self.delay = node, delay
        self.timer: Timer | None = None

    def __call__(self, fn: Callable[[], object]) -> None:
        self.stop()
        self.timer = self.node.set_timer(self.delay, fn)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.stop()
            self.timer = None
