"""Every action of the dashboard (issue 9, point 3) from the keyboard, through the real service layer."""

from __future__ import annotations

import asyncio
import re

import pytest

pytest.importorskip("textual")

from _launch import PY, assert_no_survivors, spec  # noqa: E402
from _tui import _app, _fill, _form, _messages, _tree_ids, _until  # noqa: E402
from _verdicts import seed_runs  # noqa: E402

SEED = [(64, 700, 213), (256, 1867, 727), (512, 2800, 1318)]
TTT = "total_token_throughput"


def test_prediction_verdict_detail_plot_and_invalidate(ws, monkeypatch):
    seed_runs(ws, [row for c, tp8, tp4pp2 in SEED for row in (
        ({"config": "tp8", "concurrency": c}, {TTT: tp8}), ({"config": "tp4pp2", "concurrency": c}, {TTT: tp4pp2}))])
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    app = _app(ws, monkeypatch)

    async def go():
        from textual.widgets import DataTable

        from optlog.service import evidence

        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            assert await _until(pilot, lambda: "comm-bound" in _tree_ids(app))
            await pilot.press("p")
            await _form(pilot, app, expect="a > b", a="config=tp4pp2", b="config=tp8")
            assert await _until(pilot, lambda: app.detail and app.detail["predictions"], 15), _messages(app)
            await pilot.press("v")
            assert await _until(pilot, lambda: app.detail and app.detail["status"] == "falsified", 15), _messages(app)
            pred = app.detail["predictions"][0]
            assert [lv["outcome"] for lv in pred["levels"]] == ["fails"] * 3
            assert app.detail["plot"]["x"] == ["64", "256", "512"]
            assert app.detail["plot"]["groups"] == {"tp4pp2": [213, 727, 1318], "tp8": [700, 1867, 2800]}  # named as the report names them (issue 32)
            assert app.query_one("#pred-plot").has_class("shown")
            assert any(v["kind"] == "auto" for v in app.detail["verdicts"])
            assert len(app.detail["linked"]) == 6  # the runs the verdict used
            await pilot.press("N")  # optlog next: comm-bound has no rival or parent yet, and it says so
            assert await _until(pilot, lambda: any("no rival or parent" in m for m in _messages(app)), 15), \
                _messages(app)
            # invalidate asks why: empty is refused, a reason goes through
            await pilot.press("3")
            assert await _until(pilot, lambda: app.query_one("#runs-table", DataTable).row_count == 6)
            if not await _until(pilot, lambda: app.selected_run is not None, 3):
                await pilot.press("down", "up")  # a highlight event, if the first one was lost to a reload
            assert await _until(pilot, lambda: app.selected_run is not None), _messages(app)
            rid = app.selected_run
            await pilot.press("i")
            await _form(pilot, app)
            assert await _until(pilot, lambda: any("required" in m for m in _messages(app)), 5)
            await _fill(pilot, "wrong model")
            await pilot.press("ctrl+s")
            assert await _until(pilot, lambda: evidence.get_run(app.ctx, rid).invalidated, 15), _messages(app)
            await app.workers.wait_for_complete()

    asyncio.run(go())
    r = ws.j("run", "show", "1")
    assert r["invalidated"] and r["invalid_reason"] == "wrong model"
    assert "invalidate run 1" in ws.git("log", "--format=%s")


def test_launch_shows_progress_and_log_tail_and_cancels(ws, monkeypatch):
    code = "import time; print('bench started', flush=True); time.sleep(60)"
    rel = spec(ws, "long", server=False, bench={"cmd": f'{PY} -c "{code}"'})
    app = _app(ws, monkeypatch)

    async def go():
        from textual.widgets import Log

        from optlog.service import launch

        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.press("l")
            await _form(pilot, app, spec=rel)
            assert await _until(pilot, lambda: app.active_launch is not None, 20), _messages(app)
            box = app.query_one("#launch-box", Log)
            assert box.has_class("shown")
            assert await _until(pilot, lambda: any("running" in ln for ln in box.lines), 10)
            assert await _until(pilot, lambda: any("| " in ln for ln in box.lines), 20), list(box.lines)  # log tail
            lid = app.active_launch
            await pilot.press("c")
            ok = await _until(pilot, lambda: launch.status(app.ctx, f"L{lid}")["status"] == "cancelled", 60)
            assert ok, _messages(app)
            assert await _until(pilot, lambda: not box.has_class("shown"), 10)
            await app.workers.wait_for_complete()

    asyncio.run(go())
    assert_no_survivors(str(ws.root))


