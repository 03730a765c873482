"""Measure this machine's ceilings: dense matmul TFLOP/s per dtype and device-memory bandwidth (PyTorch on
a GPU; NumPy on the CPU otherwise), and with several GPUs the GPU-to-GPU copy bandwidth matrix and the
NCCL allreduce bus bandwidth (one subprocess per GPU, torch.distributed).

Every figure is a median over timed batches after warm-up, on random data; and each figure is
measured as several **trials** (one warm-up trial thrown away, then 3 with --quick or 5): a high
quantile of the trials is the figure (`QUANTILE`: a peak is what the idle machine reaches), its spread
((max − min) / median) is the uncertainty said with it, and the spread of the upper half of the trials
says whether the machine was busy throughout (service.calibrate refuses to store a wide one). The host's thread count and load
average before and after are recorded with it: a busy machine measures a lower ceiling (one CPU
calibration gave 0.018 TF/s fp32 where one idle thread reaches 0.15). `measure()` returns a dict;
service.calibrate writes it into optlog.yaml.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from optlog import settings
from optlog.core.numfmt import fmt_sig
from optlog.probes import gemm as probe
from optlog.telemetry.nvml import NvmlSampler
from optlog.core import jsondoc


def kind_name(device_name: str) -> str:
    """'NVIDIA H200' → 'h200'; 'NVIDIA RTX PRO 6000 Blackwell …' → 'rtx-pro-6000-blackwell-…'."""
    s = re.sub(r"^(nvidia|amd)\s+", "", device_name.strip(), flags=re.I).lower()
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"


def _ns(**kw: Any) -> argparse.Namespace:
    d = dict(m=4096, k=4096, n=4096, dtype="bf16", iters=0, repeats=10, warmup=3, min_time_s=0.0, device="auto",
             copy_bytes=0)
    d.update(kw)
    return argparse.Namespace(**d)


QUANTILE = 0.9
"""A ceiling is a high quantile of its trials, not their median: a peak is what the machine reaches when
nothing else runs, and a trial slowed by a neighbour (a build, another helper's tests) only says the
machine was busy then (issue 43: one low trial of five refused a figure at load 0.4 on 16 cores)."""


def quantile(vals: list[float], q: float) -> float:
    """The `q` quantile of `vals`, linear between the two nearest (numpy's default)."""
    v = sorted(vals)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def trials(fn: Any, n: int, warmup: int = 1) -> dict[str, Any]:
    """Call `fn` (returning one rate) `warmup` times unrecorded, then `n` times: the figure (the
    `QUANTILE` quantile), median, min, max, spread ((max − min) / median: the uncertainty said with the
    figure) and `upper_spread`, the spread of the upper half of the trials (those at or above the
    median) relative to the figure: wide only when even the best trials disagree, i.e. the machine was
    busy throughout (`service.calibrate.refusals` reads it)."""
    for _ in range(warmup):
        fn()
    vals = [float(fn()) for _ in range(n)]
    return summarize_trials(vals)


def summarize_trials(vals: list[float]) -> dict[str, Any]:
    """`trials`' summary of measured rates (pure; tests give it trials a busy machine would give)."""
    med = statistics.median(vals)
    fig = quantile(vals, QUANTILE)
    upper = [v for v in vals if v >= med]
    return {"figure": fig, "quantile": QUANTILE, "median": med, "min": min(vals), "max": max(vals), "n": len(vals),
            "spread": (max(vals) - min(vals)) / med if med > 0 else float("inf"),
            "upper_spread": (max(upper) - min(upper)) / fig if fig > 0 else float("inf"), "values": vals}


def _threads(torch: Any) -> int | None:
    if torch is not None:
        try:
            return int(torch.get_num_threads())
        except Exception:
            pass
    try:
        from threadpoolctl import threadpool_info  # deferred: optional, not a dependency

        n = [int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"]
        if n:
            return max(n)
    except Exception:
        pass
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if settings.environ().get(k, "").isdigit():
            return int(settings.environ()[k])
    return os.cpu_count()


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def measure(quick: bool = False, device: str = "auto", multi: bool = True) -> dict[str, Any]:
    torch = probe.cuda_torch() if device in ("auto", "cuda") else None
    if device == "cuda" and torch is None:
        raise RuntimeError("--device cuda: PyTorch with a CUDA GPU is not available here")
    before = _load()
    out = _measure_gpu(torch, quick, multi) if torch is not None else _measure_cpu(quick)
    out["host"] = {"threads": _threads(torch), "cpus": os.cpu_count(), "load_1m_before": before,
                   "load_1m_after": _load()}
    return out


def _measure_gpu(torch: Any, quick: bool, multi: bool) -> dict[str, Any]:
    name = torch.cuda.get_device_name(0)
    count = torch.cuda.device_count()
    size = 4096 if quick else 8192
    peaks: dict[str, float] = {}
    spread: dict[str, Any] = {}
    n = 3 if quick else 5
    missing: dict[str, str] = {}
    for dt in ("bf16", "fp16", "tf32", "fp32", "fp8", "int8"):
        try:
            t = trials(lambda dt=dt: probe.run_gpu(_ns(m=size, k=size, n=size, dtype=dt, repeats=5 if quick else 10),
                                                   torch)["tflops"], n)
        except Exception as e:  # fp8/int8 where the device or PyTorch lacks them: said missing, not guessed
            if dt in ("fp8", "int8"):
                missing[dt] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
                continue
            raise
        peaks[dt] = round(t["figure"], 1)
        spread[f"peak_tflops.{dt}"] = t
    cb = (1 << 30) if quick else (4 << 30)
    t = trials(lambda: probe.run_gpu(_ns(copy_bytes=cb, repeats=5 if quick else 10), torch)["gbps"], n)
    spread["mem_bw_gbps"] = t
    out: dict[str, Any] = {"kind": kind_name(name), "device": name, "count": count, "backend": "torch",
                           "peak_tflops": peaks, "mem_bw_gbps": round(t["figure"], 1), "spread": spread,
                           "mem_bw_method": f"device copy of {cb >> 20} MiB, bytes read + written"}
    if missing:
        out["peak_missing"] = missing
    try:
        out.update(dram_counter_scale(lambda: probe.run_gpu(_ns(copy_bytes=cb, repeats=5 if quick else 10), torch)["gbps"]))
    except Exception as e:  # a GPU without GPM, or GPM held by a profiler: the diagnosis falls back to the datasheet
        out["dram_counter_error"] = f"{type(e).__name__}: {e}"
    if count > 1 and multi:
        out["p2p_gbps"] = p2p_matrix(torch, count, (256 << 20) if quick else (1 << 30))
        out.update(link_ceiling(out["p2p_gbps"]))
        try:
            out["allreduce_busbw_gbps"] = allreduce_busbw(count, (64 << 20) if quick else (1 << 30))
        except Exception as e:  # report, do not fail the whole calibration
            out["allreduce_error"] = str(e)
    return out


def dram_counter_scale(copy: Any, min_s: float = 1.0) -> dict[str, Any]:
    """What GPM's `dram_bw_util` reads while the device copy runs at the calibrated rate: the counter is a
    share of the memory's theoretical bandwidth, so `copy GB/s / (counter / 100)` is the bandwidth the
    counter calls 100 % (`dram_counter_full_gbps`, about 4.85 TB/s on an H200 whose copy reaches
    4.26). The diagnosis puts the counter on the calibrated scale with it (issue 30)."""
    s = NvmlSampler(env=dict(settings.environ()), interval_s=0.1, gpm=True, gpm_interval_s=0.1)
    s.open()
    try:
        s.sample(time.time(), flush=True)
        rates = []
        t0 = time.time()
        while time.time() - t0 < min_s:
            rates.append(float(copy()))
        got = s.sample(time.time(), flush=True) + s.flush()
    finally:
        s.close()
    dram = [float(x["dram_bw_util"]) for x in got if x.get("dram_bw_util") is not None and x.get("gpu") in (0, "0", None)]
    dram = dram or [float(x["dram_bw_util"]) for x in got if x.get("dram_bw_util") is not None]
    if not dram or not rates or max(dram) <= 0:
        raise RuntimeError("no GPM dram_bw_util reading during the copy")
    pct, gbps = max(dram), statistics.median(rates)
    return {"dram_counter_full_gbps": round(gbps / (pct / 100.0), 1), "dram_counter_copy_pct": round(pct, 1),
            "dram_counter_method": f"GPM dram_bw_util {fmt_sig(pct)}% during the device copy at {fmt_sig(gbps)} GB/s"}


def p2p_matrix(torch: Any, n: int, nbytes: int) -> list[list[float | None]]:
    """GB/s of a copy from GPU i (row) to GPU j (column); the diagonal is the device's own copy rate."""
    mat: list[list[float | None]] = []
    for i in range(n):
        row: list[float | None] = []
        for j in range(n):
            src = torch.rand(nbytes // 4, device=f"cuda:{i}")
            dst = torch.empty(nbytes // 4, device=f"cuda:{j}")
            for _ in range(2):
                dst.copy_(src, non_blocking=True)
            torch.cuda.synchronize(i)
            torch.cuda.synchronize(j)
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                dst.copy_(src, non_blocking=True)
                torch.cuda.synchronize(i)
                torch.cuda.synchronize(j)
                times.append(time.perf_counter() - t0)
            times.sort()
            row.append(round(nbytes / times[len(times) // 2] / 1e9, 1))
            del src, dst
        mat.append(row)
    return mat


def link_ceiling(p2p: list[list[float | None]]) -> dict[str, Any]:
    """The link bandwidth a diagnosis holds a GPU's link counters against (issue 43): the fastest
    peer-to-peer copy between two GPUs, per direction (an i → j copy loads i's transmit and j's receive
    side; the matrix has both directions of every pair). A peak, so the fastest pair (a slower one sits
    behind a switch or across sockets: said in the method). {} with fewer than two GPUs."""
    pairs = [(i, j, v) for i, row in enumerate(p2p) for j, v in enumerate(row) if i != j and v]
    if not pairs:
        return {}
    i, j, best = max(pairs, key=lambda x: x[2])
    slow = min(v for _, _, v in pairs)
    return {"link_gbps": float(best),
            "link_method": (f"peer-to-peer copy GPU {i} → GPU {j} at {fmt_sig(best)} GB/s, the fastest of "
                            f"{len(pairs)} directed pairs (slowest {fmt_sig(slow)} GB/s)")}


def allreduce_busbw(n: int, nbytes: int) -> float:
    """NCCL allreduce bus bandwidth (nccl-tests' definition: algbw × 2(n−1)/n), one process per GPU."""
    env = dict(settings.environ())
    env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + os.getpid() % 1000), WORLD_SIZE=str(n))
    with tempfile.TemporaryDirectory() as d:
        procs = []
        for r in range(n):
            e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
            procs.append(subprocess.Popen([sys.executable, "-P", "-m", "optlog.telemetry.calibrate", "--allreduce-worker",
                                           str(nbytes), os.path.join(d, f"r{r}.json")], env=e))
        rcs = [p.wait(timeout=300) for p in procs]
        if any(rcs):
            raise RuntimeError(f"allreduce workers exited {rcs}")
        with open(os.path.join(d, "r0.json")) as f:
            return float(jsondoc.loads(f.read())["busbw_gbps"])


def _allreduce_worker(nbytes: int, out_path: str) -> None:
    import torch  # deferred: optional, and seconds to import
    import torch.distributed as dist  # deferred: optional, and seconds to import

    rank = int(settings.environ()["RANK"])
    n = int(settings.environ()["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=n, device_id=torch.device(f"cuda:{rank}"))
    x = torch.ones(nbytes // 2, dtype=torch.bfloat16, device=f"cuda:{rank}")
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    x.fill_(1.0)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    ok = bool(torch.all(x == float(n)).item())
    times = []
    for _ in range(10):
        dist.barrier()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dist.all_reduce(x)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1000.0)
    times.sort()
    t = times[len(times) // 2]
    algbw = nbytes / t / 1e9
    res = {"rank": rank, "bytes": nbytes, "time_s": t, "algbw_gbps": algbw, "busbw_gbps": round(algbw * 2 * (n - 1) / n, 1),
           "sum_correct": ok}
    with open(out_path, "w") as f:
        json.dump(res, f)
    dist.destroy_process_group()


def _measure_cpu(quick: bool) -> dict[str, Any]:
    # 1024³ even when quick: at 512³ one product is ~2 ms and thread start-up and timer noise dominate
    size = 1024 if quick else 1536
    n = 3 if quick else 5
    peaks: dict[str, float] = {}
    spread: dict[str, Any] = {}
    for dt in ("fp32", "fp64"):
        t = trials(lambda dt=dt: probe.run_cpu(_ns(m=size, k=size, n=size, dtype=dt, repeats=3, warmup=1))["tflops"], n)
        peaks[dt] = round(t["figure"], 4)
        spread[f"peak_tflops.{dt}"] = t
    cb = (64 << 20) if quick else (512 << 20)
    t = trials(lambda: probe.run_cpu(_ns(copy_bytes=cb, repeats=3, warmup=1))["gbps"], n)
    spread["mem_bw_gbps"] = t
    return {"kind": "cpu", "device": platform.processor() or platform.machine(), "count": 1, "backend": "numpy",
            "peak_tflops": peaks, "mem_bw_gbps": round(t["figure"], 1), "spread": spread,
            "mem_bw_method": f"memory copy of {cb >> 20} MiB, bytes read + written"}


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--allreduce-worker":
        _allreduce_worker(int(sys.argv[2]), sys.argv[3])
    else:
        print(json.dumps(measure(quick="--quick" in sys.argv)))
