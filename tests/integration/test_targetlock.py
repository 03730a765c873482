"""Runs that disturb each other are not silently compared (issue 14.5): a launch holds a lock on
its target across real optlog processes and workspaces; a second one waits (saying so) or, with
`--allow-concurrent`, runs alongside with both launches' overlapping runs labelled concurrent,
which verdicts set aside. `run invalidate` takes several ids or a launch in one call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from _launch import Launch, bench_cmd, spec, wait_for
from tests._verdicts import seed_runs


def _popen(ws, *args):
    return subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", *args, "--json"], cwd=ws.root, env=ws.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _started(ws):
    wait_for(lambda: list((ws.root / ".optlog" / "runs").glob("*/argv.json")), 600, "the first bench to start")


def _held(ws, tag="release"):
    """A bench option that holds the bench until the test releases it (the file), and the file: the
    holder of a lock holds it until the test has seen what it checks, however busy the machine."""
    f = Path(ws.root).parent / tag
    return f"--until {f}", f


def _labels(ws, rid):
    return ws.j("run", "show", str(rid))["labels"]


def test_a_second_launch_from_another_workspace_waits(ws, make_ws):
    ws2 = make_ws("ws2")
    hold, release = _held(ws)
    long = spec(ws, "long", server=False, bench={"cmd": bench_cmd(hold)})
    quick = spec(ws2, "quick", server=False)
    a = _popen(ws, long)
    b = None
    try:
        _started(ws)
        b = Launch(ws2, quick)
        wait_for(b.waiting, 600, "the second launch to wait")
        release.touch()
        out, err = a.communicate(timeout=600)
        b_out, b_err = b.communicate()
        r = SimpleNamespace(err=b_err, json=json.loads(b_out))
    finally:
        release.touch()
        if a.poll() is None:
            a.kill()
        if b is not None:
            b.kill()
    assert f"waiting: local:" in r.err and f"launch L1 of {ws.root}" in r.err, r.err
    (ra,) = json.loads(out)["runs"]
    (rb,) = r.json["runs"]
    a_end = ws.j("run", "show", str(ra["id"]))["finished_at"]
    b_start = ws2.j("run", "show", str(rb["id"]))["started_at"]
    assert b_start >= a_end, (a_end, b_start)  # measured one after the other
    assert "concurrent" not in ra["labels"] and "concurrent" not in rb["labels"]


def test_allow_concurrent_labels_both_launches_and_verdicts_set_them_aside(ws):
    hold, release = _held(ws)
    long = spec(ws, "long", server=False, bench={"cmd": bench_cmd(hold)}, labels={"config": "x"})
    quick = spec(ws, "quick", server=False, labels={"config": "y"})
    a = _popen(ws, long)
    try:
        _started(ws)
        r = ws.cli("run", "launch", quick, "--allow-concurrent", "--json", timeout=600)
        release.touch()
        out, err = a.communicate(timeout=600)
    finally:
        release.touch()
        if a.poll() is None:
            a.kill()
    assert "running alongside" in r.err and "waiting" not in r.err, r.err
    (ra,) = json.loads(out)["runs"]
    (rb,) = r.json["runs"]
    assert _labels(ws, ra["id"])["concurrent"] is True or _labels(ws, ra["id"])["concurrent"] == "true"
    assert str(_labels(ws, rb["id"])["concurrent"]).lower() == "true"
    # alone again: not labelled
    (rc,) = ws.j("run", "launch", quick, "--allow-concurrent")["runs"]
    assert "concurrent" not in _labels(ws, rc["id"])
    # a verdict over x vs y leaves the concurrent runs out, and says why
    seed_runs(ws, [({"config": c, "repeat": i}, {"output_throughput": v}) for c, vals in
                   (("x", [100.0, 101.0, 99.0]), ("y", [50.0, 51.0, 49.0])) for i, v in enumerate(vals)])
    ws.cli("hypothesis", "add", "x beats y", "--id", "xy")
    ws.cli("predict", "add", "xy", "--expect", "a > b", "--metric", "output_throughput", "--a", "config=x", "--b", "config=y")
    (res,) = ws.j("verdict", "xy")["results"]
    (pred,) = res["predictions"]
    nc = {x["run"]: x["reason"] for x in pred["not_comparable"]}
    assert "concurrently" in nc.get(ra["id"], "") and "concurrently" in nc.get(rb["id"], ""), pred["not_comparable"]
    used = {i for lv in pred["levels"] for side in lv["runs"].values() for i in side}
    assert ra["id"] not in used and rb["id"] not in used and "concurrently" not in nc.get(rc["id"], "")


def test_a_waiting_launch_can_be_cancelled(ws):
    import os
    import signal

    hold, release = _held(ws)  # released only at the end: the holder holds throughout
    long = spec(ws, "long", server=False, bench={"cmd": bench_cmd(hold)})
    quick = spec(ws, "quick", server=False)
    a = _popen(ws, long)
    b = None
    try:
        _started(ws)
        b = _popen(ws, quick)
        wait_for(lambda: (ws.root / ".optlog" / "launches" / "2" / "launch.log").exists()
                 and "waiting" in (ws.root / ".optlog" / "launches" / "2" / "launch.log").read_text(), 600, "B waiting")
        os.kill(b.pid, signal.SIGINT)
        out, _ = b.communicate(timeout=60)
        assert json.loads(out)["status"] == "cancelled"
        assert a.poll() is None  # the holder is unaffected
        # detached, a launch that will wait answers `waiting` and whom for, and so does `run wait`
        # (issue 31: it answered "running" while it waited 32 s for the lock)
        c = ws.j("run", "launch", quick, "--detach")
        assert c["status"] == "waiting" and f"launch L1 of {ws.root}" in c["waiting_for"], c
        w = ws.cli("run", "wait", c["ref"], "--timeout", "4", "--json", check=1).json
        assert w["status"] == "waiting" and "launch L1" in w["waiting_for"], w
        ws.cli("run", "cancel", c["ref"])
    finally:
        release.touch()
        for p in (a, b):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)


def test_invalidate_several_ids_or_a_launch_in_one_commit(ws):
    quick = spec(ws, "quick", server=False, matrix={"concurrency": [1, 2, 3]})
    res = ws.j("run", "launch", quick)
    ids = [r["id"] for r in res["runs"]]
    before = ws.commits()
    r = ws.j("run", "invalidate", f"L{res['launch']}", "--why", "the machine was busy")
    assert sorted(r["runs"]) == ids and r["changed"]
    assert ws.commits() == before + 1
    assert all(ws.j("run", "show", str(i))["invalidated"] for i in ids)
    res2 = ws.j("run", "launch", quick)
    ids2 = [x["id"] for x in res2["runs"]]
    before = ws.commits()
    r = ws.j("run", "invalidate", str(ids2[0]), str(ids2[2]), str(ids[0]), "--why", "load 4 on 2 cores")
    assert r["runs"] == [ids2[0], ids2[2]] and r["already"] == [ids[0]]
    assert ws.commits() == before + 1
    assert not ws.j("run", "show", str(ids2[1]))["invalidated"]
    log = ws.git("log", "-1", "--format=%B")
    assert f"Optlog-Run: {ids2[0]},{ids2[2]}" in log
    # a bad reference writes nothing
    before = ws.commits()
    assert ws.cli("run", "invalidate", str(ids2[1]), "L99", "--why", "x", check=2).code == 2
    assert ws.commits() == before and not ws.j("run", "show", str(ids2[1]))["invalidated"]


# ------------------------------------------------------------------------- a lock per GPU set


def _gpu_spec(ws, name, cvd, hold="", **top):
    extra = hold
    return spec(ws, name, server=False, bench={"cmd": bench_cmd(extra), "env": {"CUDA_VISIBLE_DEVICES": cvd}}, **top)


def _popen_env(ws, *args, env=None):
    return subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", *args, "--json"], cwd=ws.root,
                            env={**ws.env, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _times(ws, res):
    (r,) = res["runs"]
    show = ws.j("run", "show", str(r["id"]))
    return show["started_at"], show["finished_at"], show["labels"]


def test_launches_on_disjoint_gpu_sets_run_together_overlapping_ones_and_cpu_only_ones_wait(ws):
    hold, release = _held(ws)
    a = _popen_env(ws, _gpu_spec(ws, "g01", "0,1", hold))
    waiters = []
    try:
        _started(ws)
        # GPUs {2,3}: runs now, while the launch on {0,1} still runs, and neither is labelled concurrent
        b = ws.cli("run", "launch", _gpu_spec(ws, "g23", "2,3"), "--json", timeout=600)
        assert "waiting" not in b.err, b.err
        assert a.poll() is None, "the launch on GPUs 0,1 should still be running"
        # GPUs {1,2} (meets {0,1}) and a CPU-only launch (the whole machine) both wait for it
        waiters = [Launch(ws, _gpu_spec(ws, "g12", "1,2")), Launch(ws, spec(ws, "cpu", server=False))]
        for w in waiters:
            wait_for(w.waiting, 600, "a launch that meets GPUs 0,1 to wait")
        release.touch()
        out_a, _ = a.communicate(timeout=600)
        outs = [w.communicate() for w in waiters]
    finally:
        release.touch()
        for w in waiters:
            w.kill()
        if a.poll() is None:
            a.kill()
            a.wait(10)
    ra = json.loads(out_a)
    a_start, a_end, a_labels = _times(ws, ra)
    b_start, b_end, b_labels = _times(ws, b.json)
    assert a_start <= b_start and b_end <= a_end, (a_start, b_start, b_end, a_end)  # measured at the same time
    assert "concurrent" not in a_labels and "concurrent" not in b_labels
    (out_c, err_c), (out_d, err_d) = outs
    assert f"waiting: local:" in err_c and "GPU 1 is in use by launch L1 of" in err_c and "GPUs 0,1" in err_c, err_c
    assert "this launch on local:" in err_c and "GPUs 1,2 starts" in err_c, err_c
    assert "waiting: local:" in err_d and "launch L1 of" in err_d and "(whole machine)" not in err_d, err_d
    for out in (out_c, out_d):
        start, _end, labels = _times(ws, json.loads(out))
        assert start >= a_end and "concurrent" not in labels, (start, a_end)


def test_allow_concurrent_on_a_shared_gpu_labels_both_but_not_a_disjoint_launch(ws):
    hold, release = _held(ws)
    a = _popen_env(ws, _gpu_spec(ws, "g01", "0,1", hold))
    try:
        _started(ws)
        c = ws.cli("run", "launch", _gpu_spec(ws, "g1", "1"), "--allow-concurrent", "--json", timeout=600)
        b = ws.cli("run", "launch", _gpu_spec(ws, "g3", "3"), "--json", timeout=600)
        release.touch()
        out_a, _ = a.communicate(timeout=600)
    finally:
        release.touch()
        if a.poll() is None:
            a.kill()
            a.wait(10)
    assert "running alongside" in c.err and "GPU 1 is in use by launch L1" in c.err, c.err
    assert "waiting" not in b.err and "alongside" not in b.err, b.err
    assert str(_times(ws, json.loads(out_a))[2].get("concurrent")).lower() == "true"
    assert str(_times(ws, c.json)[2].get("concurrent")).lower() == "true"
    assert "concurrent" not in _times(ws, b.json)[2]  # GPU 3 shared nothing with either


def test_a_gpu_named_by_uuid_is_the_same_gpu_as_its_index(ws):
    fake = json.dumps({"gpus": [{"uuid": "GPU-aaaa", "name": "NVIDIA H200"}, {"uuid": "GPU-bbbb", "name": "NVIDIA H200"}]})
    env = {"OPTLOG_FAKE_NVML": fake}
    hold, release = _held(ws)
    a = _popen_env(ws, _gpu_spec(ws, "g1", "1", hold, telemetry=False), env=env)
    b = None
    try:
        _started(ws)
        b = Launch(ws, _gpu_spec(ws, "gb", "GPU-bbbb", telemetry=False), env=env)
        wait_for(b.waiting, 600, "the launch on GPU-bbbb to wait")
        release.touch()
        a.communicate(timeout=600)
        _out, err = b.communicate()
        r = SimpleNamespace(err=err)
    finally:
        release.touch()
        if a.poll() is None:
            a.kill()
            a.wait(10)
        if b is not None:
            b.kill()
    assert "waiting:" in r.err and "GPU 1 is in use by launch L1" in r.err, r.err


def test_cuda_visible_devices_inherited_by_optlog_names_the_gpu_set(ws):
    hold, release = _held(ws)
    a = _popen_env(ws, spec(ws, "inh01", server=False, bench={"cmd": bench_cmd(hold)}),
                   env={"CUDA_VISIBLE_DEVICES": "0,1"})
    try:
        _started(ws)
        b = ws.cli("run", "launch", spec(ws, "inh2", server=False), "--json", timeout=600,
                   env={"CUDA_VISIBLE_DEVICES": "2"})
        assert a.poll() is None
        release.touch()
        a.communicate(timeout=600)
    finally:
        release.touch()
        if a.poll() is None:
            a.kill()
            a.wait(10)
    assert "waiting" not in b.err, b.err
