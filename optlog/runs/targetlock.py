"""Runs that disturb each other are not silently compared: one launch at a time on a target.

Two launches on one machine share its CPUs, memory bandwidth and GPUs; on a 2-core host an M=1
GEMM came out 4× slower. So a launch holds a lock on its *target* for as long as it runs —
`local:<hostname>` for the local executor, `ssh:<name>` for an SSH host (a Slurm job gets its
allocation from the scheduler: no lock) — and, where its commands name their GPUs, on each GPU of
the set rather than the whole machine, so that launches on GPUs {0,1} and {2,3} of one host run at
the same time:

- a launch whose points all name GPUs (`CUDA_VISIBLE_DEVICES` of the server, else of the bench, as
  telemetry reads it, else inherited from optlog's own environment on the local executor; plus the
  spec's `telemetry.gpus`) takes the machine lock *shared* and an exclusive lock per GPU, in sorted
  order (every launch takes its locks in one order, so two cannot deadlock);
- a launch that names no GPU (CPU-only, `CUDA_VISIBLE_DEVICES=""`, or a command that sees every GPU)
  takes the machine lock *exclusively*: it waits for every other launch on the target, GPU ones too.

GPUs named by UUID or MIG id are mapped to their NVML index on the local machine where NVML can be
read (so `GPU-…` and `1` are one GPU); elsewhere they are locked by the name given.

Each lock is an `fcntl.flock` on a file in two places:

    <workspace>/.optlog/locks/<target>[.gpu-<i>].lock     launches of this workspace (any machine on
                                                          a shared file system)
    $XDG_RUNTIME_DIR/optlog/locks/<target>[.gpu-<i>].lock every workspace of this user on this
    (else /tmp/optlog-<uid>/locks/)                        machine (two workspaces share one CPU)

A second launch that needs a lock held by another waits, saying on stderr which launch holds it;
with `--allow-concurrent` it runs alongside instead, and every run of either launch that overlapped
the other is labelled `concurrent=true` (see `optlog.core.labels.CONCURRENT`), which verdicts treat
as not comparable unless a prediction selects on that label. Overlap is known from a registry next
to each lock: every running launch holds a flock on its own file in `<target>.d/` (naming its GPU
set), and a launch that joins alongside appends a line to `<target>.joins`; a run overlapped
another launch when, at its start or end, a launch whose set meets its own was alive, or such a
launch joined while it ran. Launches on disjoint GPU sets do not overlap. flock is released by the
kernel when a process dies, so a kill -9 never leaves a stale lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from optlog import settings
from optlog.core.timeutil import fmt_elapsed
from optlog.needs import Files
from optlog.runs.executors import registry as executor_registry
from optlog.telemetry.nvml import load_pynvml, select_devices
from optlog.core import jsondoc

CVD = "CUDA_VISIBLE_DEVICES"
_GPU_TOKEN = re.compile(r"^(\d+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Za-z/-]+)$")


def target_of(executor: Any) -> str | None:
    """The lock target of a spec's executor (None: no lock, the scheduler allocates): its kind's
    lock key (optlog.runs.executors)."""
    return executor_registry.lock_target(executor)


def visible_devices(value: str) -> list[str]:
    """The GPU names in a CUDA_VISIBLE_DEVICES value, as CUDA reads it: up to the first entry that
    names no device ("" and "-1": none)."""
    out: list[str] = []
    for t in value.split(","):
        t = t.strip()
        if not _GPU_TOKEN.match(t):
            break
        out.append(t)
    return out


def point_gpus(rendered: Mapping[str, Any], inherited: Mapping[str, str] | None = None) -> list[str] | None:
    """The GPUs one rendered point uses: its server's CUDA_VISIBLE_DEVICES (with no server, the
    bench's; else `inherited`, optlog's own environment), plus the spec's `telemetry.gpus` (the GPUs
    it says it uses); None when it names none (it may use every GPU, or none: the whole machine)."""
    srv = rendered.get("server") or None
    env = dict((srv or rendered.get("bench") or {}).get("env") or {})
    out: list[str] = []
    value = env.get(CVD, (inherited or {}).get(CVD))
    if value is not None:
        out = visible_devices(str(value))
    tel = rendered.get("telemetry")
    if isinstance(tel, dict) and tel.get("gpus") not in (None, "", []):
        g = tel["gpus"]
        out += [t for t in (visible_devices(g) if isinstance(g, str) else [str(x).strip() for x in g]) if t not in out]
    return out or None


def _index_key(t: str) -> tuple[int, int | str]:
    return (0, int(t)) if t.isdigit() else (1, t)


def _by_index(tokens: list[str]) -> list[str]:
    """UUID and MIG names mapped to their GPU's NVML index where NVML can be read here; the rest as given."""
    if all(t.isdigit() for t in tokens):
        return tokens
    try:
        nv = load_pynvml()
        nv.nvmlInit()
        try:
            out = []
            for t in tokens:
                devs = select_devices(nv, gpus=t) if not t.isdigit() else []
                out.append(str(devs[0].index) if devs else t)
            return out
        finally:
            try:
                nv.nvmlShutdown()
            except Exception:
                pass
    except Exception:
        return tokens


