"""The dashboard as a new user meets it (issue 48 item 5): `?` opens the keys, an empty tab says
what would fill it, and Plans says whether each plan's needs hold."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("textual")

from _tui import _app, _until  # noqa: E402


def _cells(app, sel):
    t = app.query_one(sel)
    return [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]


def test_question_mark_opens_the_keys_and_empty_tabs_say_what_fills_them(ws, monkeypatch):
    from textual.widgets import HelpPanel

    from optlog.tui.panes.todos import TodosTable

    app = _app(ws, monkeypatch)
    seen: dict[str, list[list[str]]] = {}

    async def go():
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.5)
            await pilot.press("question_mark")
            assert await _until(pilot, lambda: bool(app.screen.query(HelpPanel))), "? opened no keys panel"
            await pilot.press("question_mark")
            assert await _until(pilot, lambda: not app.screen.query(HelpPanel)), "? again did not close it"
            for key, sel in (("2", "#todo-table"), ("4", "#plan-table"), ("5", "#log-table")):
                await pilot.press(key)
                assert await _until(pilot, lambda: app.query_one(sel).row_count >= 1, 15), sel
                seen[sel] = _cells(app, sel)
            assert app.query_one("#todo-table", TodosTable).selected() is None  # the line is no todo

    asyncio.run(go())
    assert "no todos yet: t adds one" in " ".join(seen["#todo-table"][0]), seen
    assert "no plans yet: P adds one" in " ".join(seen["#plan-table"][0]), seen


def test_plans_say_whether_each_plans_needs_hold(ws, monkeypatch):
    ws.cli("hypothesis", "add", "A", "--id", "a")
    ws.cli("hypothesis", "add", "B", "--id", "b")
    ws.cli("hypothesis", "set", "a", "--status", "confirmed", "--why", "measured elsewhere")
    ws.cli("hypothesis", "set", "b", "--status", "falsified", "--why", "measured elsewhere")
    ws.cli("plan", "add", "Rests on a", "--gain", "10-20%", "--effort", "S", "--confidence", "0.5", "--needs", "a")
    ws.cli("plan", "add", "Rests on b", "--gain", "10-20%", "--effort", "S", "--confidence", "0.5", "--needs", "b")
    app = _app(ws, monkeypatch)
    seen: list[list[str]] = []

    async def go():
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("4")
            assert await _until(pilot, lambda: app.query_one("#plan-table").row_count == 2, 15)
            seen.extend(_cells(app, "#plan-table"))

    asyncio.run(go())
    needs = {row[6]: row[4] for row in seen}  # columns: rank id score gain needs status title why
    assert needs == {"Rests on a": "✓ a", "Rests on b": "✗ b"}, needs
