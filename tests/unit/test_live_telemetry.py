"""The dashboard's live telemetry (issue 19.1): while a launch runs on this machine the overview
samples it itself — GPU power, tensor activity and DRAM bandwidth through the NVML sampler (the fake
NVML here: no GPU in CI), else load and CPU use — and draws them as sparklines."""

from __future__ import annotations

import time

from optlog.core.spark import BARS, sparkline
from optlog.telemetry.fakenvml import FakeNvml
from optlog.telemetry.live import LiveSampler


def test_sparkline_scales_marks_gaps_and_keeps_the_last_values():
    assert sparkline([0, 5, 10], 3) == BARS[0] + BARS[4] + BARS[7]
    assert sparkline([1, None, 1], 3) == BARS[7] + " " + BARS[7]  # from 0: a steady 1 is a full bar
    assert sparkline(list(range(100)), 10)[-1] == BARS[7] and len(sparkline(list(range(100)), 10)) == 10
    assert sparkline([], 5) == "" and sparkline([None, None], 4) == "  "
    assert sparkline([5, 5], 2, lo=5, hi=5) == BARS[0] * 2  # no span: flat, never a division by zero


def test_gpu_series_come_from_nvml_and_follow_the_gpus():
    fake = FakeNvml({"gpus": [{"uuid": "GPU-a", "name": "NVIDIA H200", "power_w": 300, "util": 50,
                               "tensor": 20, "dram": 40},
                              {"uuid": "GPU-b", "name": "NVIDIA H200", "power_w": 500, "util": 70,
                               "tensor": 40, "dram": 60}]})
    s = LiveSampler(fake)
    try:
        assert s.kind == "gpu"
        keys: set[str] = set()
        readings = []
        for _ in range(4):
            r = s.read()
            keys |= set(r)
            readings.append(r)
            time.sleep(0.15)
        power = [r["gpu_power_w"] for r in readings if "gpu_power_w" in r]
        assert power and all(abs(p - 800) < 1 for p in power), readings  # both GPUs together
        labels = [lab for _k, lab, _u in s.series(keys)]
        assert labels[0] == "power" and len(labels) == 3, (labels, keys)
        busy = [r.get("tensor_active", r.get("gpu_util")) for r in readings]
        assert any(b is not None and 20 <= b <= 70 for b in busy), readings  # a mean over the GPUs
    finally:
        s.close()


def test_without_a_gpu_the_series_are_load_and_cpu_use():
    s = LiveSampler(FakeNvml({"no_driver": True}))
    try:
        assert s.kind == "cpu"
        s.read()
        t = time.time()
        while time.time() - t < 0.2:  # keep a CPU busy between two readings
            pass
        r = s.read()
        assert r["cpu_busy_pct"] > 0 and "load_1m" in r
        assert [lab for _k, lab, _u in s.series(set(r))] == ["load", "CPU"]
    finally:
        s.close()
