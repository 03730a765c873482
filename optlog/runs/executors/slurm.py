"""The Slurm executor (`executor: {slurm: {partition, gres, time, account, nodes, extra}}`, or
`{slurm: NAME}` for a partition of optlog.yaml `executors.slurm`), same protocol as the local one.

Design (decided here):
- The SERVER (or a bench when the spec has no server) is one batch job: `sbatch --parsable` of a
  generated bash script under `.optlog/slurm/`, with `--output/--error` pointing at the artifact files
  (the workspace must be on a filesystem the compute nodes share, as it is on a typical cluster and
  on this single-node CI cluster). The job id is the handle's pid/pgid and so lands in the process
  record (host `slurm:PARTITION`).
- A BENCH (or stop command, or telemetry/environment probe) while a server job runs is a job step
  inside the server's allocation: `srun --jobid=J --overlap -N1 -n1`, so `127.0.0.1` server URLs work
  and it sees the same GPUs. That step is a local `srun` process group (the local executor's handle);
  ending it ends the step, and the step dies with the job anyway.
- Poll: the script writes the command's exit status to `<job>.rc` (shared filesystem: a stat per
  poll); `squeue -h -j ID -t all -o %T` at most every 0.5 s catches a job that ended without one
  (cancelled, time limit, node failure), and then the exit code comes from `scontrol show job` ExitCode
  (`3:0` -> 3, `0:15` -> 143). No accounting (sacct) is needed.
- The script also writes `<job>.info` at start: SLURM_JOB_ID, SLURM_JOB_GPUS, SLURM_JOB_NODELIST,
  CUDA_VISIBLE_DEVICES, the node's hostname. `executor.job` holds it for the server job (telemetry reads
  `executor.gpus`); `environment_facts()` puts it in the run's environment (key `executor`).
- kill = `scancel ID` (Slurm sends SIGTERM, then SIGKILL after KillWait), waiting until squeue shows the
  job ended. The launcher calls kill on every exit path (cancel, timeout, Ctrl-C, failure); after a
  kill -9 of optlog, recovery scancels the jobs of the dead launch's process records (`kill_record`).
"""

from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from optlog import settings
from optlog.config import Section, Word
from optlog.errors import Failed
from optlog.needs import Launches
from optlog.runs.executors.base import ExecutorKind, wait_for_exit
from optlog.runs.executors.local import LocalExecutor
from optlog.runs.redact import redact_argv, secret_env, secret_env_name, secret_name

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
            "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"}


class SlurmPartition(Section):
    """One named partition of optlog.yaml `executors.slurm`."""

    partition: Word
    gres: Word | None = None
    time: Word | None = None
    account: Word | None = None
    extra: list[str] = Field(default_factory=list)


class SlurmSpec(Section):
    """A spec's inline `executor: {slurm: {...}}`."""

    partition: str | None = None
    gres: str | None = None
    time: str | None = None
    account: str | None = None
    nodes: int | None = Field(default=None, ge=1)
    extra: list[str] = Field(default_factory=list)


