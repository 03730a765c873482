"""Helper for the tests that call a tool of the MCP face in-process (`optlog.mcp.face.Face`) with the
test workspace's environment, to compare its document with the CLI's `--json` one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest


# what a test workspace's CLI subprocesses get that an in-process call must get too (its database,
# git identity and config, actor)
WS_ENV = ("OPTLOG_DB_URL", "GIT_CONFIG_GLOBAL", "OPTLOG_ACTOR", "HOME")


def use_env(ws: Any, monkeypatch: Any, *extra: str) -> None:
    """Give this process the workspace's environment (WS_ENV and `extra`), as its CLI calls have it."""
    for k in (*WS_ENV, *extra):
        if k in ws.env:
            monkeypatch.setenv(k, ws.env[k])


@contextmanager
def face(ws: Any, monkeypatch: Any, *extra: str) -> Iterator[Callable[..., tuple[Any, bool, int]]]:
    """`call(name, args) -> (document, is_error, exit_code)` on one long-lived face, as a server holds it."""
    use_env(ws, monkeypatch, *extra)
    from optlog.mcp.face import Face

    f = Face(str(ws.root))
    try:
        yield f.call
    finally:
        f.close()


def ok(result: tuple[Any, bool, int]) -> Any:
    """The document of a call that succeeded (exit 0)."""
    doc, err, code = result
    assert not err and code == 0, doc
    return doc


@pytest.fixture
def tool(ws: Any, monkeypatch: Any) -> Iterator[Callable[..., tuple[Any, bool, int]]]:
    """`face` as a fixture: `tool(name, args) -> (document, is_error, exit_code)`."""
    with face(ws, monkeypatch) as call:
        yield call
