"""The overview's live launch pane (issue 19.1): a real launch of the test server runs in another
process (the CLI, `optlog run launch`) while the dashboard is open; the pane follows it from the
launcher's own records: the point of N and its labels, elapsed and left, the failure as it happens,
the log's last lines, and it goes away when the launch ends."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys

import pytest

pytest.importorskip("textual")

from _launch import assert_no_survivors, bench_cmd, spec  # noqa: E402
from _tui import _app, _static, _until  # noqa: E402


def test_overview_follows_a_real_launch_in_another_process(ws, monkeypatch):
    rel = spec(ws, "sweep", matrix=None, include=[{"concurrency": 1, "code": 0}, {"concurrency": 2, "code": 3},
                                                  {"concurrency": 3, "code": 0}],
               bench={"cmd": bench_cmd("--sleep 1.5 --exit {{ code }} --stderr boom-at-two")})
    app = _app(ws, monkeypatch, poll_s=0.2)

    async def go():
        async with app.run_test(size=(160, 48)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            assert not app.query_one("#overview-launch").display
            proc = subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", rel], cwd=ws.root, env=ws.env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                seen = {}
                ok = await _until(pilot, lambda: "point 1 of 3" in _static(app, "#overview-launch"), 30)
                assert ok, _static(app, "#overview-launch")
                seen["first"] = _static(app, "#overview-launch")
                # this machine's live telemetry while the launch runs here (no GPU: load and CPU use)
                # (the title says "CPU" too: wait for the CPU line itself, which needs a second sample)
                ok = await _until(pilot, lambda: app.query_one("#overview-telemetry").display and any(
                    ln.startswith("CPU") for ln in _static(app, "#overview-telemetry").splitlines()), 15)
                assert ok, _static(app, "#overview-telemetry")
                seen["tele"] = _static(app, "#overview-telemetry")
                # the elapsed time moves between the launcher's writes
                e0 = app._launches[0]["elapsed_s"]
                assert await _until(pilot, lambda: app._launches and app._launches[0]["elapsed_s"] >= e0 + 0.5, 5)
                # the failed run (the database) and its line in the launch's log (written just after the
                # commit): the pane may be drawn between the two, so wait for both
                # (the text that satisfied the wait is the one checked below: a later draw may have scrolled the log)
                def failed_shown():
                    t = _static(app, "#overview-launch")
                    if "✘ run 2 failed" in t and re.search(r"│ \d\d:\d\d:\d\d run 2 failed \[2/3\]", t):
                        seen["failed"] = t
                        return True
                    return False

                ok = await _until(pilot, failed_shown, 30)
                assert ok, _static(app, "#overview-launch")
                seen["line"] = _static(app, "#overview-line")
                ok = await _until(pilot, lambda: not app.query_one("#overview-launch").display, 40)
                assert ok, _static(app, "#overview-launch")
                assert await _until(pilot, lambda: not app.query_one("#overview-telemetry").display, 5)
                await app.workers.wait_for_complete()
            finally:
                err = proc.communicate(timeout=60)[1]
            return seen, proc.returncode, err

    seen, rc, err = asyncio.run(go())
    first = seen["first"]
    tele = seen["tele"].splitlines()
    assert tele[0] == "This machine, live (CPU)", tele
    assert tele[1].startswith("load") and tele[2].startswith("CPU") and tele[2].rstrip().endswith("%"), tele
    assert any(ch in tele[2] for ch in "▁▂▃▄▅▆▇█"), tele
    assert "Launch L1  running  runs/sweep.yaml" in first
    assert "now: concurrency=1" in first and "(run 1)" in first
    assert "elapsed 0:0" in first and "left – (after the first point)" in first
    failed = seen["failed"]
    assert "✘ run 2 failed: bench exited with code 3 … boom-at-two" in failed, failed
    # seen as it happened: between the points, or once the last one started
    assert ("2 of 3 points done" in failed or "point 3 of 3" in failed) and "~" in failed.split("left ")[1], failed
    assert re.search(r"│ \d\d:\d\d:\d\d run 2 failed \[2/3\]", failed), failed  # the log's last lines
    assert re.match(r"L1 [23]/3 0:0\d ~0:0\d left  ✘1 failed", seen["line"]), seen["line"]
    assert rc == 1, err  # a point failed
    assert_no_survivors(str(ws.root))


def test_overview_shows_a_running_study_its_trials_and_best_so_far(ws, monkeypatch):
    from tests.integration.test_tune import _spec

    rel = _spec(ws, sleep=2.5, search={"x": {"low": 1, "high": 3}, "mode": {"choices": ["a"]}})
    app = _app(ws, monkeypatch, poll_s=0.2)

    async def go():
        async with app.run_test(size=(160, 48)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            proc = subprocess.Popen([sys.executable, "-m", "optlog", "tune", rel, "--maximize", "output_throughput",
                                     "--sampler", "grid", "--remeasure", "0"], cwd=ws.root, env=ws.env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                seen = {}
                # a trial under way: the study, its trials by state
                ok = await _until(pilot, lambda: re.search(r"study t: \d trials? \(.*1 running",
                                                           _static(app, "#overview-launch")), 30)
                assert ok, _static(app, "#overview-launch")
                # after the first trial: the best so far, from its first reading
                best = ("study t: 3 trials (2 complete, 1 running)\nbest so far (first readings):\n"
                        "  #1 x=2 mode=a → output_throughput=20.0")
                ok = await _until(pilot, lambda: best in _static(app, "#overview-launch"), 30)
                assert ok, _static(app, "#overview-launch")
                seen["best"] = _static(app, "#overview-launch")
                ok = await _until(pilot, lambda: not app.query_one("#overview-launch").display, 40)
                assert ok, _static(app, "#overview-launch")
                await app.workers.wait_for_complete()
            finally:
                proc.wait(timeout=60)
            assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
            return seen

    seen = asyncio.run(go())
    assert "Launch L1" in seen["best"] and "no feasible completed trial yet" not in seen["best"]
    assert_no_survivors(str(ws.root))
