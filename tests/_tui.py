"""Helpers for the TUI's pilot tests."""

from __future__ import annotations

import time

def _app(ws, monkeypatch, poll_s=0.2):
    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("OPTLOG_DB_URL", raising=False)
    if "OPTLOG_DB_URL" in ws.env:
        monkeypatch.setenv("OPTLOG_DB_URL", ws.env["OPTLOG_DB_URL"])
    from optlog.service.context import Ctx
    from optlog.tui.app import OptlogApp

    return OptlogApp(Ctx.find(ws.root), poll_s=poll_s)


def _todos(app):
    from optlog.service import todos

    return todos.list_(app.ctx)


async def _until(pilot, cond, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        await pilot.pause(0.05)
        if cond():
            return True
    return False


async def _fill(pilot, text):
    for ch in text:
        await pilot.press(ch if ch != " " else "space")


def _tree_ids(app):
    from textual.widgets import Tree

    out = []

    def walk(n):
        for c in n.children:
            out.append(c.data)
            walk(c)

    walk(app.query_one("#hyp-tree", Tree).root)
    return out


async def _form(pilot, app, **values):
    """Fill the open form (FormScreen) and submit it with ctrl+s, as a person would after typing."""
    from optlog.tui.forms import FormScreen

    assert await _until(pilot, lambda: isinstance(app.screen, FormScreen), 5), "no form opened"
    for k, v in values.items():
        app.screen.query_one(f"#f-{k}").value = v
    await pilot.press("ctrl+s")
    await pilot.pause(0.05)


def _messages(app):
    return [str(n.message) for n in app._notifications]


def _static(app, sel):
    """A Static widget's content as the code set it (markup and all)."""
    from textual.widgets import Static

    return str(app.query_one(sel, Static).content)


def _rendered(app, sel, width=140):
    """A Static widget's content as a terminal shows it (styles dropped, tables drawn)."""
    from rich.console import Console
    from textual.widgets import Static

    with open("/dev/null", "w") as sink:
        con = Console(width=width, record=True, file=sink)
        con.print(app.query_one(sel, Static).content)
    return con.export_text()
