"""Signals end a launch whatever it is doing (issue 42, item 3): `optlog run launch` as a real process
with the real test server, SIGINT / SIGTERM / SIGHUP sent to it in each phase — its rows just written,
waiting for the machine, polling a server's health, the sanity check, the bench, tearing the server
down — and a kill -9 of it in several. Each phase is picked by watching the launch's own files
(the record, the server's log, the launch log, the bench's argv.json), never by sleeping, and each
signal lands while the phase would otherwise last many minutes (`ready-delay`, a stalled check, a
bench sleeping 600 s, a server ignoring its stop signal), so a launch that does not hear it fails
the test by its timeout, on a fast machine or a loaded one.

What must hold: exit 128 + the signal (130, 143, 129), the launch and its unfinished runs
`cancelled`, no process the launch started left (found by the test's own token in its environment
and by the workspace path in its command line: never another test's), and the next launch on the
same port exits 0. After a kill -9, the next command — a read — marks the launch `interrupted` and
ends what it left.

Each launch starts with the three signals at their defaults, as from a terminal: a test runner
started under nohup (a CI runner) ignores SIGHUP, an ignored SIGHUP is inherited and stays ignored
by design (docs/launch-safety.md), and every SIGHUP case then ran into its timeout and left its
processes to fail the tests after it. Whatever a test does, a finaliser SIGKILLs, by pid, every
process carrying its token."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from _launch import (Launch, assert_none_left, bench_cmd, end_own, mark_case, own_processes, server_cmd, spec,
                     start_launch, wait_for)

# Every wait below is for an event and passes as soon as it happens; the bounds are for a busy
# 2-core CI box. A launch that does not hear a signal runs for 600-900 s, far past them.
WAIT_S = 180  # a phase begins within this
ENDS_S = 150  # a heard signal ends the launch within this (its grace is cut to 5 s)


def _counters(ws) -> dict[int, int]:
    """The workspace's change counters (store.db.COUNTERS: 1 every write, 3 the evidence)."""
    import sqlite3

    from optlog.paths import find_workspace

    con = sqlite3.connect(find_workspace(str(ws.root)).sqlite_file)
    try:
        return dict(con.execute("SELECT id, n FROM change_counter").fetchall())
    finally:
        con.close()


@pytest.fixture(autouse=True)
def _own(ws):
    """The test's processes carry a token of its own; whatever happens, none outlives the test."""
    mark_case(ws)
    yield
    end_own(ws)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _launch_log(ws) -> str:
    return _text(ws.root / ".optlog" / "launches" / "1" / "launch.log")


def _ended(p: subprocess.Popen) -> tuple[str, str]:
    try:
        return p.communicate(timeout=ENDS_S)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"the launch did not end within {ENDS_S}s of the signal\n{err[-3000:]}") from None


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.kill()
        p.communicate()


def _port(ws, name: str) -> int:
    return int(yaml.safe_load((ws.root / "runs" / f"{name}.yaml").read_text())["params"]["port"])


def _next_launch_works(ws, port: int) -> None:
    """A plain launch of a server on the same port: nothing left holds the port, the machine's lock
    or the launch's rows."""
    rel = spec(ws, "after", params={"port": port}, server={**QUICK_SERVER, "stop": {"timeout_s": 3}})
    r = ws.cli("run", "launch", rel, "--json", check=False, timeout=WAIT_S + ENDS_S)
    assert r.code == 0, r.err[-3000:]
    assert r.json["status"] == "succeeded"


def _server(extra: str, **over) -> dict:
    srv = {"cmd": server_cmd(extra), "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 900,
                                              "interval_s": 0.05}}
    srv.update(over)
    return srv


LONG_BENCH = {"cmd": bench_cmd("--sleep 600 --child")}
QUICK_SERVER = {"cmd": server_cmd(), "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": WAIT_S,
                                               "interval_s": 0.05}}

# phase -> (the spec's server and bench, when the phase has begun)
PHASES = {
    # its rows and its committed record are written; the driver may not have started yet
    "planned": (dict(server=_server("--ready-delay-s 900"), bench=LONG_BENCH),
                lambda ws: any((ws.root / "launches").glob("L*/points.json"))),
    # the server listens, /health answers 503 for 900 s
    "health": (dict(server=_server("--ready-delay-s 900"), bench=LONG_BENCH),
               lambda ws: "READY" in _text(ws.root / ".optlog" / "launches" / "1" / "server-0.stdout.log")),
    # ready; the sanity check's request is answered with headers and then nothing
    "check": (dict(server=_server("--mode stall", check={"prompts": ["The capital of France is"],
                                                         "expect_regex": "Paris", "timeout_s": 900}),
                   bench=LONG_BENCH),
              lambda ws: "server 0 ready" in _launch_log(ws)),
    # the bench runs (and has a child of its own)
    "bench": (dict(server=QUICK_SERVER, bench=LONG_BENCH),
              lambda ws: any((ws.root / ".optlog" / "runs").glob("*/argv.json"))),
    # the run is stored; the server ignores its stop signal, so tear-down would wait 900 s
    "teardown": (dict(server={**QUICK_SERVER, "stop": {"signal": "SIGWINCH", "timeout_s": 900}}, bench=None),
                 lambda ws: "run 1 succeeded" in _launch_log(ws)),
}


