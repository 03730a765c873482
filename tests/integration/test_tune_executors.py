"""Issue 21.2: `optlog tune … --on ssh:HOST | slurm:NAME` starts one worker per ssh host or Slurm job,
each an `optlog tune run` against the workspace's PostgreSQL study, through the same executors as
`run launch`: a real sshd on 127.0.0.1 (scripts/sshd-up.sh) and a real single-node Slurm
(scripts/test.sh). The bench is tests/_tune_bench.py (metrics a known function of x and mode).
A SQLite workspace's study is a file on one machine: remote workers are refused there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from _launch import PY, TESTS

SSH_ENV = ("OPTLOG_TEST_SSH_HOST", "OPTLOG_TEST_SSH_PORT", "OPTLOG_TEST_SSH_USER", "OPTLOG_TEST_SSH_KEY")
NO_SSHD = any(not os.environ.get(k) for k in SSH_ENV)
ARGS = ("--maximize", "output_throughput", "--constraint", "p99_ttft_ms <= 100", "--sampler", "random",
        "--seed", "1")


def _slurm_missing() -> str | None:
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "no Slurm client (sinfo/sbatch) on PATH: run the CI script that starts Slurm (scripts/test.sh)"
    p = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=10)
    return None if p.returncode == 0 else f"sinfo failed: {p.stderr.strip()}"


def _spec(ws, name="t", sleep=0.3):
    d = {"name": name, "params": {"py": PY, "tests": str(TESTS), "sleep": sleep},
         "search": {"x": {"low": 1.0, "high": 5.0}, "mode": {"choices": ["a", "b"]}},
         "bench": {"cmd": "{{ py }} {{ tests }}/_tune_bench.py --out {{ out }} --x {{ x }} --mode {{ mode }} "
                          "--sleep {{ sleep }}"},
         "telemetry": False}
    (ws.root / "runs" / f"{name}.yaml").write_text(yaml.safe_dump(d, sort_keys=False, width=10000))
    return f"runs/{name}.yaml"


def _configure(ws, **executors):
    cfg = ws.root / "optlog.yaml"
    doc = yaml.safe_load(cfg.read_text())
    for kind, hosts in executors.items():
        doc.setdefault("executors", {}).setdefault(kind, {}).update(hosts)
    cfg.write_text(yaml.safe_dump(doc, sort_keys=False))


def _ssh_host(ws):
    remote = ws.root.parent / "remote-home"
    remote.mkdir(exist_ok=True)
    return {"host": os.environ["OPTLOG_TEST_SSH_HOST"], "port": int(os.environ["OPTLOG_TEST_SSH_PORT"]),
            "user": os.environ["OPTLOG_TEST_SSH_USER"], "identity_file": os.environ["OPTLOG_TEST_SSH_KEY"],
            "options": ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"], "workdir": str(remote),
            "optlog": f"{sys.executable} -m optlog"}


def _check_shared_study(ws, d, n, workers):
    assert "worker_errors" not in d, d.get("worker_errors")
    trials = d["trials"]
    assert sorted(t["number"] for t in trials) == list(range(n)), trials
    assert all(t["state"] == "complete" for t in trials), trials
    assert {t["worker"] for t in trials} == set(range(workers))  # each worker took trials of the one study
    runs = [t["run"] for t in trials if "same_as" not in t]
    assert len(set(runs)) == len(runs)  # no trial ran twice
    assert [w["exit_code"] for w in d["workers"]] == [0] * len(d["workers"])


def test_remote_workers_on_a_sqlite_workspace_are_refused_and_nothing_is_written(ws, backend):
    rel = _spec(ws)
    r = ws.cli("tune", rel, *ARGS, "--on", "local", "--json", check=False)  # not a remote executor
    assert r.code == 2 and r.json["error"]["field"] == "--on" and "ssh:HOST" in r.json["error"]["message"], r.out
    r = ws.cli("tune", rel, *ARGS, "--on", "ssh:nope", "--json", check=False)
    assert r.code == 2 and r.json["error"]["field"] == "--on" and "no such host" in r.json["error"]["message"]
    if backend == "sqlite":
        _configure(ws, ssh={"box": {"host": "127.0.0.1"}})
        r = ws.cli("tune", rel, *ARGS, "--on", "ssh:box", "--json", check=False)
        assert r.code == 2 and r.json["error"]["field"] == "--on", r.out
        assert "SQLite" in r.json["error"]["message"] and "PostgreSQL" in r.json["error"]["message"]
        assert "Traceback" not in r.err
    assert not (ws.root / ".optlog" / "launches").exists() and not (ws.root / ".optlog" / "tune.db").exists()


@pytest.mark.sshd
@pytest.mark.skipif(NO_SSHD, reason="no test sshd: run `bash scripts/sshd-up.sh && . /tmp/optlog-sshd/env.sh`")
def test_one_worker_per_ssh_host_share_one_postgresql_study(ws, backend):
    if backend != "postgresql":
        pytest.skip("remote workers share a study through PostgreSQL (the SQLite refusal is tested above)")
    _configure(ws, ssh={"loop": _ssh_host(ws), "loop2": _ssh_host(ws)})
    rel = _spec(ws)
    d = ws.j("tune", rel, *ARGS, "--trials", "6", "--on", "ssh:loop", "--on", "ssh:loop2", "--remeasure", "2",
             timeout=300)
    _check_shared_study(ws, d, 6, 2)
    assert [(w["worker"], w["on"]) for w in d["workers"]] == [(0, "ssh:loop"), (1, "ssh:loop2"), (0, "ssh:loop")]
    # each worker's launch, then the re-measuring worker's (its search launch finds the study complete)
    assert len(d["launches"]) == 4 and [la.get("remeasure", False) for la in d["launches"]] == [False] * 3 + [True]
    (best,) = d["best"]
    assert best["remeasured"]["n"] == 2  # re-measured by the last worker, over ssh
    # run again: the workers resume the study, find it complete, and launch nothing more
    again = ws.cli("tune", rel, *ARGS, "--trials", "6", "--on", "ssh:loop", "--on", "ssh:loop2", "--remeasure", "2",
                   timeout=300)
    assert "worker 0 on ssh:loop: exit 0" in again.out and "worker 1 on ssh:loop2: exit 0" in again.out, again.out
    assert ws.j("tune", "show", "t")["trials"] == d["trials"]
    # the database URL (with its password) reached the workers outside any command line or file
    url = ws.env["OPTLOG_DB_URL"]
    for f in (ws.root / ".optlog").rglob("*"):
        if f.is_file() and f.suffix in (".log", ".json", ".sh"):
            assert url not in f.read_text(errors="replace"), f


@pytest.mark.slurm
@pytest.mark.skipif(_slurm_missing() is not None, reason=_slurm_missing() or "")
def test_one_worker_per_slurm_job_share_one_postgresql_study(ws, backend):
    if backend != "postgresql":
        pytest.skip("remote workers share a study through PostgreSQL (the SQLite refusal is tested above)")
    _configure(ws, slurm={"debug": {"partition": "debug", "time": "00:10:00"}})
    rel = _spec(ws)
    d = ws.j("tune", rel, *ARGS, "--trials", "6", "--workers", "2", "--on", "slurm:debug", "--remeasure", "0",
             timeout=300)
    _check_shared_study(ws, d, 6, 2)
    assert [w["on"] for w in d["workers"]] == ["slurm:debug"] * 2 and len(d["launches"]) == 2
    scripts = list((ws.root / ".optlog" / "slurm").glob("*.sh"))
    assert len(scripts) == 2 and all("tune run" in s.read_text() for s in scripts)
    url = ws.env["OPTLOG_DB_URL"]
    assert all(url not in s.read_text() for s in scripts)  # the URL's password is never written to the job script
