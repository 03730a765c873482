"""The SSH executor end to end: `optlog run launch` with `executor: "ssh:loop"` against a real sshd on
127.0.0.1 (scripts/sshd-up.sh; CI sources /tmp/optlog-sshd/env.sh). The server and the bench run
through ssh in their own process groups on the "remote" side, the bench's out folder lives in the
host's workdir and is fetched back; every exit path is checked with /proc."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from _launch import assert_no_survivors, bench_cmd, spec, survivors, wait_for

ENV = ("OPTLOG_TEST_SSH_HOST", "OPTLOG_TEST_SSH_PORT", "OPTLOG_TEST_SSH_USER", "OPTLOG_TEST_SSH_KEY")
pytestmark = pytest.mark.skipif(any(not os.environ.get(k) for k in ENV),
                                reason="no test sshd: run `bash scripts/sshd-up.sh && . /tmp/optlog-sshd/env.sh` "
                                       "(sets OPTLOG_TEST_SSH_HOST/PORT/USER/KEY)")


def _host_cfg(ws) -> dict:
    remote = ws.root / "remote-home"
    remote.mkdir(exist_ok=True)
    return {"host": os.environ["OPTLOG_TEST_SSH_HOST"], "port": int(os.environ["OPTLOG_TEST_SSH_PORT"]),
            "user": os.environ["OPTLOG_TEST_SSH_USER"], "identity_file": os.environ["OPTLOG_TEST_SSH_KEY"],
            "options": ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"], "workdir": str(remote)}


def _configure(ws) -> dict:
    cfg_path = ws.root / "optlog.yaml"
    doc = yaml.safe_load(cfg_path.read_text())
    host = _host_cfg(ws)
    doc.setdefault("executors", {}).setdefault("ssh", {})["loop"] = host
    cfg_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return host


def _remote_started(ws):
    return list((ws.root / "remote-home" / ".optlog-remote").glob("*/*/argv.json"))


def test_points_run_over_ssh_results_fetched_back(ws):
    _configure(ws)
    rel = spec(ws, "sshok", executor="ssh:loop", matrix={"concurrency": [1, 2]},
               bench={"cmd": bench_cmd(), "results": ["result.json"]})
    doc = ws.j("run", "launch", rel)
    assert doc["status"] == "succeeded", doc
    for r in doc["runs"]:
        assert r["metrics"]["output_throughput"] > 0 and r["exit_code"] == 0
        out = Path(r["artifacts_dir"]) if os.path.isabs(r["artifacts_dir"]) else ws.root / r["artifacts_dir"]
        assert (out / "result.json").exists()  # fetched back from the remote workdir
        argv = json.loads((out / "argv.json").read_text())
        assert any("remote-home/.optlog-remote" in a for a in argv)  # the bench wrote remotely
        assert "bench: 1 requests" in (out / "bench.stdout.log").read_text()
        assert ws.j("run", "show", str(r["id"]))["host"] == "ssh:loop"
    # the remote out folders were removed after the fetch
    assert not list((ws.root / "remote-home" / ".optlog-remote").glob("*/*/result.json"))
    assert_no_survivors(str(ws.root))


def test_failing_bench_exit_code_propagated_and_strays_killed(ws):
    _configure(ws)
    rel = spec(ws, "sshfail", executor="ssh:loop",
               bench={"cmd": bench_cmd("--exit 3 --child --stderr 'torch.OutOfMemoryError: CUDA out of memory'")})
    r = ws.cli("run", "launch", rel, "--json", check=1)
    (run,) = r.json["runs"]
    assert run["status"] == "failed" and run["exit_code"] == 3
    assert "CUDA out of memory" in run["error"] and run["cause"] == "out_of_memory"
    assert_no_survivors(str(ws.root))


def test_unknown_host_and_unreachable_host(ws):
    _configure(ws)
    rel = spec(ws, "nohost", executor="ssh:nope", server=False, bench={"cmd": "true"})
    r = ws.cli("run", "launch", rel, "--json", check=False)
    assert r.code != 0 and "no such host" in r.out + r.err and "loop" in r.out + r.err
    assert ws.j("run", "list")["runs"] == []


def _popen_launch(ws, rel):
    return subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", rel, "--json"], cwd=ws.root, env=ws.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_cancel_kills_the_remote_group(ws):
    _configure(ws)
    rel = spec(ws, "sshcancel", executor="ssh:loop", bench={"cmd": bench_cmd("--sleep 60 --child")})
    d = ws.j("run", "launch", rel, "--detach")
    wait_for(lambda: _remote_started(ws), 60, "the remote bench to start")
    assert len(survivors(str(ws.root))) >= 3  # server, bench and its child, all over ssh
    c = ws.j("run", "cancel", d["ref"])
    assert c["status"] == "cancelled"
    r = ws.cli("run", "wait", str(d["runs"][0]), "--json", check=1)
    assert r.json["status"] == "cancelled"
    assert_no_survivors(str(ws.root), timeout=15)


def test_kill_9_of_optlog_then_recovery(ws):
    _configure(ws)
    rel = spec(ws, "sshkill9", executor="ssh:loop", bench={"cmd": bench_cmd("--sleep 60 --child")})
    p = _popen_launch(ws, rel)
    try:
        wait_for(lambda: _remote_started(ws), 60, "the remote bench to start")
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    r = ws.cli("run", "list", "--json")
    assert "interrupted" in r.err
    (run,) = r.json["runs"]
    assert run["status"] == "interrupted"
    assert_no_survivors(str(ws.root), timeout=15)


def test_recovery_kills_a_remote_group_by_its_record(ws):
    """kill_record (what recovery calls for a record with host ssh:NAME) ends the remote group, and
    leaves alone a group whose leader's start time does not match (a reused PID)."""
    from optlog.runs.executors.ssh import SshExecutor, SshHost, kill_record

    cfg = SshHost(**_host_cfg(ws))
    ex = SshExecutor("loop", cfg, base_env={"OPTLOG_LAUNCH_TOKEN": "rec"})
    marker = str(ws.root / "remote-home")
    h = ex.popen(["sh", "-c", f"sleep 60 & exec sleep 61 # {marker}"], env={}, stdout=ws.root / "o.log",
                 stderr=ws.root / "e.log", role="server")
    s = ex.stream(["sh", "-c", "echo a; echo b"])  # what telemetry and environment capture use
    assert s.stdout.read() == "a\nb\n" and s.wait(10) == 0
    try:
        ctx = SimpleNamespace(config=SimpleNamespace(executors=SimpleNamespace(section={"ssh": {"loop": cfg}}.get)))
        wrong = SimpleNamespace(host="ssh:loop", pid=h.pid, pgid=h.pgid, start_ticks=(h.start_ticks or 0) + 1)
        assert kill_record(ctx, wrong) is False
        assert os.path.exists(f"/proc/{h.pid}")
        rec = SimpleNamespace(host="ssh:loop", pid=h.pid, pgid=h.pgid, start_ticks=h.start_ticks)
        assert kill_record(ctx, rec) is True
        wait_for(lambda: not os.path.exists(f"/proc/{h.pid}") or open(f"/proc/{h.pid}/stat").read().split(") ")[1][0] == "Z",
                 10, "the remote leader to end")
        assert h.wait(10) is not None
    finally:
        ex.kill(h, grace_s=1.0)


