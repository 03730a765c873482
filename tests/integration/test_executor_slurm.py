"""The Slurm executor end to end against a real single-node Slurm (started by scripts/test.sh in CI: partition
`debug`, node localhost): `optlog run launch` with `executor: {slurm: …}`; the server as a batch job,
the bench as a step in its allocation, a bench-only spec as its own job; scancel on cancel and on
recovery after a kill -9 of optlog, checked with squeue/scontrol and /proc."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest
import yaml

from _launch import PY, TESTS, assert_no_survivors, spec, survivors, wait_for


def _slurm_ok() -> str | None:
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "no Slurm client (sinfo/sbatch) on PATH: run the CI script that starts Slurm (scripts/test.sh)"
    try:
        p = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return f"sinfo failed: {e}"
    if p.returncode != 0:
        return f"sinfo failed: {p.stderr.strip()}"
    return None


_why = _slurm_ok()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")

SLURM = {"slurm": {"partition": "debug", "time": "00:10:00"}}
BENCH_ONLY = ("{{ py }} {{ tests }}/_launch_bench.py --out {{ out }} --concurrency {{ concurrency }} ")


def _bench_only(ws, name, extra="", bench_extra=None, **top):
    return spec(ws, name, server=False, executor=top.pop("executor", SLURM),
                bench={"cmd": BENCH_ONLY + extra, "results": ["result.json"], **(bench_extra or {})},
                params={"py": PY, "tests": str(TESTS)}, **top)


def _jobs(ws) -> dict[str, str]:
    """Job id -> state for the jobs optlog submitted for this workspace (their batch script lives in
    the workspace's .optlog/slurm/, and their comment is optlog:<launch token>)."""
    p = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%T|%k|%o"], capture_output=True, text=True)
    out = {}
    for line in p.stdout.splitlines():
        jid, st, comment, command = (line.split("|") + ["", "", ""])[:4]
        if comment.startswith("optlog:") and command.startswith(str(ws.root / ".optlog" / "slurm")):
            out[jid] = st
    return out


def test_server_job_with_bench_step_succeeds(ws):
    rel = spec(ws, "slok", executor=SLURM, bench={"cmd": "{{ py }} {{ tests }}/_launch_bench.py --url {{ server_url }} "
                                                          "--out {{ out }} --concurrency {{ concurrency }}",
                                                  "results": ["result.json"]})
    doc = ws.j("run", "launch", rel)
    assert doc["status"] == "succeeded", doc
    (run,) = doc["runs"]
    assert run["metrics"]["output_throughput"] > 0
    show = ws.j("run", "show", str(run["id"]))
    assert show["host"] == "slurm:debug"
    ex = show["environment"]["executor"]
    assert ex["kind"] == "slurm" and ex["job_id"] and ex["nodelist"] == "localhost"
    assert "job_gpus" in ex  # SLURM_JOB_GPUS ('' on a node without GPUs)
    # the server job ended (scancel at teardown) and nothing of it is left
    wait_for(lambda: all(st in ("CANCELLED", "COMPLETED") for st in _jobs(ws).values()), 30, "the server job to end")
    assert _jobs(ws)
    assert_no_survivors(str(ws.root))


def test_bench_job_exit_code_propagated(ws):
    rel = _bench_only(ws, "slfail", "--exit 3 --stderr 'NCCL watchdog timeout'")
    r = ws.cli("run", "launch", rel, "--json", check=1)
    (run,) = r.json["runs"]
    assert run["status"] == "failed" and run["exit_code"] == 3, run
    assert "NCCL watchdog timeout" in run["error"]
    ok = ws.j("run", "launch", _bench_only(ws, "slok2"))
    assert ok["status"] == "succeeded" and ok["runs"][0]["metrics"]["completed"] == 1
    assert_no_survivors(str(ws.root))


def _popen_launch(ws, rel):
    return subprocess.Popen([sys.executable, "-m", "optlog", "run", "launch", rel, "--json"], cwd=ws.root, env=ws.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _running_job(ws):
    jobs = {j: s for j, s in _jobs(ws).items() if s == "RUNNING"}
    return next(iter(jobs), None) if jobs and list((ws.root / ".optlog" / "runs").glob("*/argv.json")) else None


def test_cancel_scancels_the_job(ws):
    rel = _bench_only(ws, "slcancel", "--sleep 60 --child")
    d = ws.j("run", "launch", rel, "--detach")
    jid = wait_for(lambda: _running_job(ws), 60, "the bench job to run")
    assert survivors(str(ws.root))
    c = ws.j("run", "cancel", d["ref"])
    assert c["status"] == "cancelled"
    r = ws.cli("run", "wait", str(d["runs"][0]), "--json", check=1)
    assert r.json["status"] == "cancelled"
    wait_for(lambda: _jobs(ws).get(jid) == "CANCELLED", 30, f"job {jid} to be CANCELLED")
    assert_no_survivors(str(ws.root), timeout=15)


def test_kill_9_of_optlog_then_recovery_scancels(ws):
    rel = _bench_only(ws, "slkill9", "--sleep 60 --child")
    p = _popen_launch(ws, rel)
    try:
        jid = wait_for(lambda: _running_job(ws), 60, "the bench job to run")
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    assert _jobs(ws)[jid] == "RUNNING"  # a batch job does not die with optlog
    r = ws.cli("run", "list", "--json")
    assert "interrupted" in r.err
    (run,) = r.json["runs"]
    assert run["status"] == "interrupted"
    wait_for(lambda: _jobs(ws).get(jid) == "CANCELLED", 30, f"job {jid} to be CANCELLED")
    assert_no_survivors(str(ws.root), timeout=15)


def test_named_partition_from_optlog_yaml_and_unknown_name(ws):
    cfg = ws.root / "optlog.yaml"
    doc = yaml.safe_load(cfg.read_text())
    doc.setdefault("executors", {}).setdefault("slurm", {})["dbg"] = {"partition": "debug", "time": "00:05:00"}
    cfg.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = ws.cli("run", "launch", _bench_only(ws, "slbad", executor={"slurm": "nope"}), "--json", check=False)
    assert r.code != 0 and "no such partition" in r.out + r.err
    assert ws.j("run", "list")["runs"] == []
    ok = ws.j("run", "launch", _bench_only(ws, "slnamed", executor={"slurm": "dbg"}))
    assert ok["status"] == "succeeded"


def test_bench_timeout_scancels_the_job(ws):
    rel = _bench_only(ws, "sltimeout", "--sleep 60 --child", bench_extra={"timeout_s": 4})
    r = ws.cli("run", "launch", rel, "--json", check=1)
    (run,) = r.json["runs"]
    assert run["status"] == "failed" and run["cause"] == "timeout", run
    jobs = _jobs(ws)
    assert jobs and all(st == "CANCELLED" for st in jobs.values()), jobs
    assert_no_survivors(str(ws.root), timeout=15)


def test_hostile_values_never_run_in_the_batch_script(ws, tmp_path):
    """Issue 42.2: the job script is written by optlog: a value in an argument, a `sh -c` script or
    an environment variable (plain, or secret-named and passed through sbatch's environment)
    reaches the bench as text."""
    sentinel = tmp_path / "PWNED"
    vals = [h.replace("{S}", str(sentinel)) for h in ("a; touch {S}", "$(touch {S})", "'`touch {S}`'")]
    script = ("printf '{\"completed\": 1}' > {{ out }}/result.json; printf '%s' {{ x }} > {{ out }}/x; "
              "printf '%s' \"$1\" > {{ out }}/arg; printf '%s' \"$HOSTILE\" > {{ out }}/env; "
              "printf '%s' \"$MY_TOKEN\" > {{ out }}/secret")
    rel = spec(ws, "slvals", executor=SLURM, server=False, matrix={"x": vals},
               bench={"cmd": ["sh", "-c", script, "sh", "{{ x }}"], "results": ["result.json"],
                      "env": {"HOSTILE": "{{ x }}", "MY_TOKEN": "{{ x }}"}})
    r = ws.cli("run", "launch", rel, "--json", check=False, timeout=300)
    assert r.code == 0, r.out + r.err
    assert not sentinel.exists()
    seen = set()
    for run in r.json["runs"]:  # (its label x is <redacted>: the value of MY_TOKEN is a secret)
        out = ws.root / run["artifacts_dir"]
        got = [(out / f).read_text() for f in ("x", "arg", "env", "secret")]
        assert len(set(got)) == 1, got
        seen.add(got[0])
    assert seen == set(vals)
