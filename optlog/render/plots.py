"""Plots as SVG, drawn with pygal, byte-for-byte deterministic.

Why pygal rather than matplotlib: a report's two plots are a few dozen points each, and matplotlib's
import and figure machinery cost ~1.6 s of a cold `optlog report` over 10,000 runs (its ≤ 2 s target);
pygal imports in ~0.08 s and draws each plot in ~0.02 s (bench/report_bench.py). Its SVG is plain
text with the labels as text, which GitHub renders inside markdown.

Determinism: the chart's id is fixed (pygal draws a random one), no JavaScript is linked (a report is
read offline and on GitHub, which runs none), and the style is fixed here.
"""

from __future__ import annotations

import math
import re
import statistics
from html import escape
from typing import Any

from optlog.core import metrics as M
from optlog.core.numfmt import fmt_axis, fmt_count, fmt_num, fmt_written

CHART_ID = "optlog"


PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


def _chart(kind: str, title: str, x_title: str, y_title: str, colors: tuple[str, ...] = PALETTE, **kw: Any) -> Any:
    import pygal  # deferred: pygal only to draw a report's plots
    from pygal.style import Style  # deferred: pygal only to draw a report's plots

    style = Style(background="white", plot_background="white", foreground="#333", foreground_strong="#111",
                  foreground_subtle="#bbb", font_family="DejaVu Sans, Helvetica, Arial, sans-serif",
                  title_font_size=14, label_font_size=10, major_label_font_size=10, legend_font_size=10,
                  value_font_size=8, value_label_font_size=8, opacity=".9", opacity_hover=".9",
                  guide_stroke_color="#d9d9d9", major_guide_stroke_color="#bfbfbf", colors=colors)
    chart = getattr(pygal, kind)(title=title, x_title=x_title, y_title=y_title, style=style, js=[],
                                 width=640, height=400, legend_at_bottom=True, show_minor_x_labels=True,
                                 disable_xml_declaration=False, **{"truncate_legend": 40, **kw})
    chart.uuid = CHART_ID
    return chart


# pygal stamps the day it drew a chart (and the year in its copyright line) into a comment: the same
# data must give the same bytes on any day, so committed reports only change when their content does.
_STAMP = re.compile(r"<!--Generated with pygal ([^ ]+) \(\w+\) ©Kozea [0-9-]+ on [0-9-]+-->")


def _save(chart: Any, path: str) -> None:
    data = chart.render()
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    text = _STAMP.sub(r"<!--Generated with pygal \1-->", text)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def not_drawn(path: str, title: str, why: str) -> None:
    """What stands in a plot's place when its numbers cannot be drawn (a value near 1e308 that the
    chart's scale overflows on, issue 42): an SVG that says so, so the report's link still shows
    something true and the rest of the report is written."""
    text = (f'<svg xmlns="http://www.w3.org/2000/svg" width="640" height="60" viewBox="0 0 640 60">'
            f'<rect width="640" height="60" fill="white"/>'
            f'<text x="10" y="24" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="14">'
            f'{escape(title)}</text>'
            f'<text x="10" y="46" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">'
            f'not drawn: {escape(why)}</text></svg>\n')
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def _ymax(values: list[float]) -> float:
    top = max([v for v in values if v == v] or [1.0])
    return top * 1.1 if top > 0 else 1.0


MAX_SERIES = 16  # lines (or point sets) one plot draws: the legend of more leaves the plot no room


def _highest(series: dict[str, list[Any]], title: str, y: int = 1) -> tuple[dict[str, list[Any]], str]:
    """At most MAX_SERIES series, those with the highest peak (coordinate `y` of their points), and
    the title saying so: thousands of configs in one plot drew nothing a person can read, and
    pygal's legend rows left the plot no height (its title splitting then loops for ever)."""
    if len(series) <= MAX_SERIES:
        return series, title
    peak = {k: max((p[y] for p in v if p[y] == p[y]), default=float("-inf")) for k, v in series.items()}
    keep = sorted(series, key=lambda k: -peak[k])[:MAX_SERIES]
    return ({k: series[k] for k in series if k in keep},
            f"{title} — the {MAX_SERIES} highest of {fmt_count(len(series))}")


def throughput_vs_concurrency(path: str, title: str, metric: str, series: dict[str, list[tuple[float, float]]]) -> None:
    """One line per config: x concurrency (log2 scale where every level is positive), y the metric's
    median; the MAX_SERIES highest configs where there are more."""
    series, title = _highest(series, title)
    xs_all = sorted({p[0] for pts in series.values() for p in pts})
    log = bool(xs_all) and all(x > 0 for x in xs_all)
    fx = (lambda x: math.log2(x)) if log else (lambda x: x)
    few = sum(len(v) for v in series.values()) <= 24
    ylab = metric.replace("_", " ") + " (tok/s)" if "token" in metric or metric.startswith("output") else metric
    pad = 0.25 * (fx(xs_all[-1]) - fx(xs_all[0]) or 1.0) if xs_all else 1.0
    chart = _chart("XY", title, M.LOAD_POINT, ylab, range=(0, _ymax([p[1] for pts in series.values() for p in pts])),
                   xrange=(fx(xs_all[0]) - pad / 4, fx(xs_all[-1]) + pad) if xs_all else None,
                   x_labels=[fx(x) for x in xs_all], x_value_formatter=lambda v: fmt_written(2 ** v) if log else fmt_written(v),
                   value_formatter=fmt_axis, print_labels=few, dots_size=3)
    for name, pts in series.items():
        chart.add(name, [{"value": (fx(x), y), "label": fmt_axis(y)} for x, y in pts])
    _save(chart, path)


