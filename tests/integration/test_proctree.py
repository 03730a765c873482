"""Every process a launch started ends (issue 13.7): the server command daemonizes grandchildren
(double fork + setsid: out of every process group optlog knows), and after each way a launch can
end — normal end, failure, a signal to optlog, `run cancel`, kill -9 of optlog and recovery on the
next command — /proc holds nothing of it. What a test checks and ends is found by a token of its
own (tests/_launch.py `own_processes`), never another test's."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from _launch import (PY, assert_none_left, bench_cmd, end_own, mark_case, own_processes, server_cmd, spec,
                     start_launch, wait_for)

WAIT_S = 180  # an event the test waits for happens within this on a busy 2-core CI box (at once when idle)


@pytest.fixture(autouse=True)
def _own(ws):
    """The test's processes carry a token of its own; whatever happens, none outlives the test."""
    mark_case(ws)
    yield
    end_own(ws)


def _spec(ws, name, *, scrub=True, bench_extra="", **top):
    srv = {"cmd": "{{ py }} {{ tests }}/_daemonize.py {{ marker }} " + ("--scrub " if scrub else "") + "-- "
                  + server_cmd(),
           "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": WAIT_S, "interval_s": 0.05},
           "stop": {"timeout_s": 3}}
    return spec(ws, name, server=srv, bench={"cmd": bench_cmd(bench_extra)}, **top)


def _daemons(ws):
    return [x for x in own_processes(ws) if x[1].rstrip().endswith("daemon")]


def _bench_started(ws):
    return wait_for(lambda: list((ws.root / ".optlog" / "runs").glob("*/argv.json")), WAIT_S, "the bench to start")


def test_daemons_end_with_the_launch_whether_its_runs_succeed_or_fail(ws):
    rel = _spec(ws, "ends", bench_extra="--exit {{ code }}", matrix={"concurrency": [1], "code": [0, 3]})
    r = ws.cli("run", "launch", rel, "--json", check=1, timeout=2 * WAIT_S)
    assert r.json["status"] == "failed"
    assert sorted(x["status"] for x in r.json["runs"]) == ["failed", "succeeded"], r.json
    assert_none_left(ws)


def test_daemons_end_on_a_signal_to_optlog(ws):
    # one signal here: each of the three, in each phase, is tests/integration/test_launch_signals.py
    rel = _spec(ws, "sig", bench_extra="--sleep 600")
    p = start_launch(ws, rel)
    try:
        _bench_started(ws)
        assert len(_daemons(ws)) == 2, own_processes(ws)  # both out of the server's session
        os.kill(p.pid, signal.SIGINT)  # to optlog alone: nothing else of the launch receives it
        out, err = p.communicate(timeout=WAIT_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert json.loads(out)["status"] == "cancelled", err
    assert_none_left(ws)


def test_daemons_end_on_run_cancel(ws):
    rel = _spec(ws, "cancel", bench_extra="--sleep 600")
    d = ws.j("run", "launch", rel, "--detach")
    _bench_started(ws)
    assert len(_daemons(ws)) == 2
    assert ws.j("run", "cancel", d["ref"], timeout=WAIT_S)["status"] == "cancelled"
    assert_none_left(ws)


def test_daemons_found_by_recovery_after_kill_9(ws):
    # the driver is gone, so nothing is re-parented to it: a daemon is found by the launch token it
    # inherited (one that clears its environment too needs a cgroup: not this fallback's promise)
    rel = _spec(ws, "kill9", scrub=False, bench_extra="--sleep 600")
    p = start_launch(ws, rel)
    try:
        _bench_started(ws)
        assert len(_daemons(ws)) == 1
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=WAIT_S)
    finally:
        if p.poll() is None:
            p.kill()
    assert _daemons(ws)
    r = ws.cli("run", "list", "--json")
    assert "interrupted" in r.err
    assert_none_left(ws)


def test_a_daemon_that_clears_its_environment_after_kill_9_is_ended_through_the_cgroup(ws):
    from optlog.runs.cgroup import LaunchCgroup

    probe = LaunchCgroup.create("probe" + str(os.getpid()))
    if probe is None:
        pytest.skip("no writable cgroup v2 here: the token is the fallback (test above)")
    probe.kill()
    base = probe.path.parent
    before = set(base.glob("optlog-*"))
    rel = _spec(ws, "kill9cg", scrub=True, bench_extra="--sleep 600")
    p = start_launch(ws, rel)
    try:
        _bench_started(ws)
        assert len(_daemons(ws)) == 2
        daemons = {pid for pid, _ in _daemons(ws)}

        def procs_of(cg):
            try:
                return {int(x) for x in (cg / "cgroup.procs").read_text().split()}
            except OSError:
                return set()

        # other tests' launches may make cgroups at the same time: ours is the one holding our daemons
        (mine,) = wait_for(lambda: [cg for cg in set(base.glob("optlog-*")) - before if procs_of(cg) >= daemons],
                           WAIT_S, "the launch's cgroup to hold its daemons")
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=WAIT_S)
    finally:
        if p.poll() is None:
            p.kill()
    assert len(_daemons(ws)) == 2
    assert "interrupted" in ws.cli("run", "list").err
    assert_none_left(ws)
    assert not mine.exists()  # and the cgroup is removed


def test_a_reused_pid_is_never_hit(tmp_path):
    """tree.end re-checks each target's start time through a pidfd: a stale description is skipped."""
    from optlog.runs import procs, tree

    p = subprocess.Popen([PY, "-c", "import time; time.sleep(30)"])
    try:
        st = procs.stat(p.pid)
        fake = procs.Stat(pid=st.pid, ppid=st.ppid, pgrp=st.pgrp, session=st.session, start=st.start - 1, state="S")
        assert tree.end([fake], grace_s=0) == 0 and p.poll() is None
        assert tree.end([st], grace_s=1) == 1
        assert p.wait(5) == -signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
