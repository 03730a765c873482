"""Signals end a launch whatever it is doing (issue 42, item 3): `optlog run launch` as a real process
with the real test server, SIGINT / SIGTERM / SIGHUP sent to it in each phase — its rows just written,
waiting for the machine, polling a server's health, the sanity check, the bench, tearing the server
down — and a kill -9 of it in several. Each phase is picked by watching the launch's own files
(the record, the server's log, the launch log, the bench's argv.json), never by sleeping, and each
signal lands while the phase would otherwise last many minutes (`ready-delay`, a stalled check, a
bench sleeping 600 s, a server ignoring its stop signal), so a launch that does not hear it fails
the test by its timeout, on a fast machine or a loaded one.

What must hold: exit 128 + the signal (130, 143, 129), the launch and its unfinished runs
`cancelled`, no process the launch started left (found by the launch token in its environment and
by the workspace path in its command line), and the next launch on the same port exits 0. After a
kill -9, the next command — a read — marks the launch `interrupted` and ends what it left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from _launch import Launch, bench_cmd, server_cmd, spec, survivors, wait_for

WAIT_S = 60  # a phase begins within this on a loaded machine; a launch that hears nothing runs for 600 s
ENDS_S = 60  # a heard signal ends the launch well within this (its grace is cut to 5 s)


def _leftovers(ws) -> list[tuple[int, str]]:
    """Live processes any launch of this test run started (OPTLOG_LAUNCH_TOKEN in the environment of
    this pytest process's children), or whose command line names the workspace."""
    mark = f"OPTLOG_TEST_RUN={os.environ.get('OPTLOG_TEST_RUN', '')}".encode()
    out = dict(survivors(str(ws.root)))
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and mark in env and any(e.startswith(b"OPTLOG_LAUNCH_TOKEN=") for e in env):
            out[int(d.name)] = cmd
    return sorted(out.items())


def _assert_none_left(ws) -> None:
    """Nothing of the launch is left (a process being killed gets a few seconds to be gone)."""
    deadline = time.monotonic() + 10
    while (left := _leftovers(ws)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, left


def _start(ws, rel: str, *, ignore_sigint: bool = False) -> subprocess.Popen:
    """`optlog run launch REL --json`, in a session of its own; `ignore_sigint`: as a script's
    background job starts it (`optlog run launch … &`: SIGINT ignored, inherited)."""
    def pre() -> None:
        if ignore_sigint:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    return subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", rel, "--json"], cwd=ws.root, env=ws.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=pre)


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


def _port(ws, name: str) -> int:
    return int(yaml.safe_load((ws.root / "runs" / f"{name}.yaml").read_text())["params"]["port"])


def _next_launch_works(ws, port: int) -> None:
    """A plain launch of a server on the same port: nothing left holds the port, the machine's lock
    or the launch's rows."""
    rel = spec(ws, "after", params={"port": port})
    r = ws.cli("run", "launch", rel, "--json", check=False, timeout=300)
    assert r.code == 0, r.err[-3000:]
    assert r.json["status"] == "succeeded"


def _server(extra: str, **over) -> dict:
    srv = {"cmd": server_cmd(extra), "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 900,
                                              "interval_s": 0.05}}
    srv.update(over)
    return srv


LONG_BENCH = {"cmd": bench_cmd("--sleep 600 --child")}
QUICK_SERVER = {"cmd": server_cmd(), "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 60,
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


@pytest.mark.parametrize("phase,sig,ignore_sigint,then_launch", [
    ("planned", signal.SIGTERM, False, True),
    ("planned", signal.SIGINT, True, False),  # the case: a SIGINT the shell had ignored
    ("health", signal.SIGHUP, False, False),
    ("check", signal.SIGINT, True, False),
    ("bench", signal.SIGTERM, False, False),
    ("teardown", signal.SIGTERM, False, True),
])
def test_a_signal_cancels_the_launch_in_every_phase(ws, phase, sig, ignore_sigint, then_launch):
    kw, begun = PHASES[phase]
    rel = spec(ws, "sig", **kw)
    p = _start(ws, rel, ignore_sigint=ignore_sigint)
    try:
        wait_for(lambda: begun(ws) or p.poll() is not None, WAIT_S, f"the {phase} phase")
        assert p.poll() is None, p.communicate()[1][-3000:]
        os.kill(p.pid, sig)
        out, err = _ended(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + sig, (p.returncode, err[-3000:])
    doc = json.loads(out)
    assert doc["status"] == "cancelled" and doc["signal"] == signal.Signals(sig).name, doc
    (run,) = doc["runs"]
    assert run["status"] == ("succeeded" if phase == "teardown" else "cancelled"), run
    shown = ws.j("run", "wait", "L1", check=False)
    assert shown["status"] == "cancelled", shown
    _assert_none_left(ws)
    if then_launch:  # (the others leave as little behind: no process, no lock, no live row)
        _next_launch_works(ws, _port(ws, "sig"))
        _assert_none_left(ws)


def test_a_signal_cancels_a_launch_waiting_for_the_machine(ws, tmp_path):
    release = tmp_path / "release"
    first = Launch(ws, spec(ws, "holder", bench={"cmd": bench_cmd(f"--until {release}")}))
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
        out, err = first.communicate(timeout=300)
        assert first.poll() == 0, err[-3000:]
    finally:
        release.write_text("go")
        first.kill()
    _assert_none_left(ws)


@pytest.mark.parametrize("phase,read,then_launch", [
    ("health", ("status", "--json"), False),
    ("teardown", ("log", "--json"), True),  # a read that never opened the database
    ("planned", ("hypothesis", "list", "--json"), False),
])  # (a kill -9 during the bench: tests/integration/test_launch.py)
def test_kill_9_then_any_command_interrupts_and_ends_what_it_left(ws, phase, read, then_launch):
    kw, begun = PHASES[phase]
    rel = spec(ws, "k9", **kw)
    p = _start(ws, rel)
    try:
        wait_for(lambda: begun(ws) or p.poll() is not None, WAIT_S, f"the {phase} phase")
        assert p.poll() is None, p.communicate()[1][-3000:]
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if phase != "planned":
        assert _leftovers(ws), "the orphans are there until an optlog command runs"
    r = ws.cli(*read, check=False)
    assert r.code == 0, r.err
    assert "interrupted" in r.err, r.err
    _assert_none_left(ws)
    st = ws.j("run", "wait", "L1", check=False)
    assert st["status"] == "interrupted", st
    assert all(x["status"] in ("interrupted", "succeeded") for x in st["runs"]), st
    if then_launch:
        _next_launch_works(ws, _port(ws, "k9"))
        _assert_none_left(ws)
