"""The dashboard's first screen as a person reads it (issue 19): the tree says what each hypothesis
claims and how its predictions stand, and nothing on screen is an empty widget."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("textual")

from _tui import _app, _until  # noqa: E402

CLAIM = "Communication-bound: cross-NUMA allreduce limits TP8 throughput"


def _labels(app):
    from textual.widgets import Tree

    out = []

    def walk(n):
        for c in n.children:
            out.append(str(c.label))
            walk(c)

    walk(app.query_one("#hyp-tree", Tree).root)
    return out


def _hyps(ws):
    ws.cli("hypothesis", "add", CLAIM, "--id", "comm-bound")
    ws.cli("prediction", "add", "comm-bound", "--expect", "a > b", "--metric", "tput",
           "--a", "config=tp4pp2", "--b", "config=tp8")
    ws.cli("hypothesis", "add", "Compute-bound FP4 GEMM", "--id", "compute-bound", "--parent", "comm-bound")


def test_tree_shows_claim_status_and_predictions(ws, monkeypatch):
    _hyps(ws)
    app = _app(ws, monkeypatch)

    async def go(size):
        async with app.run_test(size=size) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.pause(0.1)
            return _labels(app), app.query_one("#hyp-tree").scrollable_content_region.width

    labels, _ = asyncio.run(go((260, 50)))  # room for the whole claim
    assert labels[0] == f"○ comm-bound  {CLAIM}  open  1p"
    assert labels[1] == "· p1  untested  a > b"  # the prediction's state under its hypothesis
    assert labels[2] == "○ compute-bound  Compute-bound FP4 GEMM  open"

    app = _app(ws, monkeypatch)
    labels, width = asyncio.run(go((80, 24)))
    head = labels[0]
    assert head.startswith("○ comm-bound  Communi") and head.endswith("…  open  1p"), head
    assert len(head) <= width - 3  # cut to the tree, id and status kept whole


def test_recorded_run_detail_has_no_empty_bar(ws, monkeypatch):
    metrics = [f"--metric=metric_number_{i}={i}.5" for i in range(6)]
    for run in (1, 2):  # two runs whose every label differs: a label column each, wider than the table
        ws.cli("run", "record", *[f"--label=k{i}=a-rather-long-label-value-{i}-{run}" for i in range(6)], *metrics)
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(100, 30)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.press("3")
            assert await _until(pilot, lambda: app.selected_run == 1, 5)
            await pilot.pause(0.3)  # the detail loads once the cursor rests
            await app.workers.wait_for_complete()
            await pilot.pause(0.1)
            table = app.query_one("#runs-table")
            return (table.virtual_size.width > table.size.width, table.show_horizontal_scrollbar,
                    app.query_one("#tel-plot").has_class("shown"), app.query_one("#launch-box").has_class("shown"))

    wider, hbar, plot, launch = asyncio.run(go())
    assert wider  # the row is wider than the table: the case that drew a scrollbar
    assert not hbar and not plot and not launch


TODOS = ('{"todos":[{"content":"write the report","status":"pending","id":"1"},'
         '{"content":"bench tp8","activeForm":"Benchmarking tp8 at c=512","status":"in_progress","id":"2"},'
         '{"content":"old","status":"completed","id":"3"}]}')


def _pane(app):
    return str(app.query_one("#overview-text").content), str(app.query_one("#overview-line").content)


def test_overview_beside_the_tree_follows_the_agent(ws, monkeypatch):
    """The first screen says what the agent is doing (in progress first, its activeForm) and what is
    due; a `todo write` from another process appears without a key pressed."""
    _hyps(ws)
    ws.cli("run", "record", "--hypothesis", "comm-bound", "--label", "config=tp4pp2", "--metric", "tput=2")
    ws.cli("run", "record", "--hypothesis", "comm-bound", "--label", "config=tp8", "--metric", "tput=1")
    app = _app(ws, monkeypatch, poll_s=0.2)

    async def go():
        async with app.run_test(size=(160, 48)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.pause(0.1)
            shown = (app.query_one("#overview").display, app.query_one("#overview-line").display)
            before = _pane(app)[0]
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, lambda: ws.cli("todo", "write", "-", input=TODOS))
            assert await _until(pilot, lambda: "Benchmarking" in _pane(app)[0], 5), _pane(app)[0]
            return shown, before, _pane(app)[0], app.focused.id

    shown, before, after, focused = asyncio.run(go())
    assert shown == (True, False)
    assert "none open" in before and "comm-bound  " in before and "no verdict yet" in before  # runs, no verdict
    lines = after.splitlines()
    todo_lines = lines[1:3]
    assert todo_lines == ["[~] Benchmarking tp8 at c=512", "[ ] write the report"]  # in progress first
    assert "old" not in after and lines[0] == "Agent's todos  2 open of 3"
    assert focused == "hyp-tree"  # the keyboard stays on the tree


def test_overview_is_one_line_at_80x24(ws, monkeypatch):
    _hyps(ws)
    ws.cli("todo", "write", "-", input=TODOS)
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(80, 24)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.pause(0.1)
            await pilot.press("down")  # the tree keeps the keyboard
            await pilot.pause(0.1)
            return (app.query_one("#overview").display, app.query_one("#overview-line").display,
                    app.query_one("#overview-line").size.height, _pane(app)[1], app.selected_hyp)

    pane, line, height, text, sel = asyncio.run(go())
    assert (pane, line, height) == (False, True, 1)
    assert text.startswith("doing: Benchmarking tp8 at c=512  2 open todos")
    assert sel == "comm-bound"  # down went to its prediction's row, which selects its hypothesis


def test_overview_collapses_when_the_terminal_shrinks(ws, monkeypatch):
    """A resize from 160×48 to 80×24 folds the overview pane into its line (it stayed a pane: the
    app's size had not followed the resize event yet)."""
    _hyps(ws)
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(160, 48)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            wide = (app.query_one("#overview").display, app.query_one("#overview-line").display)
            await pilot.resize_terminal(80, 24)
            await pilot.pause(0.2)
            small = (app.query_one("#overview").display, app.query_one("#overview-line").display)
            await pilot.resize_terminal(160, 48)
            await pilot.pause(0.2)
            return wide, small, (app.query_one("#overview").display, app.query_one("#overview-line").display)

    wide, small, again = asyncio.run(go())
    assert wide == (True, False) and small == (False, True) and again == (True, False)


def test_a_reload_reads_the_hypothesis_files_once(ws, monkeypatch):
    """The overview takes the documents the tree was just built from: status() used to sync the
    hypothesis files a second time on every reload (1.65 s → 2.05 s to load every tab at 1,000)."""
    _hyps(ws)
    ws.cli("todo", "write", "-", input='{"todos":[{"content":"bench tp8","status":"in_progress","id":"1"}]}')
    ws.cli("run", "record", "--label", "config=tp8", "--metric", "tput=1")
    from optlog.service import dashboard as D
    from optlog.service import hypotheses as H
    from optlog.service import todos as T

    app = _app(ws, monkeypatch, poll_s=3600)
    calls = []
    real = H.sync
    monkeypatch.setattr(H, "sync", lambda ctx, *a, **kw: calls.append(1) or real(ctx, *a, **kw))

    async def go():
        async with app.run_test(size=(160, 48)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await app.workers.wait_for_complete()
            n = len(calls)
            app._load_all()
            return len(calls) - n

    assert asyncio.run(go()) == 1
    # and the overview says the same with the documents given or read
    ctx = app.ctx
    docs = D.hypotheses_view(ctx)[1]
    todos = T.list_(ctx)
    assert D.overview(ctx, todos, docs) == D.overview(ctx, todos)


def test_prediction_plot_series_answers_the_question():
    """What the plot draws (service.dashboard.prediction_series): numbers for a log2 axis when the
    levels span like concurrency, each group's repeat spread, the tested quantity per level and the
    prediction's threshold."""
    from optlog.service.dashboard import log2_axis, prediction_series

    lv = lambda c, a, b, est: {"level": {"concurrency": c}, "a": sum(a) / len(a), "b": sum(b) / len(b),  # noqa: E731
                               "values": {"a": a, "b": b}, "quantity": "a/b", "estimate": est, "ci": None,
                               "threshold": [0.3, 0.6]}
    h = {"predictions": [{"id": "x.p1", "metric": "tput", "per": "concurrency", "a": {"config": "tp4pp2"},
                          "b": {"config": "tp8"}, "expect": "a / b in [0.3, 0.6]"}],
         "verdict_details": [{"predictions": [{"id": "x.p1", "levels": [
             lv(64, [200.0, 226.0], [700.0], 0.304), lv(256, [727.0], [1867.0], 0.389), lv(512, [1318.0], [2800.0], 0.471)]}]}]}
    s = prediction_series(h)
    assert s["x"] == ["64", "256", "512"] and s["xv"] == [64.0, 256.0, 512.0] and s["log2"]
    assert s["spread"]["tp4pp2"] == [(200.0, 226.0), None, None]  # groups named as the report names them
    assert s["quantity"] == "a/b" and s["estimates"] == [0.304, 0.389, 0.471] and s["threshold"] == [0.3, 0.6]
    assert not log2_axis([1.0, 2.0, 4.0]) and not log2_axis(None) and log2_axis([1.0, 8.0])
