"""The TUI through Textual's pilot: actions go through the service layer, and changes made by
another process (the agent's CLI) appear without a restart."""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("textual")


from _tui import _app, _fill, _todos, _tree_ids, _until  # noqa: E402


def test_add_hypothesis_and_pivot_from_keyboard(ws, monkeypatch):
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            assert await _until(pilot, lambda: "comm-bound" in _tree_ids(app))
            await pilot.press("A")  # pivot: a child of the selected hypothesis
            await _fill(pilot, "Compute-bound FP4 GEMM")
            await pilot.press("ctrl+s")
            ok = await _until(pilot, lambda: "compute-bound-fp4-gemm" in _tree_ids(app))
            assert ok, [n.message for n in app._notifications]
            await app.workers.wait_for_complete()

    asyncio.run(go())
    h = ws.j("hypothesis", "show", "compute-bound-fp4-gemm")
    assert h["parent"] == "comm-bound"
    assert "add hypothesis compute-bound-fp4-gemm" in ws.git("log", "-1", "--format=%s")


def test_todo_actions_and_override(ws, monkeypatch):
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    ws.cli("todo", "write", "-", input='{"todos":[{"content":"bench tp4pp2","status":"pending","id":"1"}]}')
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.press("2")
            await pilot.press("space")  # pending -> in_progress
            assert await _until(pilot, lambda: _todos(app)[0]["status"] == "in_progress", 15)
            await pilot.press("x")
            assert await _until(pilot, lambda: _todos(app)[0]["status"] == "cancelled", 15)
            await pilot.press("t")
            await _fill(pilot, "investigate GEMM")
            await pilot.press("ctrl+s")
            assert await _until(pilot, lambda: len(_todos(app)) == 2, 15)
            await pilot.press("1")
            await pilot.press("o")
            await pilot.press("tab")  # status select -> why
            await _fill(pilot, "seen by eye")
            await pilot.press("ctrl+s")
            assert await _until(pilot, lambda: app.hyp_docs.get("comm-bound") is not None and app.hyp_docs["comm-bound"].override is not None, 15)
            await pilot.press("n")
            await _fill(pilot, "autotune crashes at M128")
            await pilot.press("ctrl+s")
            await app.workers.wait_for_complete()

    asyncio.run(go())
    assert [n["text"] for n in ws.j("note", "list")["notes"]] == ["autotune crashes at M128"]


def test_changes_from_another_process_appear(ws, monkeypatch):
    app = _app(ws, monkeypatch, poll_s=0.2)

    async def go():
        async with app.run_test(size=(80, 24)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            loop = asyncio.get_running_loop()
            t0 = time.monotonic()
            await loop.run_in_executor(None, lambda: ws.cli("hypothesis", "add", "Pipeline bubbles", "--id", "bubbles"))
            t1 = time.monotonic()
            assert await _until(pilot, lambda: "bubbles" in _tree_ids(app), 5)
            seen = time.monotonic() - t1
            await loop.run_in_executor(None, lambda: ws.cli("run", "record", "--label", "config=tp8", "--metric", "x=1"))
            from textual.widgets import DataTable

            assert await _until(pilot, lambda: app.query_one("#runs-table", DataTable).row_count == 1, 5)
            return seen

    seen = asyncio.run(go())
    assert seen < 1.5  # visible within about a second of the other process finishing


def test_errors_are_notifications_not_tracebacks(ws, monkeypatch):
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.press("p")  # no hypothesis selected
            await pilot.pause(0.1)
            msgs = [n.message for n in app._notifications]
            await pilot.press("a")
            await _fill(pilot, "X")
            await pilot.press("tab", "tab", "tab")
            await _fill(pilot, "no-such-rival")
            await pilot.press("ctrl+s")
            await app.workers.wait_for_complete()
            await pilot.pause(0.1)
            return msgs, [n.message for n in app._notifications]

    first, later = asyncio.run(go())
    assert any("select a hypothesis" in m for m in first)
    assert any("no-such-rival" in m for m in later)
    assert ws.j("hypothesis", "list")["hypotheses"] == []