def test_plans_report_log_and_the_palette(ws, monkeypatch):
    ws.cli("hypothesis", "add", "Compute-bound", "--id", "compute-bound")
    app = _app(ws, monkeypatch)

    async def go():
        from textual.command import CommandPalette
        from textual.widgets import DataTable, TabbedContent

        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            assert await _until(pilot, lambda: "compute-bound" in _tree_ids(app))
            # every action is in the command palette
            titles = [c.title for c in app.get_system_commands(app.screen)]
            for b in app.BINDINGS:
                if b.action != "quit" and not b.action.startswith("tab("):
                    assert any(t.startswith(b.description) for t in titles), b.description
            await pilot.press("P")
            await _form(pilot, app, title="FP4 GEMM autotune", gain="10-30%", confidence="0.6")
            assert await _until(pilot, lambda: app.query_one("#plan-table", DataTable).row_count == 1, 15), _messages(app)
            # render plans from the palette: ctrl+p, type, enter
            await pilot.press("ctrl+p")
            assert await _until(pilot, lambda: isinstance(app.screen, CommandPalette), 5)
            await _fill(pilot, "render plans")
            await pilot.pause(0.3)
            await pilot.press("enter")
            assert await _until(pilot, lambda: any("plans rendered" in m for m in _messages(app)), 15), _messages(app)
            await pilot.press("r")
            assert await _until(pilot, lambda: any("report written" in m for m in _messages(app)), 30), _messages(app)
            await pilot.press("g")
            assert await _until(pilot, lambda: app.query_one("#tabs", TabbedContent).active == "log", 10)
            assert await _until(pilot, lambda: app.query_one("#log-table", DataTable).row_count >= 3, 10)
            await app.workers.wait_for_complete()
            return _messages(app)

    msgs = asyncio.run(go())
    assert list((ws.root / "glb5improvement").glob("*.md")) or list(ws.root.rglob("*improvement*.md")), msgs
    subjects = ws.git("log", "--format=%s")
    assert "plan" in subjects and "report" in subjects.lower()


def test_hand_edit_of_a_hypothesis_file_appears(ws, monkeypatch):
    ws.cli("hypothesis", "add", "Pipeline bubbles", "--id", "bubbles")
    app = _app(ws, monkeypatch, poll_s=0.5)

    async def go():
        import time

        async with app.run_test(size=(80, 24)) as pilot:
            assert await _until(pilot, lambda: app.detail is not None and app.detail["id"] == "bubbles")
            f = ws.root / "hypotheses" / "bubbles.yaml"
            f.write_text(f.read_text().replace("title: Pipeline bubbles", "title: Pipeline bubbles at PP2"))
            t0 = time.monotonic()
            assert await _until(pilot, lambda: app.detail["title"] == "Pipeline bubbles at PP2", 5)
            return time.monotonic() - t0

    assert asyncio.run(go()) < 1.5  # about a second (poll 0.5 s + reload), with slack for a loaded CI machine


def test_no_color_is_respected(ws, monkeypatch):
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    monkeypatch.setenv("NO_COLOR", "1")
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(80, 24)) as pilot:
            assert await _until(pilot, lambda: "comm-bound" in _tree_ids(app))
            await pilot.pause(0.2)
            return app.no_color, app.export_screenshot()

    no_color, svg = asyncio.run(go())
    assert no_color
    colours = set(re.findall(r"fill: #([0-9a-f]{6})", svg))
    assert colours
    grey = lambda c: max(abs(int(c[i:i + 2], 16) - int(c[j:j + 2], 16)) for i, j in ((0, 2), (2, 4), (0, 4))) <= 8  # noqa: E731
    assert all(grey(c) for c in colours), sorted(c for c in colours if not grey(c))


def test_run_detail_plots_telemetry_over_time(ws, monkeypatch):
    from optlog.paths import Workspace as OWs
    from optlog.store.db import Database
    from optlog.telemetry.store import write_samples

    rid = seed_runs(ws, [({"config": "tp8"}, {TTT: 700.0, "gpu_power_w": 330.0, "tensor_active": 12.0})])[0]
    db = Database(OWs(ws.root), url=ws.env.get("OPTLOG_DB_URL"))
    try:
        with db.write() as s:
            write_samples(s, [{"t": 1000.0 + i * 0.1, "gpu": 0, "uuid": "GPU-0", "gpu_power_w": 300.0 + i,
                               "tensor_active": 10.0 + i % 5, "dram_bw_util": 40.0} for i in range(100)],
                          run_id=rid, launch_id=None)
    finally:
        db.dispose()
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(80, 24)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.press("3")
            plot = app.query_one("#tel-plot")
            assert await _until(pilot, lambda: plot.has_class("shown"), 10)
            await pilot.pause(0.1)
            return app.export_screenshot()

    svg = asyncio.run(go())
    assert f"run&#160;{rid}&#160;telemetry" in svg or f"run {rid} telemetry" in svg
