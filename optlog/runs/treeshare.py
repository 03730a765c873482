"""Load as a number (issue 28 item 6): the CPU share a run's own process tree got, and other
processes' use of its GPUs, measured while the run ran.

Why: the machine's load (runs.hostload: busy CPUs before the run) said nothing. On a 2-CPU box
running llama-server every run read "2 of 2 CPUs busy" and was flagged `loaded`, a 19.6 s and an
11.2 s run of the same point alike. What decides whether a number was disturbed is whether the
measured processes got the CPU they asked for, and whether someone else used their GPUs.

While a point runs, a thread samples every process of the launch (the launch token in its
environment: server, bench and their descendants; runs.tree) twice a second, per thread, from
/proc: CPU time (`stat` utime + stime) and the scheduler's run and run-queue wait times
(`schedstat`: nanoseconds on a CPU, and runnable but waiting for one). A task seen first mid-window
counts from zero (it started then). On the run's GPUs (CUDA_VISIBLE_DEVICES of the server or
bench, else every GPU) it asks NVML for the compute processes that are not the launch's.

Run metrics (documented in docs/evidence.md), each a number for the whole point:

    cpu_share          CPU time the tree got / (CPU time it got + time its threads waited,
                       runnable, for a CPU): 1 = never kept waiting; 0.5 = half the CPU it asked
                       for went to someone else. Needs schedstat (Linux with CONFIG_SCHED_INFO).
    cpu_util           CPU time / (wall time × cpu_threads): how much of what it was given it used
                       (a GPU server idles its CPUs: low without any load; a CPU-bound tree whose
                       share is taken reads low too — where both agree, the tree was starved)
    cpu_used           CPU time / wall time (CPUs' worth, on average)
    cpu_threads        the CPUs it was given: its CPU affinity, within its cgroup's CPU quota
    gpu_other_procs    the most processes not of the launch seen at once on the run's GPUs
    gpu_other_mem_mib  the most GPU memory those held at once (MiB)
    gpu_other_frac     the fraction of samples in which any was there

`loaded` (the label) is derived from these (runs.hostload.loaded): a share below
`host_load.min_cpu_share` (0.9) or another process on the run's GPUs. `core.loadshare` says when
two groups of a comparison got clearly different shares.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from optlog.core.loadshare import CPU_SHARE, CPU_THREADS, CPU_USED, CPU_UTIL, GPU_OTHER_FRAC, GPU_OTHER_MEM, GPU_OTHER_PROCS
from optlog.telemetry.nvml import load_pynvml, select_devices

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

Key = tuple[int, int, int]  # (pid, tid, start ticks): a reused tid is another task


def _task(pid: int, tid: int) -> tuple[int, float, int | None, int | None] | None:
    """(start ticks, CPU seconds, run ns, wait ns) of one thread, or None when it is gone."""
    base = f"/proc/{pid}/task/{tid}"
    try:
        with open(base + "/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    rest = data[data.rfind(")") + 2:].split()
    try:
        cpu = (int(rest[11]) + int(rest[12])) / _TICK
        start = int(rest[19])
    except (IndexError, ValueError):
        return None
    run = wait = None
    try:
        with open(base + "/schedstat", "rb") as f:
            parts = f.read().split()
        run, wait = int(parts[0]), int(parts[1])
    except (OSError, IndexError, ValueError):
        pass
    return start, cpu, run, wait


def read_tree(pids: Iterable[int]) -> dict[Key, tuple[float, int | None, int | None]]:
    """Every thread of these processes: (CPU seconds, run ns, wait ns) by (pid, tid, start)."""
    out: dict[Key, tuple[float, int | None, int | None]] = {}
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except (OSError, ValueError):
            continue
        for tid in tids:
            t = _task(pid, tid)
            if t is not None:
                out[(pid, tid, t[0])] = t[1:]
    return out


def _quota(pid: int) -> float | None:
    """CPUs the cgroup v2 quota of `pid` (or of a cgroup above it) allows; None when unlimited."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="ascii", errors="replace") as f:
            path = next((ln.split("::", 1)[1].strip() for ln in f if ln.startswith("0::")), None)
    except OSError:
        return None
    if path is None:
        return None
    best: float | None = None
    parts = [p for p in path.split("/") if p]
    for i in range(len(parts), -1, -1):
        try:
            with open("/sys/fs/cgroup/" + "/".join(parts[:i]) + "/cpu.max", encoding="ascii") as f:
                q, period = f.read().split()[:2]
        except (OSError, ValueError):
            continue
        if q != "max" and float(period) > 0:
            cpus = float(q) / float(period)
            best = cpus if best is None else min(best, cpus)
    return best


def cpus_given(pids: Iterable[int]) -> float | None:
    """The CPUs these processes may run on: their affinity (together), within the cgroup quota."""
    cpus: set[int] = set()
    quota: float | None = None
    for pid in pids:
        try:
            cpus |= os.sched_getaffinity(pid)
        except (OSError, AttributeError):
            continue
        q = _quota(pid)
        quota = q if quota is None else (min(quota, q) if q is not None else quota)
    if not cpus:
        return None
    return float(len(cpus)) if quota is None else min(float(len(cpus)), quota)


