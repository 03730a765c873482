"""Telemetry benchmarks.

    python bench/telemetry_bench.py storage        # bytes per stored value, 1M-sample ingest time (here)
    python bench/telemetry_bench.py sampler        # on a GPU machine: NVML call costs at 10 Hz spacing and
                                                   # the sampler's CPU per sample per GPU, by GPM window

storage: 1,000,000 samples (values) = 8 GPUs × 12,500 ticks × 10 fields of realistic series (noisy power,
stepped clocks, constant limit), written through telemetry.store into a fresh SQLite file; the file size
over the values gives bytes per value (DB overhead included); ingest = columns() + write + commit.
Baseline in the same run: the same values as one row per value in a plain (run, gpu, field, t, value)
table — the naive layout.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np


def _samples(ngpu: int, nt: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(1)
    t0 = 1.8e9
    out = []
    power = 300 + 250 * (np.sin(np.arange(nt) / 200.0) > 0) + rng.normal(0, 15, (ngpu, nt))
    for i in range(nt):
        t = t0 + i * 0.1 + rng.normal(0, 0.002)
        for g in range(ngpu):
            out.append({"t": t, "gpu": g, "uuid": f"GPU-{g:08x}", "gpu_power_w": float(power[g, i]),
                        "gpu_power_frac": float(power[g, i] / 700), "gpu_power_limit_w": 700.0,
                        "gpu_util": float(100 if power[g, i] > 400 else 0), "sm_clock_mhz": 1980.0 if i % 50 else 1755.0,
                        "mem_used_gib": 80.5, "gpu_temp_c": float(40 + i // 1000), "throttle": 4 if power[g, i] > 600 else 0,
                        "tensor_active": float(rng.uniform(0, 90)), "dram_bw_util": float(rng.uniform(0, 90))})
    return out


def storage(repeats: int = 3) -> dict[str, Any]:
    from sqlalchemy import create_engine, text
    from sqlmodel import Session, SQLModel

    from optlog.store import models  # noqa: F401 - registers the tables
    from optlog.telemetry.store import columns, read_columns, write_columns

    ngpu, nt = 8, 12_500
    samples = _samples(ngpu, nt)
    nvalues = ngpu * nt * 10  # 10 value fields per sample (t not counted)
    ingest, ingest_cpu, naive, sizes, naive_sizes = [], [], [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as d:
            eng = create_engine(f"sqlite:///{d}/t.db")
            SQLModel.metadata.create_all(eng)
            t0, c0 = time.perf_counter(), time.process_time()
            cols = columns(samples)
            with Session(eng) as s:
                write_columns(s, cols, run_id=1, launch_id=1)
                s.commit()
            ingest.append(time.perf_counter() - t0)
            ingest_cpu.append(time.process_time() - c0)
            eng.dispose()
            sizes.append(os.path.getsize(f"{d}/t.db"))
            eng = create_engine(f"sqlite:///{d}/t.db")
            with Session(eng) as s:
                back = read_columns(s, run_id=1)
            g0 = back["GPU-00000000"]
            assert len(g0["_t"]) == nt and abs(g0["gpu_power_w"][5] - samples[5 * ngpu]["gpu_power_w"]) < 1e-3
            eng.dispose()
            if naive:
                continue
            # baseline (once: it is slow): one row per value
            eng2 = create_engine(f"sqlite:///{d}/naive.db")
            with eng2.begin() as c:
                c.execute(text("CREATE TABLE v (run INTEGER, gpu TEXT, field TEXT, t REAL, value REAL)"))
            keys = [k for k in samples[0] if k not in ("t", "gpu", "uuid")]
            t0 = time.perf_counter()
            rows = [{"r": 1, "g": s_["uuid"], "f": k, "t": s_["t"], "v": s_[k]} for s_ in samples for k in keys]
            with eng2.begin() as c:
                c.execute(text("INSERT INTO v VALUES (:r, :g, :f, :t, :v)"), rows)
            naive.append(time.perf_counter() - t0)
            eng2.dispose()
            naive_sizes.append(os.path.getsize(f"{d}/naive.db"))
    res = {"values": nvalues, "samples": ngpu * nt, "bytes_per_value": statistics.median(sizes) / nvalues,
           "ingest_s_per_1M_values": statistics.median(ingest) / nvalues * 1e6,
           "ingest_s_runs": ingest, "ingest_cpu_s_per_1M_values": statistics.median(ingest_cpu) / nvalues * 1e6,
           "naive_bytes_per_value": statistics.median(naive_sizes) / nvalues,
           "naive_ingest_s_per_1M_values": statistics.median(naive) / nvalues * 1e6}
    res["ratio_bytes_naive_over_chunks"] = res["naive_bytes_per_value"] / res["bytes_per_value"]
    res["ratio_ingest_naive_over_chunks"] = res["naive_ingest_s_per_1M_values"] / res["ingest_s_per_1M_values"]
    return res


def sampler(seconds: float = 5.0) -> dict[str, Any]:
    """NVML call costs when called once per 100 ms (as the sampler does; a tight loop hits driver caches)
    and the sampler's CPU per sample per GPU by configuration."""
    import pynvml as N

    from optlog.telemetry import nvml as M

    out: dict[str, Any] = {}
    if os.environ.get("OPTLOG_FAKE_NVML"):  # a smoke test of this script without a GPU: no call costs
        return _sampler_configs(M, seconds, out)
    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(0)
    calls = {
        "nvmlDeviceGetPowerUsage": lambda: N.nvmlDeviceGetPowerUsage(h),
        "fieldValues[power instant]": lambda: N.nvmlDeviceGetFieldValues(h, [M.FI_POWER_INSTANT]),
        "fieldValues[hbm temp]": lambda: N.nvmlDeviceGetFieldValues(h, [M.FI_MEMORY_TEMP]),
        "nvmlDeviceGetUtilizationRates": lambda: N.nvmlDeviceGetUtilizationRates(h),
        "nvmlDeviceGetClockInfo(SM)": lambda: N.nvmlDeviceGetClockInfo(h, 1),
        "nvmlDeviceGetClockInfo(MEM)": lambda: N.nvmlDeviceGetClockInfo(h, 2),
        "nvmlDeviceGetMemoryInfo": lambda: N.nvmlDeviceGetMemoryInfo(h),
        "nvmlDeviceGetTemperatureV": lambda: N.nvmlDeviceGetTemperatureV(h, 0),
        "nvmlDeviceGetCurrentClocksEventReasons": lambda: N.nvmlDeviceGetCurrentClocksEventReasons(h),
        "nvmlDeviceGetTotalEnergyConsumption": lambda: N.nvmlDeviceGetTotalEnergyConsumption(h),
    }
    per: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(20):
        for k, fn in calls.items():
            c0 = time.thread_time()
            fn()
            per[k].append(time.thread_time() - c0)
        time.sleep(0.1)
    out["call_cpu_us_at_10hz"] = {k: statistics.median(v) * 1e6 for k, v in per.items()}
    N.nvmlShutdown()
    return _sampler_configs(M, seconds, out)


