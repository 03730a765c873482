"""Which NVML sources can feed a 10 Hz series cheaply? (run on a GPU machine; prints JSON)

    python bench/nvml_sources.py [--seconds 8] [--gpu 0]

Why: polling instantaneous power, utilization, SM clock and clock-event reasons every 100 ms costs
~77 µs of CPU per GPU per tick on an H200 (each call crosses into the driver and, spaced out, misses
its caches). NVML also keeps its own sample buffers (`nvmlDeviceGetSamples`: power, utilization,
clocks) and cumulative clock-event durations (field values), which one read per second could drain.
This measures, under a GPU load that switches on and off every 0.5 s (so a series has something to
follow):

- per buffer type: CPU µs per drain (one call per second), samples returned, spacing of their
  timestamps (is it at least 10 Hz?), and for power how the buffered values track the
  instantaneous-power field read at 10 Hz beside it;
- field-value batches at 100 ms spacing: one field vs many in one call (is the cost per call or per
  field?), the energy field vs `nvmlDeviceGetTotalEnergyConsumption`;
- GPM: `nvmlGpmSampleGet` alone and `nvmlGpmMetricsGet` with 1, 4 and 9 metrics, 1 s apart.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

LOAD = r"""
import sys, time, torch
dev = torch.device("cuda:0")
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    t = time.time()
    while time.time() - t < 0.5:
        a @ b
    torch.cuda.synchronize()
    time.sleep(0.5)
