"""The dashboard's plots read as its tables do (issue 44): every axis tick a person reads is in the
tables' number style (optlog.core.numfmt: `14,000`, `0.5`), never plotext's raw numbers (`13859.9`,
`1.00`), and each axis with numbers says their unit. Read from the plot's rendered text."""

from __future__ import annotations

import asyncio
import re

import pytest

pytest.importorskip("textual")

from _tui import _app, _until  # noqa: E402
from _verdicts import seed_runs  # noqa: E402

OT = "output_throughput"


def _table_style(t: str) -> bool:
    """A tick reads as the tables write its number: fmt_num or fmt_value gives back the same text
    (`14,000`, `0.5`, `64`); plotext's own (`13859.9`, `1.00`, `1.255`, `13860`) does not."""
    from optlog.core.numfmt import fmt_num, fmt_value

    try:
        v = float(t.replace(",", ""))
    except ValueError:
        return True  # a level's name (`all`, `tp8`) is not a number
    return t in (fmt_num(v), fmt_value(v))


def _plot_text(app, sel: str) -> str:
    from textual_plotext import PlotextPlot

    return app.query_one(sel).query_one(PlotextPlot).render().plain


def _ticks(text: str) -> tuple[list[str], list[str]]:
    """The y ticks (left of `┤`, right of `├`) and the x ticks (the line under the frame's bottom)."""
    lines = text.splitlines()
    ys = [m.group(1).strip() for ln in lines for m in [re.match(r"^\s*(\S[^┤│┌└]*?)┤", ln)] if m]
    ys += [m.group(1).strip() for ln in lines for m in [re.search(r"├(\S.*?)\s*$", ln)] if m]
    bottom = next(i for i, ln in enumerate(lines) if "└" in ln)
    xs = lines[bottom + 1].split() if bottom + 1 < len(lines) else []
    return ys, xs


def _assert_reads(text: str, unit: str) -> None:
    ys, xs = _ticks(text)
    assert ys, text
    for t in ys + xs:
        assert _table_style(t), f"raw tick {t!r}:\n{text}"
    assert unit in text, text


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_prediction_plot_ticks_in_the_tables_style(ws, monkeypatch, size):
    rows = []
    for c, a, b in ((1, 13859.9, 12011.3), (2, 14500.2, 12877.7), (4, 16020.7, 13003.1)):
        rows += [({"parallel": 4, "concurrency": c}, {OT: a}), ({"parallel": 1, "concurrency": c}, {OT: b})]
    seed_runs(ws, rows)
    ws.cli("hypothesis", "add", "Batching pays", "--id", "batching")
    ws.cli("predict", "add", "batching", "--expect", "a > b", "--metric", OT, "--a", "parallel=4", "--b", "parallel=1",
           "--per", "concurrency")
    ws.cli("verdict", "batching")
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=size) as pilot:
            assert await _until(pilot, lambda: app.detail and app.detail.get("plot"), 15)
            assert await _until(pilot, lambda: app.query_one("#pred-plot").has_class("shown"), 10)
            await pilot.pause(0.2)
            return _plot_text(app, "#pred-plot")

    text = asyncio.run(go())
    _assert_reads(text, "tok/s")
    ys, _ = _ticks(text)
    assert any("," in t for t in ys), text  # 14,000: thousands separated


def test_telemetry_plot_ticks_in_the_tables_style(ws, monkeypatch):
    from optlog.paths import Workspace as OWs
    from optlog.store.db import Database
    from optlog.telemetry.store import write_samples

    rid = seed_runs(ws, [({"config": "tp8"}, {OT: 700.0, "gpu_power_w": 330.0})])[0]
    db = Database(OWs(ws.root), url=ws.env.get("OPTLOG_DB_URL"))
    try:
        with db.write() as s:
            write_samples(s, [{"t": 1000.0 + i * 0.37, "gpu": 0, "uuid": "GPU-0", "gpu_power_w": 1203.7 + 3.3 * i,
                               "dram_bw_util": 40.0} for i in range(100)], run_id=rid, launch_id=None)
    finally:
        db.dispose()
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(100, 40)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.press("3")
            plot = app.query_one("#tel-plot")
            assert await _until(pilot, lambda: plot.has_class("shown"), 10)
            await pilot.pause(0.2)
            return _plot_text(app, "#tel-plot")

    text = asyncio.run(go())
    _assert_reads(text, "W")
    assert "s since the run's first sample" in text, text
