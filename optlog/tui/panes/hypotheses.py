"""The Hypotheses tab's main pane: the tree (hypotheses and their predictions), the selected
hypothesis's detail and its prediction's plot, and the overview beside them on a large terminal."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static, Tree

from optlog.core import views as VW
from optlog.core import posthoc as PH
from optlog.core.numfmt import fmt_num
from optlog.core.statuses import STATUS_GLYPH, reader_text
from optlog.tui.messages import HypothesisSelected
from optlog.tui.panes.overview import OverviewPane
from optlog.tui.widgets import PlotBox, Rest, cut, rows, status_style, y_axis


class HypothesesPane(Horizontal):
    """The tree owns the selection (`selected`); a rested cursor asks the app for the detail
    (`HypothesisSelected`), which comes back through `show_detail`."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.selected: str | None = None
        self.detail: dict[str, Any] | None = None  # the hypothesis shown in the detail pane
        self._labels: list[tuple[Any, dict[str, Any], int]] = []
        self._rest = Rest(self)

    def compose(self) -> ComposeResult:
        yield Tree("hypotheses", id="hyp-tree")
        with Vertical(id="hyp-right"):
            with VerticalScroll(id="hyp-detail"):
                yield Static("Select a hypothesis (↑/↓, enter).", id="hyp-text")
            yield PlotBox(id="pred-plot")
        yield OverviewPane(id="overview")  # what the agent is doing, what is due

    def on_mount(self) -> None:
        tree = self.query_one("#hyp-tree", Tree)
        tree.show_root = False
        tree.guide_depth = 2

    def paint(self, roots: list[dict[str, Any]], load_detail: bool = False) -> None:
        """The tree from `roots` (the quick tree's or the full load's), the cursor kept on the
        selected hypothesis; the first one selected (its detail asked for, with `load_detail`)
        when none was."""
        tree = self.query_one("#hyp-tree", Tree)
        keep = self.selected
        tree.clear()
        self._labels = []
        width = self._width()
        target = None

        def add(parent: Any, node: dict[str, Any], depth: int) -> None:
            nonlocal target
            kids = node["children_nodes"]
            preds = node["predictions"]
            tn = parent.add(_hyp_label(node, width - _indent(depth)), data=node["id"], expand=True,
                            allow_expand=bool(kids or preds))
            self._labels.append((tn, node, depth))
            if node["id"] == keep:
                target = tn
            for p in preds:  # a leaf per prediction; selecting it selects its hypothesis
                leaf = tn.add_leaf(_pred_label(p, node["id"], width - _indent(depth + 1)), data=node["id"])
                self._labels.append((leaf, {"pred": p, "hyp": node["id"]}, depth + 1))
            for k in kids:
                add(tn, k, depth + 1)

        for r in roots:
            add(tree.root, r, 0)
        if target is not None:
            tree.move_cursor(target)
        elif tree.root.children and keep is None:
            self.selected = tree.root.children[0].data  # before the move: no debounced detail load
            tree.move_cursor(tree.root.children[0])
            if load_detail and self.selected:
                self.post_message(HypothesisSelected(self.selected))

    def _width(self) -> int:
        return self.query_one("#hyp-tree", Tree).scrollable_content_region.width or 40

    def relabel(self) -> None:
        """Titles are cut to the tree's width: a resize cuts them again (the nodes stay)."""
        width = self._width()
        for tn, node, depth in self._labels:
            w = width - _indent(depth)
            tn.set_label(_pred_label(node["pred"], node["hyp"], w) if "pred" in node else _hyp_label(node, w))

    @on(Tree.NodeHighlighted, "#hyp-tree")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        hid = event.node.data
        if hid and hid != self.selected:
            self.selected = hid
            self._rest(lambda: self.post_message(HypothesisSelected(hid)))

    def show_detail(self, h: dict[str, Any]) -> None:
        if h.get("id") != self.selected:
            return
        self.detail = h
        self.query_one("#hyp-text", Static).update(hypothesis_renderable(h))
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
            shown = [y for ys in series["groups"].values() for y in ys if y is not None]
            shown += [v for sps in (series.get("spread") or {}).values() for sp in sps or [] if sp for v in sp]
            y_axis(plt, shown, series.get("unit"))
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
            qu = series.get("quantity_unit")
            y_axis(plt, seen, f"{q} ({qu})" if qu else q, yside="right")
            plt.title(f"{series['title']}; expected {series.get('expect')}: red lines, right axis")

        def draw(plt: Any) -> None:
            groups(plt)
            if expected:  # the tested quantity on the right-hand axis, between what is expected
                quantity(plt)

        plot.draw(draw)


