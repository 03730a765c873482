"""Opening the dashboard from the CLI: `optlog tui` (optlog.cli.faces), bare `optlog` on a
terminal, and the end of `optlog demo` (the CLI's `Call.dashboard`). Textual loads only here,
and only when the dashboard opens.

A module apart from `faces` because the CLI's `Call` names it: `faces` imports the MCP server,
whose face imports the bindings back.
"""

from __future__ import annotations

import sys

from optlog.cli.main import state


def open_tui(chdir: str | None) -> None:
    from optlog.tui.app import run_tui  # deferred: Textual

    run_tui(chdir)


def dashboard(workspace: str) -> bool:
    """The CLI's `Call.dashboard`: the dashboard on `workspace` when a person is at a terminal and
    asked for no JSON document (then True, once it is closed); else False, and nothing opens."""
    if state().json or not (sys.stdout.isatty() and sys.stdin.isatty()):
        return False
    open_tui(workspace)
    return True
