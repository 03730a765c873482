"""Host load and the settings that move numbers, recorded with every launched run.

Load was the dominant factor in an agent's measurements (an M=1 GEMM 4× slower while another launch
ran) and nothing recorded it. Per run, before the bench starts and after it ends:

    load     {"loadavg": [1, 5, 15 min], "busy_cpus": CPUs busy over `window_s` (from /proc/stat),
              "cpus": N}
    gpu_processes  [{"gpu", "pid", "used_mib"}] other processes on the GPUs (NVML compute
              processes; the launch's own processes left out), or {"error"} where NVML is missing
Once per launch host (cached): the CPU frequency governors, the thread variables
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, …), and the versions of numpy, BLAS,
torch and CUDA libraries (importlib.metadata and the wheels' bundled libraries: nothing imported).

`loaded(before, settings, tree)` says whether the run was measured under load, from the run's own
numbers (runs.treeshare): its processes got less than `host_load.min_cpu_share` of the CPU they
asked for, or (with `host_load.gpu_processes`) another process used its GPUs; the machine's busy
CPUs before the run only where `host_load.busy_cpus_fraction` is set (optlog.yaml). The launcher
then labels the run `loaded=true`: a label, so that it is shown
with its numbers (run list/show, compare) and a loaded run is not pooled with quiet ones of the same
group (verdict reasons name it).
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import Any

from optlog.core.loadshare import CPU_SHARE, GPU_OTHER_FRAC, GPU_OTHER_PROCS
from optlog.core.numfmt import fmt_num, fmt_share, fmt_written
from optlog.telemetry.live import cpu_times  # one reader of /proc/stat
from optlog.telemetry.nvml import load_pynvml

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
               "NUMEXPR_NUM_THREADS", "GOTO_NUM_THREADS", "BLIS_NUM_THREADS", "TORCH_NUM_THREADS")
PACKAGES = ("numpy", "scipy", "torch", "mkl", "intel-openmp", "scipy-openblas32", "scipy-openblas64",
            "nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cudnn-cu12", "threadpoolctl")


def snapshot(window_s: float = 0.1) -> dict[str, Any]:
    """Load average and how many CPUs were busy over the next `window_s` seconds."""
    out: dict[str, Any] = {"cpus": os.cpu_count() or 1}
    try:
        out["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    a = cpu_times()
    if a is not None and window_s > 0:
        time.sleep(window_s)
        b = cpu_times()
        if b is not None and b[1] > a[1]:
            out["busy_cpus"] = round((b[0] - a[0]) / (b[1] - a[1]) * out["cpus"], 2)
    return out


def gpu_processes(exclude: Iterable[int] = ()) -> Any:
    """Compute processes on the GPUs other than `exclude` (the launch's own), from NVML."""
    try:
        nv = load_pynvml()
        nv.nvmlInit()
    except Exception as e:
        return {"error": f"NVML unavailable: {type(e).__name__}: {e}"}
    skip = set(exclude)
    out: list[dict[str, Any]] = []
    try:
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            try:
                procs = nv.nvmlDeviceGetComputeRunningProcesses(h)
            except Exception:
                continue
            for p in procs:
                if p.pid in skip:
                    continue
                mem = getattr(p, "usedGpuMemory", None)
                out.append({"gpu": i, "pid": int(p.pid),
                            "used_mib": round(mem / 2**20) if isinstance(mem, (int, float)) else None})
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:
            pass
    return out


def governors() -> list[str]:
    """The distinct CPU frequency governors (empty where cpufreq is not exposed)."""
    out: set[str] = set()
    for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"):
        try:
            with open(p, encoding="ascii") as f:
                out.add(f.read().strip())
        except OSError:
            pass
    return sorted(out)


def thread_vars(env: Mapping[str, str]) -> dict[str, str]:
    return {k: str(env[k]) for k in THREAD_VARS if k in env}


def library_versions() -> dict[str, Any]:
    """numpy/BLAS/torch/CUDA library versions of this interpreter, without importing them."""
    pk: dict[str, str] = {}
    for name in PACKAGES:
        try:
            pk[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    blas: list[str] = []
    try:
        dist = metadata.distribution("numpy")
        root = str(dist.locate_file(""))
        for lib in glob.glob(os.path.join(root, "numpy.libs", "*.so*")) + glob.glob(os.path.join(root, "numpy", ".dylibs", "*")):
            base = os.path.basename(lib)
            if any(w in base.lower() for w in ("openblas", "mkl", "blis", "accelerate")):
                blas.append(base)
    except metadata.PackageNotFoundError:
        pass
    out: dict[str, Any] = {"packages": pk}
    if blas:
        out["numpy_blas"] = sorted(blas)
    return out


def host_settings() -> dict[str, Any]:
    """What is the same for every run of a launch on this host (the thread variables are per run)."""
    return {"cpu_governor": governors(), **library_versions()}


def loaded(before: Mapping[str, Any], settings: Any, tree: Mapping[str, float] | None = None) -> list[str]:
    """Why the run counts as measured under load ([] when it does not).

    From the run's own numbers (runs.treeshare) where they were measured: its process tree got less
    than `min_cpu_share` of the CPU time it asked for, or (with `gpu_processes`) another process used
    the run's GPUs while it ran. The machine's busy CPUs before the run count only where
    `busy_cpus_fraction` is set (off by default: on a small shared machine it flagged every run), and
    the GPU processes seen before the run only where the run's own GPU numbers are missing."""
    why: list[str] = []
    tree = tree or {}
    floor = getattr(settings, "min_cpu_share", None)
    share = tree.get(CPU_SHARE)
    if floor is not None and share is not None and share < floor:
        why.append(f"its processes got {fmt_share(share)} of the CPU time they asked for "
                   f"(threshold {fmt_share(floor)})")
    frac = getattr(settings, "busy_cpus_fraction", None)
    load = before.get("load") or {}
    busy, cpus = load.get("busy_cpus"), load.get("cpus") or 1
    if frac is not None and busy is not None and busy > frac * cpus:
        why.append(f"{fmt_num(busy)} of {cpus} CPUs busy before the run (threshold {fmt_written(frac)} × {cpus})")
    if getattr(settings, "gpu_processes", True):
        if tree.get(GPU_OTHER_FRAC) is not None:
            if tree[GPU_OTHER_FRAC] > 0:
                why.append(f"{fmt_num(tree.get(GPU_OTHER_PROCS))} other process(es) on its GPUs during "
                           f"{fmt_share(tree[GPU_OTHER_FRAC])} of the run")
        else:
            gp = before.get("gpu_processes")
            if isinstance(gp, list) and gp:
                why.append(f"{len(gp)} other process(es) on the GPUs: "
                           + ", ".join(f"pid {p['pid']} on GPU {p['gpu']}" for p in gp[:4]))
    return why