def _indent(depth: int) -> int:
    """Cells the tree puts before a node's label at `depth` (guides, the expand icon, a margin)."""
    return 2 * depth + 3


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
    parts: list[Any] = [(f"{STATUS_GLYPH.get(st, ' ')} ", status_style(st)), (node["id"] + "  ", "bold")]
    if title and room >= 8:
        parts.append((cut(title, room) + "  ", ""))
    parts.append((tail, status_style(st) or "dim"))
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
        return Text(head, style=status_style(st) or "dim")
    return Text.assemble((head + "  ", status_style(st) or "dim"), (cut(expect, room), "dim"))


def hypothesis_renderable(h: dict[str, Any]) -> Any:
    """`hypothesis show` as the detail pane shows it (the same facts, in the same order, as the
    CLI's text: `core.views`)."""
    parts: list[Any] = []
    head = Text.assemble((f"{STATUS_GLYPH.get(h['status'], ' ')} {h['id']}  ", "bold"), (h["status"], status_style(h["status"])))
    parts += [head, Text(h["title"], style="italic")]
    if h.get("disagreement"):
        parts.append(Text(h["disagreement"], style="yellow"))
    last = (h.get("verdict_details") or [None])[-1]
    if last and last.get("post_hoc") and last.get("status") == h.get("auto_status", last.get("status")):
        parts.append(Text(PH.hypothesis_words(str(last["status"]), list(last["post_hoc"])), style="yellow"))
    for k in ("statement", "rationale"):
        if h.get(k):
            parts.append(Text.assemble((f"{k}: ", "dim"), h[k]))
    rel = VW.relations(h)
    if rel:
        parts.append(Text(" · ".join(f"{k} {v}" for k, v in rel), style="cyan"))
    for p in h.get("predictions", []):
        ver = f" v{p['version']}" if p.get("version", 1) != 1 else ""  # a version only once edited
        parts.append(Text.assemble(("\n" + STATUS_GLYPH.get(p.get("status", ""), " ") + f" {p['id']}{ver} ", "bold"),
                                   (p.get("status", "") + "  ", status_style(p.get("status", ""))), p["expect"] + "  ",
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
                lvl = VW.kv(lv.get("level") or {})
                n = lv.get("n") or {}
                est = lv.get("estimate") if lv.get("estimate") is not None else lv.get("ratio")
                rows(t, lvl or "all", fmt_num(lv.get("a")), fmt_num(lv.get("b")), fmt_num(est),
                     f"{n.get('a', '')}/{n.get('b', '')}" if isinstance(n, dict) else str(n),
                     Text(str(lv.get("outcome", "")), style={"holds": "green", "fails": "red"}.get(lv.get("outcome", ""), "yellow")))
            parts.append(t)
    if h.get("verdicts"):
        parts.append(Text("\nverdict history", style="bold"))
        for v in h["verdicts"][-8:]:
            parts.append(Text(f"  {str(v['at'])[:16]} {v['status']} ({v['kind']}, {v['by']}): "
                              f"{reader_text(v['summary'], v['status'])}"))
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
            rows(t, str(r["id"]), r["status"] + (" ✘" if r.get("invalidated") else ""),
                 VW.kv(r["labels"]), fmt_num(tel.get("gpu_power_w")),
                 fmt_num(tel.get("tensor_active")), fmt_num(tel.get("dram_bw_util")), r["diagnosis"])
        parts.append(t)
    return Group(*parts)