# each signal, each phase, and a SIGINT the shell had ignored, each at least once (SIGTERM and
# SIGHUP are one handler: more combinations would test the same lines again, for CI seconds)
@pytest.mark.parametrize("phase,sig,ignore_sigint,then_launch", [
    ("planned", signal.SIGINT, True, True),  # the case: a SIGINT the shell had ignored
    ("health", signal.SIGHUP, False, False),
    ("check", signal.SIGINT, True, False),
    ("bench", signal.SIGTERM, False, False),
    ("teardown", signal.SIGTERM, False, False),  # (the next launch after a teardown: the kill -9 test)
])
def test_a_signal_cancels_the_launch_in_every_phase(ws, phase, sig, ignore_sigint, then_launch):
    kw, begun = PHASES[phase]
    rel = spec(ws, "sig", **kw)
    p = start_launch(ws, rel, ignore_sigint=ignore_sigint)
    try:
        wait_for(lambda: begun(ws) or p.poll() is not None, WAIT_S, f"the {phase} phase")
        assert p.poll() is None, p.communicate()[1][-3000:]
        os.kill(p.pid, sig)
        out, err = _ended(p)
    finally:
        _stop(p)
    assert p.returncode == 128 + sig, (p.returncode, err[-3000:])
    doc = json.loads(out)
    assert doc["status"] == "cancelled" and doc["signal"] == signal.Signals(sig).name, doc
    (run,) = doc["runs"]
    assert run["status"] == ("succeeded" if phase == "teardown" else "cancelled"), run
    shown = ws.j("run", "wait", "L1", check=False)
    assert shown["status"] == "cancelled", shown
    assert_none_left(ws)
    if then_launch:  # (the others leave as little behind: no process, no lock, no live row)
        _next_launch_works(ws, _port(ws, "sig"))
        assert_none_left(ws)


def test_a_signal_cancels_a_launch_waiting_for_the_machine(ws, tmp_path):
    release = tmp_path / "release"
    first = Launch(ws, spec(ws, "holder", server=False, bench={"cmd": bench_cmd(f"--until {release}")}))
    try:
        wait_for(lambda: any((ws.root / ".optlog" / "runs").glob("*/argv.json")) or first.poll() is not None,
                 WAIT_S, "the first launch's bench")
        second = Launch(ws, spec(ws, "waiter", server=False))
        try:
            wait_for(second.waiting, WAIT_S, "the second launch to wait for the machine")
            assert second.poll() is None, second.err
            os.kill(second.p.pid, signal.SIGHUP)
            out, err = second.communicate(timeout=ENDS_S)
        finally:
            second.kill()
        assert second.p.returncode == 128 + signal.SIGHUP, err[-3000:]
        doc = json.loads(out)
        assert doc["status"] == "cancelled" and [r["status"] for r in doc["runs"]] == ["cancelled"], doc
        release.write_text("go")  # the first launch was never disturbed: it finishes
        out, err = first.communicate(timeout=WAIT_S + ENDS_S)
        assert first.poll() == 0, err[-3000:]
    finally:
        release.write_text("go")
        first.kill()
    assert_none_left(ws)


@pytest.mark.parametrize("phase,read,then_launch", [
    ("health", ("status", "--json"), False),
    ("teardown", ("log", "--json"), True),  # a read that never opened the database
    ("planned", ("hypothesis", "list", "--json"), False),
])  # (a kill -9 during the bench: tests/integration/test_launch.py)
def test_kill_9_then_any_command_interrupts_and_ends_what_it_left(ws, phase, read, then_launch):
    kw, begun = PHASES[phase]
    rel = spec(ws, "k9", **kw)
    p = start_launch(ws, rel)
    try:
        wait_for(lambda: begun(ws) or p.poll() is not None, WAIT_S, f"the {phase} phase")
        assert p.poll() is None, p.communicate()[1][-3000:]
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=ENDS_S)
    finally:
        _stop(p)
    if phase != "planned":
        assert own_processes(ws), "the orphans are there until an optlog command runs"
    before = _counters(ws)
    r = ws.cli(*read, check=False)
    assert r.code == 0, r.err
    assert "interrupted" in r.err, r.err
    after = _counters(ws)  # recovery is a launch's bookkeeping: no run became evidence, so what is due stands
    assert after[1] > before[1] and after[3] == before[3], (before, after)
    assert_none_left(ws)
    st = ws.j("run", "wait", "L1", check=False)
    assert st["status"] == "interrupted", st
    assert all(x["status"] in ("interrupted", "succeeded") for x in st["runs"]), st
    if then_launch:
        _next_launch_works(ws, _port(ws, "k9"))
        assert_none_left(ws)
