"""Every process a launch started ends (issue 13.7): the server command daemonizes grandchildren
(double fork + setsid: out of every process group optlog knows), and after each way a launch can
end — normal end, failure, SIGINT, SIGTERM, SIGHUP to optlog, `run cancel`, kill -9 of optlog and
recovery on the next command — /proc holds nothing of it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from _launch import PY, TESTS, assert_no_survivors, bench_cmd, server_cmd, spec, survivors, wait_for


def _spec(ws, name, *, scrub=True, bench_extra=""):
    srv = {"cmd": "{{ py }} {{ tests }}/_daemonize.py {{ marker }} " + ("--scrub " if scrub else "") + "-- "
                  + server_cmd(),
           "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05},
           "stop": {"timeout_s": 3}}
    return spec(ws, name, server=srv, bench={"cmd": bench_cmd(bench_extra)})


def _daemons(ws):
    return [x for x in survivors(str(ws.root)) if x[1].rstrip().endswith("daemon")]


def _popen(ws, *args):
    return subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", *args, "--json"], cwd=ws.root, env=ws.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _bench_started(ws):
    return wait_for(lambda: list((ws.root / ".optlog" / "runs").glob("*/argv.json")), 60, "the bench to start")


@pytest.mark.parametrize("how", ["succeeds", "fails"])
def test_daemons_end_with_the_launch(ws, how):
    rel = _spec(ws, how, bench_extra="--exit 3" if how == "fails" else "")
    r = ws.cli("run", "launch", rel, "--json", check=0 if how == "succeeds" else 1)
    assert r.json["status"] == ("succeeded" if how == "succeeds" else "failed")
    assert_no_survivors(str(ws.root))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_daemons_end_on_a_signal_to_optlog(ws, sig):
    rel = _spec(ws, "sig", bench_extra="--sleep 60")
    p = _popen(ws, rel)
    try:
        _bench_started(ws)
        assert len(_daemons(ws)) == 2, survivors(str(ws.root))  # both out of the server's session
        os.kill(p.pid, sig)  # to optlog alone: nothing else of the launch receives it
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert json.loads(out)["status"] == "cancelled", err
    assert_no_survivors(str(ws.root))


def test_daemons_end_on_run_cancel(ws):
    rel = _spec(ws, "cancel", bench_extra="--sleep 60")
    d = ws.j("run", "launch", rel, "--detach")
    _bench_started(ws)
    assert len(_daemons(ws)) == 2
    assert ws.j("run", "cancel", d["ref"])["status"] == "cancelled"
    assert_no_survivors(str(ws.root))


def test_daemons_found_by_recovery_after_kill_9(ws):
    # the driver is gone, so nothing is re-parented to it: a daemon is found by the launch token it
    # inherited (one that clears its environment too needs a cgroup: not this fallback's promise)
    rel = _spec(ws, "kill9", scrub=False, bench_extra="--sleep 60")
    p = _popen(ws, rel)
    try:
        _bench_started(ws)
        assert len(_daemons(ws)) == 1
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    assert _daemons(ws)
    r = ws.cli("run", "list", "--json")
    assert "interrupted" in r.err
    assert_no_survivors(str(ws.root))


def test_a_daemon_that_clears_its_environment_after_kill_9_is_ended_through_the_cgroup(ws):
    from optlog.runs.cgroup import LaunchCgroup

    probe = LaunchCgroup.create("probe" + str(os.getpid()))
    if probe is None:
        pytest.skip("no writable cgroup v2 here: the token is the fallback (test above)")
    probe.kill()
    base = probe.path.parent
    before = set(base.glob("optlog-*"))
    rel = _spec(ws, "kill9cg", scrub=True, bench_extra="--sleep 60")
    p = _popen(ws, rel)
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
                           20, "the launch's cgroup to hold its daemons")
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    assert len(_daemons(ws)) == 2
    assert "interrupted" in ws.cli("run", "list").err
    assert_no_survivors(str(ws.root))
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
