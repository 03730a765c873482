"""Real-hardware check of the sampler's power path (run on a GPU machine; prints JSON).

    python bench/power_source_check.py

A bf16 matmul load switches on and off every 0.5 s on GPU 0 while the sampler runs at 10 Hz with its
defaults (power from the driver's 20-ms buffer, drained every 2 s) and, beside it, the instantaneous
power field is polled at each tick. Prints both series and their differences: the buffered window mean
should follow the load's square wave as the instant field does, every tick should carry power, and
the energy counter over the run should match the integral of the sampled power.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.getcwd())

LOAD = """
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + 9
while time.time() < end:
    t = time.time()
    while time.time() - t < 0.5:
        a @ a
    torch.cuda.synchronize()
    time.sleep(0.5)
"""


def main() -> None:
    import pynvml as N

    from optlog.telemetry.nvml import FI_POWER_INSTANT, NvmlSampler

    s = NvmlSampler(interval_s=0.1, env={}, gpus="0")
    s.open()
    uuid = s.devices[0].uuid
    load = subprocess.Popen([sys.executable, "-c", LOAD], env=dict(os.environ, CUDA_VISIBLE_DEVICES=uuid))
    time.sleep(3)
    h = s.devices[0].handle
    e0 = s.read_energy()[uuid]
    rows, inst = [], {}
    t_end = time.time() + 5
    nxt = time.monotonic()
    while time.time() < t_end:
        got = s.sample()
        fv = N.nvmlDeviceGetFieldValues(h, [FI_POWER_INSTANT])[0]
        inst[round(time.time(), 2)] = fv.value.uiVal / 1000.0
        rows.extend(got)
        nxt += 0.1
        time.sleep(max(0.0, nxt - time.monotonic()))
    rows.extend(s.sample(flush=True))
    e1 = s.read_energy()[uuid]
    s.close()
    load.wait()
    pw = [r.get("gpu_power_w") for r in rows]
    integral = sum((b["t"] - a["t"]) * (a["gpu_power_w"] + b["gpu_power_w"]) / 2 for a, b in zip(rows, rows[1:])
                   if "gpu_power_w" in a and "gpu_power_w" in b)
    out = {"ticks": len(rows), "with_power": sum(1 for p in pw if p is not None),
           "buffered_power_w": [round(p, 1) if p is not None else None for p in pw],
           "instant_field_w": [round(v, 1) for v in inst.values()],
           "buffered_min_max": [min(p for p in pw if p is not None), max(p for p in pw if p is not None)],
           "energy_counter_j": e1 - e0, "integral_of_buffered_power_j": integral,
           "energy_ratio": integral / (e1 - e0) if e1 > e0 else None,
           "median_power_w": statistics.median(p for p in pw if p is not None)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