"""


def cpu_us(fn: Callable[[], Any]) -> tuple[float, Any]:
    c0 = time.thread_time_ns()
    r = fn()
    return (time.thread_time_ns() - c0) / 1000.0, r


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--gpu", type=int, default=0)
    a = ap.parse_args()
    import pynvml as N

    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(a.gpu)
    out: dict[str, Any] = {"driver": N.nvmlSystemGetDriverVersion(), "name": N.nvmlDeviceGetName(h)}
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=N.nvmlDeviceGetUUID(h))
    load = subprocess.Popen([sys.executable, "-c", LOAD, str(a.seconds + 6)], env=env)
    time.sleep(4.0)  # CUDA context + first bursts

    # --- phase A: buffered samples drained once a second, instant power polled at 10 Hz beside them
    types = {"power": 0, "gpu_util": 1, "mem_util": 2, "sm_clock": 5, "mem_clock": 6, "module_power": 7}
    last = {k: 0 for k in types}
    drains: dict[str, list[dict[str, Any]]] = {k: [] for k in types}
    series: dict[str, list[tuple[int, float]]] = {k: [] for k in types}
    inst: list[tuple[float, float]] = []
    inst_cost: list[float] = []
    t_end = time.time() + a.seconds
    nxt_drain = time.time() + 1.0
    first = True
    while time.time() < t_end:
        c, fv = cpu_us(lambda: N.nvmlDeviceGetFieldValues(h, [N.NVML_FI_DEV_POWER_INSTANT]))
        inst_cost.append(c)
        if fv[0].nvmlReturn == 0:
            inst.append((fv[0].timestamp / 1e6, fv[0].value.uiVal / 1000.0))
        if time.time() >= nxt_drain:
            nxt_drain += 1.0
            for k, ty in types.items():
                try:
                    c, (vt, smp) = cpu_us(lambda ty=ty, k=k: N.nvmlDeviceGetSamples(h, ty, last[k]))
                except N.NVMLError as e:
                    drains[k].append({"error": str(e)})
                    continue
                attr = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal"}.get(vt, "uiVal")
                pts = [(s.timeStamp, float(getattr(s.sampleValue, attr))) for s in smp]
                if pts:
                    last[k] = max(p[0] for p in pts)
                if not first:  # the first drain returns the whole buffer (history before we started)
                    series[k].extend(pts)
                    drains[k].append({"cpu_us": c, "n": len(pts)})
                else:
                    drains[k].append({"cpu_us_first": c, "n_first": len(pts)})
            first = False
        time.sleep(0.1)
    res_a: dict[str, Any] = {}
    for k in types:
        ts = sorted(p[0] for p in series[k])
        gaps = [(b - a_) / 1000.0 for a_, b in zip(ts, ts[1:])]
        steady = [d for d in drains[k] if "cpu_us" in d]
        res_a[k] = {"drain_cpu_us": med([d["cpu_us"] for d in steady]), "samples_per_drain": med([d["n"] for d in steady]),
                    "gap_ms_median": med(gaps), "gap_ms_max": max(gaps) if gaps else None,
                    "values_min_max": [min((p[1] for p in series[k]), default=None), max((p[1] for p in series[k]), default=None)],
                    "errors": [d["error"] for d in drains[k] if "error" in d][:1], "first": drains[k][0] if drains[k] else None}
    # power buffer vs instant field: the buffered value nearest each instant reading (by timestamp)
    pw = sorted(series["power"])
    diffs = []
    if pw and inst:
        import bisect
        keys = [p[0] / 1e6 for p in pw]
        for t, w in inst:
            i = bisect.bisect_left(keys, t)
            cand = [j for j in (i - 1, i) if 0 <= j < len(pw)]
            j = min(cand, key=lambda j: abs(keys[j] - t))
            if abs(keys[j] - t) < 0.05:
                diffs.append(pw[j][1] / 1000.0 - w)
    res_a["power_vs_instant"] = {"pairs": len(diffs), "median_abs_diff_w": med([abs(d) for d in diffs]),
                                 "p90_abs_diff_w": sorted(abs(d) for d in diffs)[int(0.9 * len(diffs))] if diffs else None,
                                 "instant_min_max_w": [min(w for _, w in inst), max(w for _, w in inst)] if inst else None,
                                 "instant_cpu_us": med(inst_cost)}
    res_a["power_sample_excerpt"] = [(p[0], p[1]) for p in pw[:25]]
    res_a["instant_excerpt"] = [(round(t, 4), w) for t, w in inst[:12]]
    out["buffers"] = res_a

    # --- phase B: field-value batches at 100 ms spacing
    F = N
    batches = {
        "[power_instant]": [F.NVML_FI_DEV_POWER_INSTANT],
        "[energy field]": [F.NVML_FI_DEV_ENERGY],
        "[5 clock-event durations]": [74, 76, 269, 270, 271],
        "[power_instant, power_avg, hbm_temp, energy, 5 event durations]": [186, 185, 82, 191, 74, 76, 269, 270, 271],
        "[power_instant, hbm_temp]": [186, 82],
    }
    calls: dict[str, Callable[[], Any]] = {k: (lambda ids=ids: N.nvmlDeviceGetFieldValues(h, ids)) for k, ids in batches.items()}
    calls["nvmlDeviceGetTotalEnergyConsumption"] = lambda: N.nvmlDeviceGetTotalEnergyConsumption(h)
    calls["nvmlDeviceGetMemoryInfo"] = lambda: N.nvmlDeviceGetMemoryInfo(h)
    calls["nvmlDeviceGetUtilizationRates"] = lambda: N.nvmlDeviceGetUtilizationRates(h)
    calls["nvmlDeviceGetCurrentClocksEventReasons"] = lambda: N.nvmlDeviceGetCurrentClocksEventReasons(h)
    per: dict[str, list[float]] = {k: [] for k in calls}
    rets: dict[str, Any] = {}
    for _ in range(12):
        for k, fn in calls.items():
            c, r = cpu_us(fn)
            per[k].append(c)
            if k.startswith("[") and k not in rets:
                rets[k] = [(v.fieldId, v.nvmlReturn) for v in r]
            time.sleep(0.1)
    out["calls_at_100ms"] = {k: med(v) for k, v in per.items()}
    out["field_returns"] = rets
    ev = N.nvmlDeviceGetFieldValues(h, [74, 76, 269, 270, 271])
    out["event_durations_now"] = [(v.fieldId, v.nvmlReturn, v.value.ullVal) for v in ev]

    # --- phase C: GPM costs, 1 s apart
    gpm: dict[str, Any] = {}
    try:
        sup = N.nvmlGpmQueryDeviceSupport(h)
        gpm["supported"] = bool(sup.isSupportedDevice)
        s1, s2 = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
        N.nvmlGpmSampleGet(h, s1)
        get_cost, mg_cost = [], {1: [], 4: [], 9: []}
        ids = [1, 2, 3, 5, 10, 20, 21, 60, 61]
        for i in range(9):
            time.sleep(1.0)
            c, _ = cpu_us(lambda: N.nvmlGpmSampleGet(h, s2))
            get_cost.append(c)
            n = [1, 4, 9][i % 3]
            mg = N.c_nvmlGpmMetricsGet_t()
            mg.version = N.NVML_GPM_METRICS_GET_VERSION
            mg.numMetrics = n
            for j in range(n):
                mg.metrics[j].metricId = ids[j]
            mg.sample1, mg.sample2 = s1, s2
            c, _ = cpu_us(lambda: N.nvmlGpmMetricsGet(mg))
            mg_cost[n].append(c)
            s1, s2 = s2, s1
        gpm["sample_get_cpu_us"] = med(get_cost)
        gpm["metrics_get_cpu_us"] = {k: med(v) for k, v in mg_cost.items()}
    except Exception as e:  # noqa: BLE001 - report, do not crash the experiment
        gpm["error"] = repr(e)
    out["gpm"] = gpm
    load.wait()
    N.nvmlShutdown()
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