class GpuOthers:
    """Compute processes on the run's GPUs that are not the launch's (NVML; the fake one in tests)."""

    def __init__(self, env: dict[str, str] | None) -> None:
        self.nv = load_pynvml()
        self.nv.nvmlInit()
        try:
            self.handles = [d.handle for d in select_devices(self.nv, env)]
        except Exception:
            self.close()
            raise
        self.samples = 0
        self.with_others = 0
        self.most = 0
        self.most_mib = 0.0

    def sample(self, ours: set[int]) -> None:
        seen: dict[int, float] = {}
        for h in self.handles:
            try:
                procs = self.nv.nvmlDeviceGetComputeRunningProcesses(h)
            except Exception:
                continue
            for p in procs:
                if int(p.pid) in ours:
                    continue
                mem = getattr(p, "usedGpuMemory", None)
                seen[int(p.pid)] = seen.get(int(p.pid), 0.0) + (mem / 2**20 if isinstance(mem, (int, float)) else 0.0)
        self.samples += 1
        self.with_others += bool(seen)
        self.most = max(self.most, len(seen))
        self.most_mib = max(self.most_mib, sum(seen.values()))

    def metrics(self) -> dict[str, float]:
        if not self.samples:
            return {}
        return {GPU_OTHER_PROCS: float(self.most), GPU_OTHER_MEM: round(self.most_mib, 1),
                GPU_OTHER_FRAC: round(self.with_others / self.samples, 3)}

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except Exception:
            pass


class TreeLoad:
    """Samples a process tree (`pids()`: the processes to count now) from `start()` to `stop()`."""

    def __init__(self, pids: Callable[[], list[int]], *, gpu_env: dict[str, str] | None = None,
                 gpus: bool = True, interval_s: float = 0.5) -> None:
        self.pids = pids
        self.interval_s = interval_s
        self.first: dict[Key, tuple[float, int | None, int | None]] = {}
        self.last: dict[Key, tuple[float, int | None, int | None]] = {}
        self.all_pids: set[int] = set()
        self.given: float | None = None
        self.gpu: GpuOthers | None = None
        self.gpu_error: str | None = None
        if gpus:
            try:
                self.gpu = GpuOthers(gpu_env)
                if not self.gpu.handles:
                    self.gpu.close()
                    self.gpu = None
            except Exception as e:  # no NVML, no driver, no GPU: CPU numbers only
                self.gpu, self.gpu_error = None, f"{type(e).__name__}: {e}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = self._t1 = 0.0
        self._lock = threading.Lock()

    def _sample(self, initial: bool = False) -> None:
        pids = [p for p in self.pids() if p != os.getpid()]
        now = read_tree(pids)
        with self._lock:
            new = [p for p in pids if p not in self.all_pids]
            self.all_pids.update(pids)
            for k, v in now.items():
                if k not in self.first:
                    # there at the start: counted from here; seen first later: it started in the window
                    self.first[k] = v if initial else (0.0, 0 if v[1] is not None else None, 0 if v[2] is not None else None)
                self.last[k] = v
        if new:
            g = cpus_given(self.all_pids)
            if g is not None:
                self.given = g
        if self.gpu is not None:
            self.gpu.sample(set(self.all_pids) | {os.getpid()})

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._sample()
            except Exception:  # a sampler must never take the run down
                pass

    def start(self) -> "TreeLoad":
        self._t0 = time.monotonic()
        self._sample(initial=True)
        self._thread = threading.Thread(target=self._loop, name="optlog-treeload", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, float]:
        """The run metrics (module docstring) for the window; {} when nothing was measured."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        try:
            self._sample()
        except Exception:
            pass
        self._t1 = time.monotonic()
        if self.gpu is not None:
            self.gpu.close()
        return self.metrics()

    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}
        wall = self._t1 - self._t0
        with self._lock:
            keys = list(self.last)
            cpu = sum(max(0.0, self.last[k][0] - self.first[k][0]) for k in keys)
            sched = [k for k in keys if self.last[k][1] is not None and self.first[k][1] is not None]
            run = sum(max(0, (self.last[k][1] or 0) - (self.first[k][1] or 0)) for k in sched)
            wait = sum(max(0, (self.last[k][2] or 0) - (self.first[k][2] or 0)) for k in sched)
        if keys and wall > 0:
            out[CPU_USED] = round(cpu / wall, 3)
            if self.given:
                out[CPU_THREADS] = round(self.given, 2)
                out[CPU_UTIL] = round(min(1.0, cpu / wall / self.given), 3)
            if run + wait > 0:
                out[CPU_SHARE] = round(run / (run + wait), 3)
        if self.gpu is not None:
            out.update(self.gpu.metrics())
        return out
