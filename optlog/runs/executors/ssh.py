"""The SSH executor (`executor: "ssh:HOST"`, HOST from optlog.yaml `executors.ssh`): the command runs on
the host through the system `ssh` client, in its own process group THERE, with the same protocol as
the local executor (see `optlog.runs.executors.base`).

How one command runs:
- One master connection per host (`ssh -MNf`, ControlPersist), started once in its own session; every
  command is a multiplexed client of it (a few ms instead of a new handshake), BatchMode always.
- The remote side is a small POSIX sh wrapper: `setsid` starts the command as a new session (group id
  = its pid); before exec'ing it prints `@@optlog PID START` on stderr (START = field 22 of
  /proc/PID/stat, so a reused PID is never killed); `popen` reads that line, so the handle's pid, pgid
  and start_ticks are the REMOTE ones. The wrapper waits for the command, kills stray members of its
  group, and exits with the command's status (128+N for a signal), which `ssh` hands back.
- A watchdog in the wrapper reads the channel's stdin: when the local side goes away (optlog killed
  with -9, the connection lost), stdin hits EOF and the whole remote group gets SIGTERM, then SIGKILL.
- stdout goes straight into the local artifact file, stderr too (after the header line).
- The bench's `{{ out }}` folder: every argument containing the local out folder is rewritten to a
  remote folder under `<workdir>/.optlog-remote/<launch token>/<run>`; when the command ends the folder
  is fetched back into the local one (tar over the same master connection) and removed remotely, so
  parsers read local files.
- kill: `ssh HOST sh -c '<check start time; kill -SIG -PGID; wait grace; kill -KILL -PGID>'`, then the
  local client is waited for (and killed if it hangs).
- Recovery after a kill -9 of optlog: process records carry host `ssh:HOST`; `kill_record` ends them.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import signal
import subprocess
import tarfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from pydantic import Field

from optlog import settings
from optlog.config import Section, Word
from optlog.errors import Failed
from optlog.needs import Launches
from optlog.runs import procs
from optlog.runs.executors.base import ExecutorKind, close_pidfd, exited_unreaped, open_pidfd, wait_for_exit
from optlog.runs.redact import secret_env

HEADER = b"@@optlog "
_START_EXPR = "$(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f20)"


class SshHost(Section):
    """One host of optlog.yaml `executors.ssh`."""

    host: Word
    user: Word | None = None
    port: int = Field(default=22, ge=1, le=65535)
    identity_file: str | None = None
    options: list[str] = Field(default_factory=list)
    optlog: str | None = None  # path of optlog on the host, for remote telemetry
    workdir: str | None = None


def _control_dir() -> str:
    d = os.path.join("/tmp", f"optlog-ssh-{os.getuid()}")
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


class SshTarget:
    """The ssh command line for one configured host."""

    def __init__(self, name: str, cfg: Any) -> None:
        self.name = name
        self.cfg = cfg
        self.control_path = os.path.join(_control_dir(), "%C")
        self._lock = threading.Lock()
        self._master_ok_at = 0.0

    def base(self, *, master: bool = False) -> list[str]:
        c = self.cfg
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-o", f"ControlPath={self.control_path}",
                "-o", "ControlMaster=" + ("yes" if master else "no"), "-o", "ServerAliveInterval=15",
                "-o", "ConnectTimeout=20", "-p", str(c.port)]
        if master:
            argv += ["-o", "ControlPersist=120"]
        if c.identity_file:
            argv += ["-i", os.path.expanduser(c.identity_file), "-o", "IdentitiesOnly=yes"]
        for opt in c.options:
            argv += ["-o", opt] if "=" in opt and not opt.startswith("-") else shlex.split(opt)
        argv.append(f"{c.user}@{c.host}" if c.user else c.host)
        return argv

    def ensure_master(self) -> None:
        """Start the shared master connection when none is running (checked at most every 5 s)."""
        with self._lock:
            if time.monotonic() - self._master_ok_at < 5.0:
                return
            base = self.base()
            chk = subprocess.run(base[:-1] + ["-O", "check", base[-1]], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if chk.returncode != 0:
                p = subprocess.run(self.base(master=True)[:-1] + ["-N", "-f", self.base()[-1]],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True, timeout=60)
                if p.returncode != 0:
                    err = p.stderr.decode("utf-8", "replace").strip()
                    raise OSError(f"ssh to {self.name} ({self.base()[-1]}) failed: {err or 'exit %d' % p.returncode}")
            self._master_ok_at = time.monotonic()

    def run(self, script: str, *, timeout: float = 60.0, stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
        self.ensure_master()
        return subprocess.run(self.base() + ["--", "sh -c " + shlex.quote(script)], stdin=subprocess.DEVNULL,
                              stdout=stdout, stderr=subprocess.PIPE, timeout=timeout, start_new_session=True)


def wrapper_script(argv: list[str], env: dict[str, str], cwd: str | None, mkdir: str | None,
                   hidden: dict[str, str] | None = None) -> str:
    """The remote sh program that runs `argv` as its own session and reports pid and start time.
    A secret variable (a secret name, or a URL with credentials: optlog.runs.redact.secret_env) is
    not written into the program, whose text is a command line on both hosts: it is put into
    `hidden`, whose values the caller sends first on the channel, one line each, and the program
    reads them from there."""
    hidden = {} if hidden is None else hidden
    plain = {}
    for k, v in env.items():
        if secret_env(k, v) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) and "\n" not in str(v):
            hidden[k] = str(v)
        else:
            plain[k] = v
    inner = f'echo "@@optlog $$ {_START_EXPR}" >&2; exec env ' + " ".join(
        shlex.quote(f"{k}={v}") for k, v in plain.items()) + " " + " ".join(shlex.quote(a) for a in argv)
    lines = []
    if cwd:
        lines.append(f"cd {shlex.quote(cwd)} || exit 126")
    if mkdir:
        lines.append(f"mkdir -p {shlex.quote(mkdir)} || exit 126")
    lines.append("exec 3<&0")  # the channel: an asynchronous list's own stdin is /dev/null
    lines += [f"IFS= read -r {k} <&3; export {k}" for k in hidden]
    lines += [
        f"setsid -w sh -c {shlex.quote(inner)} </dev/null 3<&- &",
        "pid=$!",
        # watchdog: the local side went away (EOF on the channel) -> end the whole group
        '( while read -r _ <&3; do :; done; kill -TERM -"$pid" 2>/dev/null; sleep 5; kill -KILL -"$pid" 2>/dev/null ) &',
        "w=$!",
        'wait "$pid"; rc=$?',
        'kill "$w" 2>/dev/null; kill -KILL -"$pid" 2>/dev/null',  # stray members of the group
        'exit "$rc"',
    ]
    return "\n".join(lines)


def kill_script(pgid: int, start: int | None, sig: int, grace_s: float) -> str:
    """Remote: signal group `pgid` only if its leader is gone or started at `start`; SIGKILL after grace.
    Exit 0 when nothing of the group is left, 3 when the pid belongs to somebody else now."""
    name = signal.Signals(sig).name[3:] if isinstance(sig, int) else str(sig)
    n = max(1, int(grace_s * 20))
    check = ""
    if start is not None:
        check = (f"cur=$(sed 's/.*) //' /proc/{pgid}/stat 2>/dev/null | cut -d' ' -f20); "
                 f'if [ -n "$cur" ] && [ "$cur" != "{start}" ]; then exit 3; fi; ')
    return (check + f"kill -{name} -{pgid} 2>/dev/null || exit 0; i=0; "
            f"while kill -0 -{pgid} 2>/dev/null && [ $i -lt {n} ]; do sleep 0.05; i=$((i+1)); done; "
            f"kill -0 -{pgid} 2>/dev/null || exit 0; kill -KILL -{pgid} 2>/dev/null; sleep 0.2; "
            f"kill -0 -{pgid} 2>/dev/null && exit 1; exit 0")


class SshHandle:
    def __init__(self, ex: "SshExecutor", popen: subprocess.Popen[bytes], argv: list[str], role: str,
                 stderr_path: Path | None, fetch: tuple[str, Path] | None) -> None:
        self.ex = ex
        self.popen = popen
        self.argv = argv
        self.role = role
        self.host = ex.host
        self.pid = 0
        self.pgid = 0
        self.start_ticks: int | None = None
        self.returncode: int | None = None
        self.record_id: int | None = None
        self.stdout: IO[bytes] | None = popen.stdout
        self._fetch = fetch
        self._stderr_path = stderr_path
        self._header = threading.Event()
        self._pidfd = open_pidfd(popen.pid)
        self._pump = threading.Thread(target=self._pump_stderr, daemon=True)
        self._pump.start()

    def _pump_stderr(self) -> None:
        """Read the remote header from stderr, then copy the rest into the stderr artifact."""
        out = open(self._stderr_path, "ab") if self._stderr_path else None
        buf = b""
        try:
            f = self.popen.stderr
            assert f is not None
            while not self._header.is_set():
                line = f.readline()
                if not line:
                    break
                if line.startswith(HEADER):
                    parts = line[len(HEADER):].split()
                    try:
                        self.pid = self.pgid = int(parts[0])
                        self.start_ticks = int(parts[1]) if len(parts) > 1 else None
                    except (ValueError, IndexError):
                        pass
                    self._header.set()
                else:
                    buf += line
                    if out:
                        out.write(line)
                        out.flush()
            self.early_stderr = buf
            while True:
                chunk = f.read1(65536) if hasattr(f, "read1") else f.read(65536)
                if not chunk:
                    break
                if out:
                    out.write(chunk)
                    out.flush()
        except (OSError, ValueError):
            pass
        finally:
            self._header.set()
            if out:
                out.close()

    def terminate(self) -> None:
        """For Popen-like users (telemetry's stop): end the remote group, then the local client."""
        self.ex.kill(self, grace_s=2.0)

    kill = terminate

    def wait_header(self, timeout: float) -> bool:
        self._header.wait(timeout)
        return self.pid > 0

    def fileno(self) -> int | None:
        return self._pidfd

    def _exited(self) -> bool:
        return exited_unreaped(self.popen.pid)

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        if not self._exited():
            return None
        rc = self.popen.wait()
        self._pump.join(5.0)
        if self.popen.stdin is not None:
            try:
                self.popen.stdin.close()
            except OSError:
                pass
        if rc == 255 and self.pid:
            # the connection died, not (necessarily) the command: end the remote group
            try:
                self.ex._remote_kill(self, signal.SIGTERM, 3.0)
            except Exception:
                pass
        self._fetch_back()
        close_pidfd(self._pidfd)
        self._pidfd = None
        self.returncode = rc
        if self.ex.on_exit:
            self.ex.on_exit(self)
        return rc

    def _fetch_back(self) -> None:
        if not self._fetch:
            return
        remote, local = self._fetch
        self._fetch = None
        local.mkdir(parents=True, exist_ok=True)
        q = shlex.quote(remote)
        script = f"[ -d {q} ] || exit 0; tar -C {q} -cf - . ; rc=$?; rm -rf {q}; exit $rc"
        try:
            self.ex.target.ensure_master()
            p = subprocess.Popen(self.ex.target.base() + ["--", "sh -c " + shlex.quote(script)], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            assert p.stdout is not None
            try:
                with tarfile.open(fileobj=p.stdout, mode="r|") as tf:
                    tf.extractall(local, filter="data")
            except tarfile.ReadError:
                pass  # empty stream: no folder there
            p.stdout.close()
            err = p.stderr.read() if p.stderr else b""
            if p.wait(60) != 0 and self._stderr_path:
                with open(self._stderr_path, "ab") as f:
                    f.write(b"optlog: fetching the remote out folder failed: " + err)
        except Exception as e:
            if self._stderr_path:
                with open(self._stderr_path, "ab") as f:
                    f.write(f"optlog: fetching the remote out folder failed: {e}\n".encode())

    def wait(self, timeout: float | None = None) -> int | None:
        return wait_for_exit(self.poll, timeout, self._pidfd)


class SshExecutor:
    kind = "ssh"
    on_this_machine = False
    telemetry = "stream"
    same_python = False  # tune's workers run the host's optlog command (executors.ssh.HOST.optlog)

    def __init__(self, name: str, cfg: Any, *, base_env: dict[str, str] | None = None,
                 on_spawn: Callable[[Any], None] | None = None, on_exit: Callable[[Any], None] | None = None) -> None:
        self.name = name
        self.cfg = cfg
        self.host = f"ssh:{name}"
        self.optlog = cfg.optlog  # the optlog command on the host (telemetry runs `optlog telemetry sample` there)
        self.target = SshTarget(name, cfg)
        self.on_spawn = on_spawn
        self.on_exit = on_exit
        base_env = dict(settings.environ() if base_env is None else base_env)
        self.token = base_env.get("OPTLOG_LAUNCH_TOKEN") or f"p{os.getpid()}"

    def _remote_root(self) -> str:
        return f"{self.cfg.workdir.rstrip('/')}/.optlog-remote" if self.cfg.workdir else ".optlog-remote"

    def _spawn(self, argv: list[str], *, env: dict[str, str] | None, stdout: Any, stderr_path: Path | None,
               role: str, fetch: tuple[str, Path] | None) -> SshHandle:
        self.target.ensure_master()
        hidden: dict[str, str] = {}
        script = wrapper_script(argv, dict(env or {}), self.cfg.workdir, fetch[0] if fetch else None, hidden)
        p = subprocess.Popen(self.target.base() + ["--", "sh -c " + shlex.quote(script)], stdin=subprocess.PIPE,
                             stdout=stdout, stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
        if hidden and p.stdin is not None:
            try:
                p.stdin.write("".join(f"{v}\n" for v in hidden.values()).encode())
                p.stdin.flush()
            except OSError:
                pass  # ssh already gone: the header wait below says why
        h = SshHandle(self, p, argv, role, stderr_path, fetch)
        if not h.wait_header(60.0):
            rc = p.wait(5) if p.poll() is None else p.returncode
            if rc is None:
                p.kill()
                p.wait()
            h._pump.join(2.0)
            why = getattr(h, "early_stderr", b"").decode("utf-8", "replace").strip()
            raise OSError(f"ssh {self.name}: the command did not start (ssh exit {rc})" + (f": {why}" if why else ""))
        if self.on_spawn:
            self.on_spawn(h)
        return h

    def popen(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
              stdout: Path | None = None, stderr: Path | None = None, role: str = "bench") -> SshHandle:
        """`cwd` is a local path and is not used remotely: commands run in the host's `workdir` (or home)."""
        fetch = None
        if role == "bench" and stdout is not None:
            local_out = Path(stdout).parent
            remote_out = f"{self._remote_root()}/{self.token}/{local_out.name}"
            lo = str(local_out)
            argv = [a.replace(lo, remote_out) if lo in a else a for a in argv]
            fetch = (remote_out, local_out)
        out = open(stdout, "ab") if stdout else subprocess.DEVNULL
        try:
            return self._spawn(argv, env=env, stdout=out, stderr_path=Path(stderr) if stderr else None, role=role,
                               fetch=fetch)
        finally:
            if hasattr(out, "close"):
                out.close()

    def stream(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
               role: str = "telemetry") -> SshHandle:
        """`h.stdout` is a text stream of the remote command's stdout (telemetry reads lines)."""
        h = self._spawn(argv, env=env, stdout=subprocess.PIPE, stderr_path=None, role=role, fetch=None)
        if h.stdout is not None:
            h.stdout = io.TextIOWrapper(h.stdout, encoding="utf-8", errors="replace")  # type: ignore[assignment]
        return h

    def _remote_kill(self, h: Any, sig: int, grace_s: float) -> bool:
        p = self.target.run(kill_script(int(h.pgid), h.start_ticks, sig, grace_s), timeout=grace_s + 30)
        return p.returncode in (0, 3)

    def kill(self, handle: Any, *, sig: int = signal.SIGTERM, grace_s: float = 10.0) -> bool:
        if handle.poll() is not None:
            return True
        ok = True
        try:
            ok = self._remote_kill(handle, sig, grace_s)
        except (OSError, subprocess.SubprocessError):
            ok = False
        if handle.wait(5.0) is None:  # the wrapper should have exited with its command
            procs.kill_group(handle.popen.pid, procs.start_ticks(handle.popen.pid), grace_s=1.0,
                             reap=lambda: handle.popen.poll())
            handle.wait(5.0)
        return ok


def make(ctx: Launches, name: str, **kw: Any) -> SshExecutor:
    hosts = ctx.config.executors.section("ssh")
    if name not in hosts:
        known = ", ".join(sorted(hosts)) or "none"
        raise Failed(f"executor ssh:{name}: no such host in optlog.yaml executors.ssh (known: {known})",
                     field="executor", code="bad_executor")
    return SshExecutor(name, hosts[name], **kw)


def kill_record(ctx: Launches, rec: Any) -> bool:
    """Recovery: end the remote group of a process record whose host is `ssh:NAME`."""
    name = str(rec.host)[4:]
    cfg = ctx.config.executors.section("ssh").get(name)
    if cfg is None or not rec.pgid:
        return False
    try:
        p = SshTarget(name, cfg).run(kill_script(int(rec.pgid), rec.start_ticks, signal.SIGTERM, 3.0), timeout=40)
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0


class SshKind(ExecutorKind):
    name = "ssh"
    section = dict[str, SshHost]
    spelling = '"ssh:HOST" (a host of optlog.yaml executors.ssh)'
    on_spelling = "ssh:HOST (optlog.yaml executors.ssh)"
    kill_path = "over ssh: the remote process group (by start time); the remote wrapper ends it when the connection drops"
    lock_key = "`ssh:HOST`: the host, or its GPU set"

    def parse(self, value: Any) -> Any | None:
        return value if isinstance(value, str) and value.startswith("ssh:") and len(value) > 4 else None

    def parse_on(self, word: str) -> Any | None:
        return word if word.startswith("ssh:") else None

    def claims(self, value: Any) -> bool:
        return isinstance(value, str) and value.startswith("ssh:")

    def make(self, ctx: Launches, value: Any, **kw: Any) -> SshExecutor:
        return make(ctx, value[4:], **kw)

    def owns_record(self, host: str) -> bool:
        return host.startswith("ssh:")

    def kill_record(self, ctx: Launches, rec: Any) -> bool:
        return kill_record(ctx, rec)

    def lock_target(self, value: Any) -> str | None:
        return str(value)


KIND = SshKind()