def _run_config(M: Any, seconds: float, iv: float, gi: float | None, drain: float, slow: float, energy: float,
                gpus: str | None) -> dict[str, Any]:
    s = M.NvmlSampler(interval_s=iv, env={}, gpus=gpus, gpm=gi is not None, gpm_interval_s=gi or 1.0,
                      power_drain_s=drain, slow_every_s=slow, energy_every_s=energy)
    devs = s.open()
    visible = s.nv.nvmlDeviceGetCount()
    n, cpu, emitted, powered = 0, 0.0, 0, 0
    t_end = time.monotonic() + seconds
    nxt = time.monotonic()
    while time.monotonic() < t_end:
        c0 = time.thread_time()
        got = s.sample()
        cpu += time.thread_time() - c0
        emitted += len(got)
        powered += sum(1 for r in got if "gpu_power_w" in r)
        n += 1
        nxt += iv
        time.sleep(max(0.0, nxt - time.monotonic()))
    c0 = time.thread_time()
    tail = s.flush()
    cpu += time.thread_time() - c0
    emitted += len(tail)
    powered += sum(1 for r in tail if "gpu_power_w" in r)
    s.close()
    return {"gpus": len(devs), "visible_gpus": visible, "ticks": n, "samples": emitted, "with_power": powered,
            "cpu_us_per_tick": cpu / n * 1e6, "cpu_us_per_sample_per_gpu": cpu / n / len(devs) * 1e6}


