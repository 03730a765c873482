"""The dashboard in a real terminal: tmux runs bare `optlog` on a workspace; keys go in, the pane comes out."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True, timeout=10).stdout


def _pane(name: str) -> str:
    return _tmux("capture-pane", "-p", "-t", name)


def _wait(name: str, text: str, timeout: float = 20) -> str:
    end = time.monotonic() + timeout
    out = ""
    while time.monotonic() < end:
        out = _pane(name)
        if text in out:
            return out
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not on screen after {timeout}s:\n{out}")


def test_optlog_in_tmux(ws):
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    ws.cli("todo", "add", "bench tp4pp2")
    name = f"optlog-test-{uuid.uuid4().hex[:8]}"
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in ws.env.items())
    cmd = f"cd {shlex.quote(str(ws.root))} && env {env} TERM=xterm-256color {shlex.quote(sys.executable)} -m optlog"
    _tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "30", cmd)
    try:
        _wait(name, "comm-bound")  # the tree (painted from the index before the database opens)
        out = _wait(name, "Quit")  # the footer's bindings follow within the same start-up
        assert "Hypotheses" in out and "comm-bound" in out
        _wait(name, "1 open todos")  # the first screen's overview line: what the agent has to do
        _tmux("send-keys", "-t", name, "2")
        _wait(name, "bench tp4pp2")
        # a change from another process shows up while the dashboard is open
        ws.cli("hypothesis", "add", "Pipeline bubbles", "--id", "bubbles")
        _tmux("send-keys", "-t", name, "1")
        _wait(name, "bubbles", 5)
        _tmux("send-keys", "-t", name, "q")
        end = time.monotonic() + 10
        while time.monotonic() < end and name in subprocess.run(["tmux", "ls"], capture_output=True, text=True).stdout:
            time.sleep(0.1)
        assert name not in subprocess.run(["tmux", "ls"], capture_output=True, text=True).stdout  # q quits
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