def _cmd(argv: list[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


def job_state(job_id: str) -> str | None:
    """RUNNING, PENDING, COMPLETED, …; None when Slurm no longer knows the job."""
    try:
        p = _cmd(["squeue", "-h", "-j", str(job_id), "-t", "all", "-o", "%T"])
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [x.strip() for x in p.stdout.splitlines() if x.strip()]
    return lines[0].split()[0].rstrip("+") if p.returncode == 0 and lines else None


def job_exit_code(job_id: str) -> int | None:
    """From `scontrol show job` ExitCode=A:B: A, or 128+B when a signal ended it."""
    try:
        p = _cmd(["scontrol", "show", "job", str(job_id), "-o"])
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"\bExitCode=(\d+):(\d+)", p.stdout)
    if not m:
        return None
    code, sig = int(m.group(1)), int(m.group(2))
    return 128 + sig if sig else code


class SlurmJobHandle:
    def __init__(self, ex: "SlurmExecutor", job_id: str, argv: list[str], role: str, rc_file: Path,
                 info_file: Path) -> None:
        self.ex = ex
        self.job_id = job_id
        self.pid = self.pgid = int(job_id)
        self.start_ticks: int | None = None
        self.host = ex.host
        self.role = role
        self.argv = argv
        self.returncode: int | None = None
        self.record_id: int | None = None
        self.state: str | None = "PENDING"
        self.info: dict[str, str] = {}
        self.rc_file = rc_file
        self.info_file = info_file
        self._next_query = 0.0

    def fileno(self) -> None:
        return None

    def read_info(self) -> dict[str, str]:
        if not self.info and self.info_file.exists():
            for line in self.info_file.read_text(encoding="utf-8", errors="replace").splitlines():
                k, _, v = line.partition("=")
                if k:
                    self.info[k] = v
        return self.info

    def _rc_from_file(self) -> int | None:
        try:
            return int(self.rc_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _done(self, rc: int) -> int:
        self.returncode = rc
        self.read_info()
        if self.ex.on_exit:
            self.ex.on_exit(self)
        return rc

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        rc = self._rc_from_file()
        if rc is not None:
            return self._done(rc)
        now = time.monotonic()
        if now < self._next_query:
            return None
        self._next_query = now + 0.5
        st = job_state(self.job_id)
        self.state = st
        if st is not None and st not in TERMINAL:
            if st == "RUNNING":
                self.read_info()
            return None
        rc = self._rc_from_file()
        if rc is None:
            rc = job_exit_code(self.job_id)
        return self._done(rc if rc is not None else 1)

    def wait(self, timeout: float | None = None) -> int | None:
        return wait_for_exit(self.poll, timeout, None, step=0.05)


def batch_script(argv: list[str], env: dict[str, str], cwd: str | None, rc_file: Path, info_file: Path,
                 hidden: dict[str, str] | None = None) -> str:
    """The job script. Secrets (optlog.runs.redact) are never written into it: a secret variable or
    argument is put into `hidden`, which the caller passes to sbatch's own environment (exported
    to the job by Slurm's default `--export=ALL`), and the script refers to it by name."""
    hidden = {} if hidden is None else hidden
    q = shlex.quote
    lines = ["#!/bin/bash",
             "# written by optlog: one command of a launch, its exit status in the .rc file",
             f"{{ printf 'SLURM_JOB_ID=%s\\nSLURM_JOB_GPUS=%s\\nSLURM_JOB_NODELIST=%s\\nCUDA_VISIBLE_DEVICES=%s\\nHOSTNAME=%s\\n' "
             f"\"$SLURM_JOB_ID\" \"${{SLURM_JOB_GPUS:-}}\" \"${{SLURM_JOB_NODELIST:-}}\" \"${{CUDA_VISIBLE_DEVICES:-}}\" "
             f"\"$(hostname)\" > {q(str(info_file))}.tmp && mv {q(str(info_file))}.tmp {q(str(info_file))}; }}"]
    if cwd:
        lines.append(f"cd {q(cwd)} || {{ echo 126 > {q(str(rc_file))}; exit 126; }}")
    for k, v in env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            lines.append(f"# skipped env {k!r}")
        elif secret_env(k, v):
            hidden[k] = v
            lines.append(f"# {k}: from the submitting environment (a secret is never written to a file)")
        else:
            lines.append(f"export {q(k)}={q(v)}")
    words = []
    for i, (a, r) in enumerate(zip(argv, redact_argv(argv))):
        if str(a) != r:
            hidden[f"OPTLOG_SECRET_{i}"] = str(a)
            words.append(f'"$OPTLOG_SECRET_{i}"')
        else:
            words.append(q(str(a)))
    lines += [" ".join(words) + " </dev/null",
              "rc=$?",
              f"echo $rc > {q(str(rc_file))}.tmp && mv {q(str(rc_file))}.tmp {q(str(rc_file))}",
              "exit $rc"]
    return "\n".join(lines) + "\n"


class SlurmExecutor:
    kind = "slurm"
    on_this_machine = False
    telemetry = "stream"
    same_python = True  # the workspace and optlog live on a filesystem the nodes share

    def __init__(self, ctx: Launches, opts: dict[str, Any], *, base_env: dict[str, str] | None = None,
                 on_spawn: Callable[[Any], None] | None = None, on_exit: Callable[[Any], None] | None = None) -> None:
        self.ctx = ctx
        self.opts = opts
        self.partition = opts.get("partition")
        self.host = f"slurm:{self.partition or 'default'}"
        self.base_env = dict(settings.environ() if base_env is None else base_env)
        self.on_spawn = on_spawn
        self.on_exit = on_exit
        self.local = LocalExecutor(base_env=self.base_env, on_spawn=on_spawn, on_exit=on_exit)
        self.token = self.base_env.get("OPTLOG_LAUNCH_TOKEN") or f"p{os.getpid()}"
        self.dir = Path(ctx.ws.state_dir) / "slurm"
        self.jobs: list[SlurmJobHandle] = []
        self._n = 0

    # ---------------------------------------------------------------- what runs where
    def _alloc(self) -> SlurmJobHandle | None:
        """The live server job (its allocation hosts the benches, stop commands and probes)."""
        for h in reversed(self.jobs):
            if h.role == "server" and h.returncode is None and h.poll() is None:
                return h
        return None

    @property
    def job(self) -> dict[str, str]:
        a = self._alloc() or (self.jobs[-1] if self.jobs else None)
        return a.read_info() if a is not None else {}

    @property
    def gpus(self) -> list[str]:
        g = self.job.get("SLURM_JOB_GPUS", "")
        return [x for x in g.split(",") if x]

    def environment_facts(self) -> dict[str, Any]:
        info = self.job
        return {"kind": "slurm", "partition": self.partition, "job_id": info.get("SLURM_JOB_ID"),
                "job_gpus": info.get("SLURM_JOB_GPUS"), "nodelist": info.get("SLURM_JOB_NODELIST"),
                "node": info.get("HOSTNAME"), "options": {k: v for k, v in self.opts.items() if v}}

    def _srun(self, job: SlurmJobHandle, argv: list[str], env: dict[str, str] | None) -> list[str]:
        # wait (briefly) until the job runs: a step cannot start in a pending allocation
        deadline = time.monotonic() + 600
        while job.state != "RUNNING" and time.monotonic() < deadline:
            if job.poll() is not None:
                break
            if job.read_info():
                break
            time.sleep(0.1)
        envs = [f"{k}={v}" for k, v in (env or {}).items()]
        return ["srun", f"--jobid={job.job_id}", "--overlap", "-N1", "-n1", "--quiet", "--kill-on-bad-exit=1",
                "env", *envs, *argv]

    def _sbatch(self, argv: list[str], env: dict[str, str] | None, cwd: str | None, stdout: Path | None,
                stderr: Path | None, role: str) -> SlurmJobHandle:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._n += 1
        stem = self.dir / f"{self.token[:12]}-{os.getpid()}-{self._n}-{role}"
        rc_file, info_file = Path(f"{stem}.rc"), Path(f"{stem}.info")
        for f in (rc_file, info_file):
            f.unlink(missing_ok=True)
        script = Path(f"{stem}.sh")
        hidden: dict[str, str] = {}
        script.write_text(batch_script(argv, dict(env or {}), cwd, rc_file, info_file, hidden))
        o = self.opts
        cmd = ["sbatch", "--parsable", f"--job-name=optlog-{role}", f"--comment=optlog:{self.token}",
               "--open-mode=append", f"--output={stdout or '/dev/null'}", f"--error={stderr or '/dev/null'}"]
        if cwd:
            cmd.append(f"--chdir={cwd}")
        for key, flag in (("partition", "--partition"), ("gres", "--gres"), ("time", "--time"),
                          ("account", "--account"), ("nodes", "--nodes")):
            if o.get(key):
                cmd.append(f"{flag}={o[key]}")
        cmd += [str(x) for x in (o.get("extra") or [])]
        cmd.append(str(script))
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                               env={**self.base_env, **(env or {}), **hidden})
        except FileNotFoundError:
            raise OSError("sbatch not found: is this a Slurm login node?") from None
        if p.returncode != 0 or not p.stdout.strip():
            raise OSError(f"sbatch failed (exit {p.returncode}): {p.stderr.strip() or p.stdout.strip()}")
        job_id = p.stdout.strip().splitlines()[-1].split(";")[0]
        h = SlurmJobHandle(self, job_id, argv, role, rc_file, info_file)
        self.jobs.append(h)
        if self.on_spawn:
            self.on_spawn(h)
        return h

    # ---------------------------------------------------------------- protocol
    def popen(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
              stdout: Path | None = None, stderr: Path | None = None, role: str = "bench") -> Any:
        alloc = self._alloc() if role != "server" else None
        if alloc is not None:
            return self.local.popen(self._srun(alloc, argv, env), env=env, cwd=cwd, stdout=stdout, stderr=stderr,
                                    role=role)
        return self._sbatch(argv, env, cwd, stdout, stderr, role)

    def stream(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
               role: str = "telemetry") -> Any:
        """Inside the live server job (so telemetry samples the job's node and GPUs); with no job
        running, a one-task step of its own allocation on the partition."""
        alloc = self._alloc()
        if alloc is not None:
            h = self.local.stream(self._srun(alloc, argv, env), env=env, cwd=cwd, role=role)
        else:
            o = self.opts
            cmd = ["srun", "-N1", "-n1", "--quiet"] + ([f"--partition={o['partition']}"] if o.get("partition") else []) \
                + ([f"--account={o['account']}"] if o.get("account") else []) + [f"--job-name=optlog-{role}"]
            h = self.local.stream(cmd + ["env", *[f"{k}={v}" for k, v in (env or {}).items()], *argv], env=env,
                                  cwd=cwd, role=role)
        # Popen-like for telemetry: text lines, terminate() ends the srun group (and so the step)
        if h.stdout is not None:
            h.stdout = io.TextIOWrapper(h.stdout, encoding="utf-8", errors="replace")
        h.terminate = lambda: self.local.kill(h, grace_s=2.0)  # type: ignore[attr-defined]
        return h

    def kill(self, handle: Any, *, sig: int = signal.SIGTERM, grace_s: float = 10.0) -> bool:
        if not isinstance(handle, SlurmJobHandle):
            return self.local.kill(handle, sig=sig, grace_s=grace_s)
        if handle.poll() is not None:
            return True
        ok = scancel(handle.job_id, sig=sig)
        deadline = time.monotonic() + grace_s + 30.0  # Slurm's KillWait comes on top of our grace
        while time.monotonic() < deadline:
            handle._next_query = 0.0
            if handle.poll() is not None:
                return ok
            time.sleep(0.1)
        return False


def scancel(job_id: str, sig: int | None = None) -> bool:
    cmd = ["scancel"]
    if sig not in (None, signal.SIGTERM, signal.SIGKILL):
        # a softer signal first (e.g. SIGINT for a server that drains): the job's processes get it,
        # and the cancel follows in kill()'s wait loop through Slurm's own escalation
        try:
            _cmd(["scancel", "--full", f"--signal={signal.Signals(sig).name[3:]}", str(job_id)])
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        p = _cmd(cmd + [str(job_id)])
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0


def make(ctx: Launches, executor: Any, **kw: Any) -> SlurmExecutor:
    sel = executor[6:] if isinstance(executor, str) else executor["slurm"]
    if isinstance(sel, str):
        named = ctx.config.executors.section("slurm")
        if sel not in named:
            known = ", ".join(sorted(named)) or "none"
            raise Failed(f"executor slurm {sel}: no such partition in optlog.yaml executors.slurm (known: {known})",
                         field="executor", code="bad_executor")
        opts = named[sel].model_dump()
    else:
        opts = dict(sel or {})
    if shutil.which("sbatch") is None:
        raise Failed("executor slurm: `sbatch` is not on PATH (run optlog on a Slurm login node)",
                     field="executor", code="bad_executor")
    return SlurmExecutor(ctx, opts, **kw)


def kill_record(ctx: Launches, rec: Any) -> bool:
    """Recovery: scancel the job of a process record made by this executor (pid = job id)."""
    if not rec.pid or shutil.which("scancel") is None:
        return False
    st = job_state(str(rec.pid))
    if st is None or st in TERMINAL:
        return False
    try:  # only a job optlog submitted (job ids restart when a cluster's state is wiped)
        p = _cmd(["squeue", "-h", "-j", str(rec.pid), "-t", "all", "-o", "%k"])
    except (OSError, subprocess.SubprocessError):
        return False
    if not p.stdout.strip().startswith("optlog:"):
        return False
    return scancel(str(rec.pid))


class SlurmKind(ExecutorKind):
    name = "slurm"
    section = dict[str, SlurmPartition]
    spelling = "{slurm: {partition, gres, time}} or {slurm: NAME} (optlog.yaml executors.slurm)"
    on_spelling = "slurm:NAME (optlog.yaml executors.slurm) or slurm (the default partition)"
    kill_path = "`scancel` of the job (only jobs whose comment is `optlog:<launch token>`)"

    def parse(self, value: Any) -> Any | None:
        if not (isinstance(value, dict) and set(value) == {"slurm"}):
            return None
        if isinstance(value["slurm"], str) and value["slurm"]:
            return {"slurm": value["slurm"]}  # a named partition of optlog.yaml executors.slurm
        SlurmSpec.model_validate(value["slurm"] or {})
        return {"slurm": dict(value["slurm"] or {})}

    def parse_on(self, word: str) -> Any | None:
        if word == "slurm":
            return {"slurm": {}}  # the default partition
        return word if word.startswith("slurm:") else None

    def claims(self, value: Any) -> bool:
        return isinstance(value, str) and value.startswith("slurm:") or isinstance(value, dict) and "slurm" in value

    def make(self, ctx: Launches, value: Any, **kw: Any) -> SlurmExecutor:
        return make(ctx, value, **kw)

    def owns_record(self, host: str) -> bool:
        return host.startswith("slurm:")

    def kill_record(self, ctx: Launches, rec: Any) -> bool:
        return kill_record(ctx, rec)


KIND = SlurmKind()