def per_user_vs_per_gpu(path: str, title: str, series: dict[str, list[tuple[float, float, Any]]]) -> None:
    """The trade-off curve: x output tok/s per user, y output tok/s per GPU; points labelled by
    concurrency; the MAX_SERIES highest configs (per GPU) where there are more."""
    series, title = _highest(series, title)
    allp = [p for pts in series.values() for p in pts]
    few = len(allp) <= 24
    chart = _chart("XY", title, "output tok/s per user", "output tok/s per GPU",
                   range=(0, _ymax([p[1] for p in allp])), xrange=(0, _ymax([p[0] for p in allp]) * 1.1),
                   value_formatter=fmt_axis, x_value_formatter=fmt_axis,
                   print_labels=few, dots_size=3)
    for name, pts in series.items():
        chart.add(name, [{"value": (x, y), "label": f"c={c}"} for x, y, c in pts])
    _save(chart, path)


def per_level(path: str, plot: dict[str, Any]) -> None:
    """A prediction's measured relation (core.report.relation): the tested metric over the label it
    varies, in its unit; every measured value a dot (the repeats show their spread), the median per
    x joined by a line, a group's dots and line in one colour; the region the prediction claims as
    dashed black lines on the metric's scale (`a / b >= 2`: 2 × b; a band: its two edges); the
    fitted line of a scaling claim, dotted."""
    xs = plot["x"]
    if plot["numeric"]:
        # log2 positions from 1 (pygal draws its y axis at x = 0, which would sit on a level of 1)
        fx = (lambda v: math.log2(float(v)) + 1) if plot["log"] else (lambda v: float(v))
        pos = {str(x): fx(x) for x in xs}
        fmt = (lambda v: fmt_written(2 ** (v - 1))) if plot["log"] else fmt_written
    else:
        pos = {str(x): float(i + 1) for i, x in enumerate(xs)}  # from 1: pygal draws its axis at 0
        names = {float(i + 1): str(x) for i, x in enumerate(xs)}
        fmt = lambda v: names.get(round(v), "")  # noqa: E731
        fx = lambda v: pos.get(str(v), 0.0)  # noqa: E731
    ps = sorted(set(pos.values()))
    span = (ps[-1] - ps[0]) or 1.0
    allv = [v for pts in plot["series"].values() for _, v in pts]
    allv += [y for r in plot.get("region") or [] for _, y in r["points"]]
    # y: the metric's values, or their log10 on a log axis (a scaling claim's exponent: log–log)
    fy = (lambda v: math.log10(v)) if plot.get("log_y") else (lambda v: v)
    y_kw: dict[str, Any] = {"range": (min(0.0, min(allv)), _ymax(allv)), "value_formatter": fmt_axis}
    if plot.get("log_y"):
        top, bottom = max(allv), min(allv)
        y_kw = {"range": (fy(bottom / 1.25), fy(top * 1.25)), "y_labels": [fy(t) for t in _log_ticks(bottom, top)],
                "value_formatter": lambda v: fmt_axis(10 ** v)}
    n = len(plot["series"])
    # a group's dots and its median line share a colour; the claimed region is black, a fit grey
    colors = (tuple(c for i in range(n) for c in (PALETTE[i % len(PALETTE)],) * 2)
              + ("#000000",) * len(plot.get("region") or []) + ("#555555",))
    x_title = plot["per"] + (f" ({plot['x_unit']})" if plot.get("x_unit") else "") + (", log scale" if plot["log"] else "")
    y_title = plot["metric"] + (f" ({plot['unit']})" if plot.get("unit") else "") + (", log" if plot.get("log_y") else "")
    chart = _chart("XY", plot["title"], x_title, y_title, colors=colors,
                   xrange=(ps[0] - 0.2 * span, ps[-1] + 0.2 * span), x_labels=ps, x_value_formatter=fmt,
                   dots_size=3, print_labels=False, truncate_legend=56, **y_kw)
    for name, pts in plot["series"].items():
        chart.add(f"runs: {name}", [(pos[str(x)], fy(v)) for x, v in pts], stroke=False)
        by: dict[float, list[float]] = {}
        for x, v in pts:
            by.setdefault(pos[str(x)], []).append(v)
        chart.add(f"median: {name}", [(p, fy(statistics.median(by[p]))) for p in sorted(by)], show_dots=False)
    for i, r in enumerate(plot.get("region") or []):
        line = [(pos[str(x)] if str(x) in pos else fx(x), fy(y)) for x, y in r["points"]]
        if len(line) == 1 or len({p for p, _ in line}) == 1:  # one level: a line across the plot
            line = [(ps[0] - 0.1 * span, line[0][1]), (ps[-1] + 0.1 * span, line[0][1])]
        chart.add(plot["claim"] if i == 0 else None, line, show_dots=False, stroke_style={"width": 2, "dasharray": "8,4"})
    if plot.get("fit"):
        fit = [(fx(x), fy(y)) for x, y in plot["fit"]]
        chart.add(plot.get("fit_label") or "fitted", fit, show_dots=False, stroke_style={"width": 2, "dasharray": "2,3"})
    _save(chart, path)


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values for a log axis over [lo, hi] (both > 0, padded by 1.25×): the first of 1-2-5,
    1-2-3-5, decades, or 1…9 per decade that gives four to eight ticks (else the fullest under nine)."""
    a, b = lo / 1.25, hi * 1.25
    decades = range(math.floor(math.log10(a)), math.ceil(math.log10(b)) + 1)
    options = [[m * 10.0 ** e for e in decades for m in steps if a <= m * 10.0 ** e <= b]
               for steps in ((1, 2, 5), (1, 2, 3, 5), (1,), (1, 2, 3, 4, 5, 6, 7, 8, 9))]
    fits = [t for t in options if 4 <= len(t) <= 8]
    if fits:
        return fits[0]
    return max((t for t in options if len(t) <= 8), key=len, default=options[2])


def tune_front(path: str, title: str, plot: dict[str, Any]) -> None:
    """A tuning study's trials on its first two objectives (core.report.tune_pareto): the dominated
    ones as dots, the Pareto front joined by a line; every point labelled with its trial number."""
    allp = plot["points"] + plot["front"]
    xs, ys = [p[0] for p in allp], [p[1] for p in allp]
    lo_x, lo_y = min(0.0, min(xs)), min(0.0, min(ys))
    chart = _chart("XY", title, plot["x_title"], plot["y_title"], colors=("#7f7f7f", "#d62728"),
                   range=(lo_y, _ymax(ys)), xrange=(lo_x, _ymax(xs)), value_formatter=fmt_axis, x_value_formatter=fmt_axis,
                   print_labels=len(allp) <= 40, dots_size=3)
    chart.add("trials", [{"value": (x, y), "label": f"#{n}"} for x, y, n in plot["points"]], stroke=False)
    chart.add("Pareto front", [{"value": (x, y), "label": f"#{n}"} for x, y, n in plot["front"]])
    _save(chart, path)


def roofline(path: str, title: str, view: dict[str, Any]) -> None:
    """The roofline (issue 43): x arithmetic intensity (FLOP/byte), y achieved TFLOP/s, both on log10
    scales; the calibrated ceilings as lines (the bandwidth slope, one flat roof per compute peak the
    points are held against) and each configuration a dot, its call in the legend."""
    pts = view["points"]
    bw = float(view["mem_bw_gbps"])
    peaks = [float(p) for p in view["peaks"]] or [max(p[1] for p in pts)]
    ridges = [p * 1e3 / bw for p in peaks]
    xs = [p[0] for p in pts] + ridges
    lo = math.floor(math.log10(max(min(xs) / 2, 1e-3)))
    hi = math.ceil(math.log10(max(xs) * 2))
    ys = [p[1] for p in pts] + peaks + [bw * 10 ** lo / 1e3]
    ylo = math.floor(math.log10(max(min(ys) / 2, 1e-6)))
    yhi = math.ceil(math.log10(max(ys) * 1.5))
    chart = _chart("XY", title, "arithmetic intensity (FLOP/byte, log)", "achieved TFLOP/s (log)",
                   range=(ylo, yhi), xrange=(lo, hi), x_labels=list(range(lo, hi + 1)),
                   y_labels=list(range(ylo, yhi + 1)),
                   x_value_formatter=lambda v: fmt_written(10 ** v), value_formatter=lambda v: fmt_axis(10 ** v),
                   dots_size=4, stroke=False)
    for peak, ridge in zip(peaks, ridges):
        roof = [(lo, math.log10(bw * 10 ** lo / 1e3)), (math.log10(ridge), math.log10(peak)), (hi, math.log10(peak))]
        chart.add(f"ceiling: {fmt_num(bw)} GB/s, {fmt_num(peak)} TFLOP/s", [
            {"value": v} for v in roof], stroke=True, show_dots=False, stroke_style={"width": 2})
    for x, y, name, bound in pts:
        chart.add(f"{name}: {bound or 'undecided'}", [{"value": (math.log10(x), math.log10(max(y, 1e-6))),
                                                       "label": f"{fmt_axis(y)} TFLOP/s at {fmt_axis(x)} FLOP/B"}])
    _save(chart, path)