def test_ssh_launches_lock_per_host_and_gpu_set(ws):
    """Two launches on one ssh host: on GPUs {0} and {1} they run together; on {0} twice the second waits.
    The first launch's bench runs until the test releases it (an event, not a time): the launch on
    GPU 1 runs from start to end meanwhile, and the second launch on GPU 0 is seen waiting first."""
    _configure(ws)
    release = ws.root.parent / "release"

    def gpu(name, cvd, until=None):
        return spec(ws, name, server=False, executor="ssh:loop",
                    bench={"cmd": bench_cmd(f"--until {until}" if until else ""), "results": ["result.json"],
                           "env": {"CUDA_VISIBLE_DEVICES": cvd}})

    def launch(rel, err):
        return subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", rel, "--json"], cwd=ws.root,
                                env=ws.env, stdout=subprocess.PIPE, stderr=err, text=True)

    a = launch(gpu("s0", "0", until=release), subprocess.PIPE)
    c = None
    c_err = ws.root.parent / "c.err"
    try:
        wait_for(lambda: _remote_started(ws), 600, "the first remote bench to start")
        b = ws.cli("run", "launch", gpu("s1", "1"), "--json", timeout=600)
        assert a.poll() is None and "waiting" not in b.err, b.err
        with open(c_err, "w") as err:
            c = launch(gpu("s0b", "0"), err)
        wait_for(lambda: "waiting:" in c_err.read_text() or c.poll() is not None, 600, "the second launch on GPU 0 to wait")
        assert a.poll() is None  # still holding GPU 0
        release.touch()
        a.communicate(timeout=600)
        c_out, _ = c.communicate(timeout=600)
    finally:
        release.touch()
        for p in (a, c):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)
    c_res = SimpleNamespace(err=c_err.read_text(), json=json.loads(c_out))
    assert "waiting: ssh:loop GPU 0 is in use by launch L1" in c_res.err, c_res.err
    assert b.json["status"] == c_res.json["status"] == "succeeded"


HOSTILE = ["a; touch {S}", "$(touch {S})", "`touch {S}`", "'; touch {S}; '", "x\ntouch {S}"]


def test_hostile_values_never_run_on_the_remote_side(ws, tmp_path):
    """Issue 42.2: the remote command line is built by optlog (a wrapper script run by the remote
    shell): a value in an argument, in a `sh -c` script, in an environment variable (plain or
    secret-named, sent on the channel) reaches the bench as text."""
    _configure(ws)
    sentinel = tmp_path / "PWNED"
    vals = [h.replace("{S}", str(sentinel)) for h in HOSTILE]
    script = ("printf '{\"completed\": 1}' > {{ out }}/result.json; printf '%s' {{ x }} > {{ out }}/x; "
              "printf '%s' \"$1\" > {{ out }}/arg; printf '%s' \"$HOSTILE\" > {{ out }}/env; "
              "printf '%s' \"$MY_TOKEN\" > {{ out }}/secret")
    rel = spec(ws, "sshvals", executor="ssh:loop", server=False, matrix={"x": vals},
               bench={"cmd": ["sh", "-c", script, "sh", "{{ x }}"], "results": ["result.json"],
                      "env": {"HOSTILE": "{{ x }}", "MY_TOKEN": "{{ x }}"}})
    r = ws.cli("run", "launch", rel, "--json", check=False)
    assert r.code == 0, r.out + r.err
    assert not sentinel.exists()
    seen = set()
    for run in r.json["runs"]:  # (its label x is <redacted>: the value of MY_TOKEN is a secret)
        out = ws.root / run["artifacts_dir"]
        got = [(out / f).read_text() for f in ("x", "arg", "env", "secret")]
        assert len(set(got)) == 1, got
        seen.add(got[0])
    assert seen == set(vals)
    assert_no_survivors(str(ws.root))
