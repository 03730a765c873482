"""Snapshots of the dashboard's main screens on the GLM-5 case study (examples/glm5_case_study.py):
a fixed clock, a fixed terminal size, and every load finished before the picture is taken.

Update after an intended change: pytest tests/tui/test_tui_snapshots.py --snapshot-update (and look at
the SVGs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")

REPO = Path(__file__).resolve().parents[2]
SIZE = (120, 40)
pytestmark = pytest.mark.sqlite_only  # the case study builds its own SQLite workspace


@pytest.fixture(scope="module")
def glm5(tmp_path_factory):
    root = tmp_path_factory.mktemp("glm5") / "ws"
    env = {k: v for k, v in os.environ.items() if k != "OPTLOG_DB_URL"}
    subprocess.run([sys.executable, str(REPO / "examples" / "glm5_case_study.py"), str(root)], check=True, env=env,
                   capture_output=True, timeout=300)
    return root


def _app(root, monkeypatch):
    monkeypatch.delenv("OPTLOG_DB_URL", raising=False)
    monkeypatch.setenv("OPTLOG_NOW", "2026-02-18T12:00:00.000Z")
    from optlog.service.context import Ctx
    from optlog.tui.app import OptlogApp

    return OptlogApp(Ctx.find(root), poll_s=3600)  # no polling: the picture must not move


async def _settle(pilot, *keys):
    app = pilot.app
    while app.loads == 0:
        await pilot.pause(0.05)
    await app.workers.wait_for_complete()
    for k in keys:
        await pilot.press(k)
        await pilot.pause(0.1)
        await app.workers.wait_for_complete()
    await pilot.pause(0.2)
    await app.workers.wait_for_complete()


def test_hypotheses_screen(glm5, monkeypatch, snap_compare):
    assert snap_compare(_app(glm5, monkeypatch), terminal_size=SIZE, run_before=lambda p: _settle(p))


def test_hypothesis_child_with_predictions(glm5, monkeypatch, snap_compare):
    assert snap_compare(_app(glm5, monkeypatch), terminal_size=SIZE, run_before=lambda p: _settle(p, "down", "down"))  # past comm-bound.p1


def test_runs_screen(glm5, monkeypatch, snap_compare):
    assert snap_compare(_app(glm5, monkeypatch), terminal_size=SIZE, run_before=lambda p: _settle(p, "3", "down"))


def test_todos_screen(glm5, monkeypatch, snap_compare):
    assert snap_compare(_app(glm5, monkeypatch), terminal_size=SIZE, run_before=lambda p: _settle(p, "2"))


def test_plans_screen_small_terminal(glm5, monkeypatch, snap_compare):
    assert snap_compare(_app(glm5, monkeypatch), terminal_size=(80, 24), run_before=lambda p: _settle(p, "4"))


def test_overview_large_terminal(glm5, monkeypatch, snap_compare):
    """The first screen at 160×48: tree with claims, detail, and the overview pane beside them."""
    assert snap_compare(_app(glm5, monkeypatch), terminal_size=(160, 48), run_before=lambda p: _settle(p))


def test_overview_small_terminal(glm5, monkeypatch, snap_compare):
    """The first screen at 80×24: the overview collapses to one line above the tree."""
    assert snap_compare(_app(glm5, monkeypatch), terminal_size=(80, 24), run_before=lambda p: _settle(p))