def _sampler_configs(M: Any, seconds: float, out: dict[str, Any]) -> dict[str, Any]:
    # (label, interval, GPM window or None, power_drain_s (0 = poll the instant field), slow_every_s)
    # (label, interval, GPM window or None, power_drain_s (0 = poll the instant field), slow_every_s, energy_every_s)
    cfgs = [("10 Hz, poll instant power, GPM 2 s, slow fields 1 s, energy 30 s (previous design)", 0.1, 2.0, 0.0, 1.0, 30.0),
            ("10 Hz, power buffer drained every 2 s, GPM 5 s, slow fields 2 s, energy 60 s", 0.1, 5.0, 2.0, 2.0, 60.0),
            ("10 Hz, power buffer drained every 2 s, GPM 10 s, slow fields 2 s, energy 60 s", 0.1, 10.0, 2.0, 2.0, 60.0)]
    only = os.environ.get("OPTLOG_BENCH_ONLY")  # a substring: run just the matching configurations
    if only:
        cfgs = [c for c in cfgs if only in c[0]]
    res: dict[str, Any] = {}
    for label, iv, gi, drain, slow, energy in cfgs:
        one = _run_config(M, seconds, iv, gi, drain, slow, energy, gpus="0")
        row: dict[str, Any] = {"one_gpu": one}
        if one["visible_gpus"] > 1:
            # one tick wakes the thread once and reads every GPU: the first GPU pays the wake-up (cold
            # caches, the driver's first call), each further GPU only its marginal cost. Measure both.
            alln = _run_config(M, seconds, iv, gi, drain, slow, energy, gpus=None)
            marg = (alln["cpu_us_per_tick"] - one["cpu_us_per_tick"]) / (alln["gpus"] - 1)
            row["all_gpus"] = alln
            row["marginal_cpu_us_per_gpu_per_tick"] = marg
            row["cpu_pct_one_core_8gpus"] = (one["cpu_us_per_tick"] + 7 * marg) / 1e6 / iv * 100
        row["cpu_pct_one_core_8gpus_naive"] = one["cpu_us_per_tick"] * 8 / 1e6 / iv * 100  # 8 × the lone GPU's cost
        # the energy counter is read every `energy` s (longer than a config's window, so maybe never in
        # it): its measured call cost, spread over the ticks between two reads, is added per GPU
        e_us = out.get("call_cpu_us_at_10hz", {}).get("nvmlDeviceGetTotalEnergyConsumption")
        if e_us is not None and "cpu_pct_one_core_8gpus" in row:
            row["energy_us_per_gpu_per_tick"] = e_us * iv / energy
            row["cpu_pct_one_core_8gpus_incl_energy"] = row["cpu_pct_one_core_8gpus"] + 8 * e_us / energy / 1e6 * 100
        res[label] = row
    out["sampler"] = res
    return out


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--load"]
    what = args[0] if args else "storage"
    t0 = time.time()
    load = None
    if "--load" in sys.argv:  # the sampler's cost with the GPU busy (driver calls may cost more)
        import subprocess
        code = ("import torch\na=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16)\n"
                "while True:\n    a@a\n    torch.cuda.synchronize()\n")
        load = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(5)
    try:
        res = storage() if what == "storage" else sampler(float(args[1]) if len(args) > 1 else 5.0)
    finally:
        if load is not None:
            load.kill()
            load.wait()
    if load is not None:
        res["load"] = "bf16 8192x8192 matmul loop on GPU 0 throughout"
    res["wall_s"] = time.time() - t0
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
