"""What the machine the dashboard runs on is doing now, sampled on demand for its sparklines.

Why: a launch's telemetry reaches the database only when its point ends, so a person watching a
point run saw nothing move. While a launch runs on this machine the dashboard samples it itself,
at its own poll: GPU power, tensor activity and DRAM bandwidth through the same NVML sampler the
launcher uses (GPM where the GPU has it), or, with no NVIDIA GPU, the load average and CPU use.
It describes the whole machine, not one process tree; a launch on another host is not sampled here.
"""

from __future__ import annotations

import os
from typing import Any

from optlog.telemetry.nvml import NvmlSampler, NvmlUnavailable

# what each series means, in the order the dashboard draws them: (key, label, unit)
GPU_SERIES: tuple[tuple[str, str, str], ...] = (
    ("gpu_power_w", "power", "W"), ("tensor_active", "tensor", "%"), ("dram_bw_util", "DRAM", "%"),
)
GPU_FALLBACK: dict[str, tuple[str, str, str]] = {  # without GPM: NVML's coarser utilisation
    "tensor_active": ("gpu_util", "GPU busy", "%"), "dram_bw_util": ("mem_util", "mem busy", "%"),
}
CPU_SERIES: tuple[tuple[str, str, str], ...] = (("load_1m", "load", ""), ("cpu_busy_pct", "CPU", "%"))


def cpu_times() -> tuple[float, float] | None:
    """(busy, total) CPU time from /proc/stat since boot, in clock ticks; None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            parts = f.readline().split()[1:]
    except OSError:
        return None
    v = [float(x) for x in parts]
    idle = v[3] + (v[4] if len(v) > 4 else 0.0)  # idle + iowait
    return sum(v[:8]) - idle, sum(v[:8])


class LiveSampler:
    """One reading per call of `read()`: GPU series where NVML answers, else CPU ones."""

    def __init__(self, nv: Any | None = None) -> None:
        self._cpu = cpu_times()
        self._nvml: NvmlSampler | None = None
        try:
            s = NvmlSampler(nv, gpus=None, gpm_interval_s=1.0, notice=lambda _t: None)
            if s.open():
                self._nvml = s
            else:
                s.close()
        except (NvmlUnavailable, OSError, RuntimeError):
            self._nvml = None

    @property
    def kind(self) -> str:
        return "gpu" if self._nvml is not None else "cpu"

    def read(self) -> dict[str, float]:
        out: dict[str, float] = {}
        try:
            out["load_1m"] = os.getloadavg()[0]
        except OSError:
            pass
        now = cpu_times()
        if now is not None and self._cpu is not None and now[1] > self._cpu[1]:
            out["cpu_busy_pct"] = (now[0] - self._cpu[0]) / (now[1] - self._cpu[1]) * 100.0 * (os.cpu_count() or 1)
        self._cpu = now
        if self._nvml is not None:
            samples = self._nvml.sample(flush=True)
            power = [s["gpu_power_w"] for s in samples if s.get("gpu_power_w") is not None]
            if power and len(power) == len(samples):  # a sum short of a GPU would read as a drop
                out["gpu_power_w"] = sum(power)  # the machine's GPUs together
            for k in ("tensor_active", "dram_bw_util", "gpu_util", "mem_util"):
                vals = [float(s[k]) for s in samples if s.get(k) is not None]
                if vals:
                    out[k] = sum(vals) / len(vals)  # the mean over the GPUs
        return out

    def series(self, reading_keys: set[str]) -> list[tuple[str, str, str]]:
        """The (key, label, unit) to draw, given the keys the readings have had."""
        if self.kind == "cpu":
            return [s for s in CPU_SERIES if s[0] in reading_keys]
        out = []
        for key, label, unit in GPU_SERIES:
            if key in reading_keys:
                out.append((key, label, unit))
            elif key in GPU_FALLBACK and GPU_FALLBACK[key][0] in reading_keys:
                out.append(GPU_FALLBACK[key])
        return out

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.close()
            self._nvml = None