def launch_gpus(points: Sequence[Mapping[str, Any]], executor: Any,
                inherited: Mapping[str, str] | None = None) -> list[str] | None:
    """The GPU set of a launch (sorted, indices first), or None when any point names no GPU."""
    local = executor_registry.on_this_machine(executor)
    env = (settings.environ() if inherited is None else inherited) if local else {}
    found: set[str] = set()
    for p in points:
        g = point_gpus(p.get("rendered") or {}, env)
        if g is None:
            return None
        found |= set(g)
    if not found:
        return None
    tokens = _by_index(sorted(found, key=_index_key)) if local else sorted(found, key=_index_key)
    return sorted(set(tokens), key=_index_key)


def host_dir() -> Path:
    run = settings.environ().get("XDG_RUNTIME_DIR")
    base = Path(run) / "optlog" if run and os.path.isdir(run) else Path("/tmp") / f"optlog-{os.getuid()}"
    return base / "locks"


def _safe(target: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", target)


def _holder(path: Path) -> dict[str, Any]:
    try:
        return jsondoc.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


def _gpus_text(gpus: list[str] | None) -> str:
    return "the whole machine" if gpus is None else ("GPU " if len(gpus) == 1 else "GPUs ") + ",".join(gpus)


def _describe(h: dict[str, Any]) -> str:
    if not h:
        return "another launch"
    since = h.get("since")
    held = f", running {fmt_elapsed(time.time() - since)}" if isinstance(since, (int, float)) else ""
    return f"launch L{h.get('launch')} of {h.get('workspace')} (pid {h.get('pid')}, {_gpus_text(h.get('gpus'))}{held})"


def meets(a: list[str] | None, b: list[str] | None) -> bool:
    """Whether launches on GPU sets `a` and `b` disturb each other (None: the whole machine)."""
    return a is None or b is None or bool(set(a) & set(b))


class TargetLock:
    """The locks of one launch on its target (the machine, or its GPU set), and the registry that
    tells overlapping runs."""

    def __init__(self, target: str, dirs: list[Path], me: dict[str, Any], gpus: list[str] | None = None) -> None:
        self.target = target
        self.dirs = dirs
        self.gpus = gpus
        self.me = {**me, "gpus": gpus, "since": time.time()}  # since: when it took the target (waiters say)
        self.fds: list[tuple[int, bool]] = []  # (fd, exclusive)
        self.reg: list[tuple[int, Path]] = []
        self.concurrent = False  # started alongside another launch (--allow-concurrent)

    @property
    def what(self) -> str:
        return self.target if self.gpus is None else f"{self.target} {_gpus_text(self.gpus)}"

    def _plan(self) -> list[tuple[str, bool, str]]:
        """(lock file name, exclusive, what it guards), in the one order every launch takes them."""
        base = _safe(self.target)
        if self.gpus is None:
            return [(f"{base}.lock", True, self.target)]
        return [(f"{base}.lock", False, self.target)] + [
            (f"{base}.gpu-{_safe(g)}.lock", True, f"{self.target} GPU {g}") for g in self.gpus]

    # ---------------------------------------------------------------- acquire / release
    def acquire(self, *, allow_concurrent: bool, say: Callable[[str], None],
                check_cancel: Callable[[], None], poll_s: float = 0.2,
                on_wait: Callable[[str | None], None] | None = None, repeat_s: float = 10.0) -> None:
        """Take the locks; `on_wait(holder)` when it starts waiting for one, `on_wait(None)` once free.
        While it waits it says again, every `repeat_s`, who holds the lock and for how long it has
        waited (one message and then silence read as a hang: issue 48)."""
        said = False
        t0 = time.monotonic()
        last = 0.0
        for d in self.dirs:
            d.mkdir(parents=True, exist_ok=True)
            for name, exclusive, guards in self._plan():
                path = d / name
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                while True:
                    try:
                        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                        if exclusive:
                            self.me["since"] = time.time()
                            os.ftruncate(fd, 0)
                            os.pwrite(fd, json.dumps(self.me).encode(), 0)
                        self.fds.append((fd, exclusive))
                        break
                    except BlockingIOError:
                        pass
                    holder = self._blocker(path)
                    if allow_concurrent:
                        os.close(fd)
                        if not self.concurrent:
                            say(f"{guards} is in use by {holder}: running alongside it on {self.what} "
                                "(--allow-concurrent); the runs of both are labelled concurrent=true")
                        self.concurrent = True
                        break
                    if not said:
                        say(f"waiting: {guards} is in use by {holder}; this launch on {self.what} starts "
                            "when it ends (--allow-concurrent runs alongside, its runs labelled concurrent)")
                        said = True
                        t0 = last = time.monotonic()
                        if on_wait is not None:
                            on_wait(holder)
                    elif time.monotonic() - last >= repeat_s:
                        last = time.monotonic()
                        say(f"still waiting ({fmt_elapsed(last - t0)}): {guards} is in use by {holder}")
                    try:
                        check_cancel()
                    except BaseException:
                        os.close(fd)
                        raise
                    time.sleep(poll_s)
        if said:
            say(f"{self.what} is free after {fmt_elapsed(time.monotonic() - t0)}: starting")
            if on_wait is not None:
                on_wait(None)
        self.me["since"] = time.time()
        self._register()

    def busy(self) -> str | None:
        """Who this launch would wait for now (the running launches its target meets, other than
        itself), without taking or disturbing any lock; None when the target is free."""
        others = [o for o in self._others_alive()
                  if (o.get("launch"), o.get("workspace")) != (self.me.get("launch"), self.me.get("workspace"))]
        return ", ".join(_describe(o) for o in others) if others else None

    def _blocker(self, path: Path) -> str:
        """Who holds the lock at `path`: its exclusive holder, else the running launches it meets."""
        others = self._others_alive()  # alive for sure (their registry files are locked)
        if others:
            return ", ".join(_describe(o) for o in others)
        return _describe(_holder(path))

    def _register(self) -> None:
        for d in self.dirs:
            rd = d / f"{_safe(self.target)}.d"
            rd.mkdir(parents=True, exist_ok=True)
            path = rd / f"{os.getpid()}-{self.me.get('launch')}-{time.monotonic_ns()}.json"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps(self.me).encode())
            self.reg.append((fd, path))
            if self.concurrent:
                with open(d / f"{_safe(self.target)}.joins", "a", encoding="utf-8") as f:
                    f.write(json.dumps(self.me) + "\n")

    def release(self) -> None:
        for fd, path in self.reg:
            try:
                path.unlink()
            except OSError:
                pass
            os.close(fd)
        self.reg = []
        for fd, exclusive in self.fds:
            try:
                if exclusive:
                    os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self.fds = []

    # ---------------------------------------------------------------- overlap
    def _others_alive(self) -> list[dict[str, Any]]:
        """The other running launches on this target whose GPU set meets this one's."""
        mine = {p for _, p in self.reg}
        out: list[dict[str, Any]] = []
        for d in self.dirs:
            rd = d / f"{_safe(self.target)}.d"
            try:
                names = list(rd.iterdir())
            except OSError:
                continue
            for p in names:
                if p in mine:
                    continue
                try:
                    fd = os.open(p, os.O_RDONLY)
                except OSError:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    h = _holder(p)  # held: that launch is running
                    if meets(self.gpus, h.get("gpus") if h else None):
                        out.append(h)
                else:
                    try:  # nobody holds it: a leftover of a launch that died
                        p.unlink()
                    except OSError:
                        pass
                finally:
                    os.close(fd)
        return out

    def _joins(self) -> int:
        """How many launches whose GPU set meets this one's joined alongside another, so far."""
        n = 0
        for d in self.dirs:
            try:
                lines = (d / f"{_safe(self.target)}.joins").read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            for line in lines:
                try:
                    h = jsondoc.loads(line)
                except ValueError:
                    h = {}
                if h != self.me and meets(self.gpus, h.get("gpus") if isinstance(h, dict) else None):
                    n += 1
        return n

    def snapshot(self) -> tuple[bool, int]:
        """Taken when a run starts."""
        return bool(self._others_alive()), self._joins()

    def overlapped(self, snap: tuple[bool, int]) -> bool:
        """Whether another launch ran on this target (on GPUs this one uses) at some point since `snapshot`."""
        alive0, joins0 = snap
        return alive0 or self._joins() != joins0 or bool(self._others_alive())


def open_lock(ctx: Files, executor: Any, launch_id: int,
              points: Sequence[Mapping[str, Any]] = ()) -> TargetLock | None:
    """The lock of launch `launch_id` on its target: its points' GPU set (see `launch_gpus`), else
    the whole machine."""
    target = target_of(executor)
    if target is None:
        return None
    gpus = launch_gpus(points, executor) if points else None
    me = {"launch": launch_id, "workspace": str(ctx.ws.root), "pid": os.getpid(), "host": socket.gethostname()}
    return TargetLock(target, [ctx.ws.state_dir / "locks", host_dir()], me, gpus)
