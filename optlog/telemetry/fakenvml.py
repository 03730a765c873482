"""A fake `pynvml` for tests and CI (no NVIDIA GPU there): the handful of calls the sampler uses, with
the real module's behaviours — NVMLError with codes (NotSupported = 3, InUse = 19), per-field
nvmlReturn in field values, GPM that reads zeros when its two samples are < 100 ms apart, MIG devices
with their own UUIDs, counters that only grow.

Built from a dict (or a JSON string / file path, for `OPTLOG_FAKE_NVML` in subprocess tests):
  {"gpus": [{"uuid": "GPU-aaaa", "name": "NVIDIA H200", "power_w": 600, "limit_w": 700,
             "util": 95, "tensor": 40, "dram": 70, "unsupported": ["power_instant", "gpm", "power_samples"],
             "gpm_in_use": false, "nvlinks": 0, "mig": [{"uuid": "MIG-x", "gi": 1}],
             "throttle": 4, "minor": 0, "processes": [{"pid": 4242, "used_mib": 2048}]}],
   "no_driver": false}
Every value may be changed while running (tests drive `fake.gpus[i][key]`); the clock is
`fake.now` when set, else time.time().
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace
from typing import Any

from optlog.core import jsondoc

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_IN_USE = 19
NVML_GPM_METRICS_GET_VERSION = 1

_ERR = {3: "Not Supported", 6: "Not Found", 9: "Driver Not Loaded", 19: "In use by another client", 2: "Invalid Argument"}


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _ERR.get(self.value, f"NVML error {self.value}")


class _Handle:
    def __init__(self, gpu: dict[str, Any], mig: dict[str, Any] | None = None) -> None:
        self.gpu = gpu
        self.mig = mig


class _Metric:
    def __init__(self) -> None:
        self.metricId = 0
        self.nvmlReturn = 0
        self.value = 0.0


class _GpmMetricsGet:
    """pynvml's c_nvmlGpmMetricsGet_t (FakeNvml exposes it under that name, as pynvml does)."""

    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: Any = None
        self.sample2: Any = None
        self.metrics = [_Metric() for _ in range(64)]


class _Sample:
    def __init__(self) -> None:
        self.t: float | None = None
        self.gpu: dict[str, Any] | None = None


class FakeNvml:
    NVMLError = NVMLError
    NVML_GPM_METRICS_GET_VERSION = NVML_GPM_METRICS_GET_VERSION
    c_nvmlGpmMetricsGet_t = _GpmMetricsGet

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.gpus: list[dict[str, Any]] = [dict(g) for g in spec.get("gpus", [])]
        for i, g in enumerate(self.gpus):
            g.setdefault("uuid", f"GPU-{i:08x}-fake")
            g.setdefault("name", "NVIDIA H200")
            g.setdefault("minor", i)
            g["_energy_mj"] = float(g.get("energy_mj", 1_000_000.0))
            g["_pcie"] = [0.0, 0.0]
            g["_nvl"] = 0.0
            g["_e_t"] = None
            g["_pw_hist"] = []      # (µs, mW) the driver's 20-ms power samples, kept up to date lazily
            g["_pw_t"] = None
        self.no_driver = bool(spec.get("no_driver"))
        self.now: float | None = None
        self.calls: dict[str, int] = {}
        self.initialised = 0

    # --- helpers
    def _t(self) -> float:
        return self.now if self.now is not None else time.time()

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def _check(self, h: _Handle, feature: str) -> dict[str, Any]:
        g = h.gpu
        if feature in g.get("unsupported", ()):
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return g

    def _advance_counters(self, g: dict[str, Any]) -> None:
        t = self._t()
        last = g["_e_t"]
        g["_e_t"] = t
        if last is None or t <= last:
            return
        dt = t - last
        g["_energy_mj"] += float(g.get("power_w", 100.0)) * dt * 1000.0
        g["_pcie"][0] += float(g.get("pcie_tx_gbps", 0.0)) * 1e9 * dt
        g["_pcie"][1] += float(g.get("pcie_rx_gbps", 0.0)) * 1e9 * dt
        g["_nvl"] += float(g.get("nvlink_gbps_per_dir", 0.0)) * 1e9 * dt / 1024.0

    def _advance_power(self, g: dict[str, Any]) -> None:
        """The driver's power buffer: one sample per 20 ms at the current power, 120 kept (like an H200)."""
        t = self._t()
        last = g["_pw_t"]
        if last is None:
            last = t - 2.4
        hist = g["_pw_hist"]
        k = int(last / 0.02) + 1
        while k * 0.02 <= t + 1e-9:
            hist.append((int(round(k * 0.02 * 1e6)), int(float(g.get("power_w", 100.0)) * 1000)))
            k += 1
        g["_pw_t"] = max(last, (k - 1) * 0.02)
        del hist[:-120]

    # --- init and enumeration
    def nvmlInit(self) -> None:
        self._count("nvmlInit")
        if self.no_driver:
            raise NVMLError(NVML_ERROR_DRIVER_NOT_LOADED)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self._count("nvmlShutdown")
        self.initialised -= 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> _Handle:
        if i >= len(self.gpus):
            raise NVMLError(2)
        return _Handle(self.gpus[i])

    def nvmlDeviceGetUUID(self, h: _Handle) -> str:
        return h.mig["uuid"] if h.mig else h.gpu["uuid"]

    def nvmlDeviceGetName(self, h: _Handle) -> str:
        return h.gpu["name"]

    def nvmlDeviceGetMinorNumber(self, h: _Handle) -> int:
        return int(h.gpu["minor"])

    def nvmlDeviceGetMigMode(self, h: _Handle) -> tuple[int, int]:
        m = 1 if h.gpu.get("mig") else 0
        return m, m

    def nvmlDeviceGetMaxMigDeviceCount(self, h: _Handle) -> int:
        return len(h.gpu.get("mig") or [])

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: _Handle, j: int) -> _Handle:
        return _Handle(h.gpu, h.gpu["mig"][j])

    def nvmlDeviceGetGpuInstanceId(self, h: _Handle) -> int:
        if not h.mig:
            raise NVMLError(2)
        return int(h.mig.get("gi", 0))

    # --- readings
    def nvmlDeviceGetPowerUsage(self, h: _Handle) -> int:
        self._count("nvmlDeviceGetPowerUsage")
        g = self._check(h, "power")
        return int(float(g.get("power_avg_w", g.get("power_w", 100.0))) * 1000)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: _Handle) -> int:
        g = self._check(h, "power_limit")
        return int(float(g.get("limit_w", 700.0)) * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, h: _Handle) -> int:
        self._count("nvmlDeviceGetTotalEnergyConsumption")
        g = self._check(h, "energy")
        self._advance_counters(g)
        return int(g["_energy_mj"])

    def nvmlDeviceGetSamples(self, h: _Handle, sampling_type: int, ts_us: int) -> tuple[int, list[Any]]:
        self._count("nvmlDeviceGetSamples")
        g = self._check(h, "power_samples")
        if sampling_type != 0:
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        self._advance_power(g)
        got = [SimpleNamespace(timeStamp=ts, sampleValue=SimpleNamespace(uiVal=mw)) for ts, mw in g["_pw_hist"] if ts > ts_us]
        if not got:
            raise NVMLError(NVML_ERROR_NOT_FOUND)  # what the real call says when nothing is new
        return 1, got

    def nvmlDeviceGetUtilizationRates(self, h: _Handle) -> Any:
        self._advance_power(h.gpu)
        if h.mig:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        g = self._check(h, "util")
        return SimpleNamespace(gpu=g.get("util", 0), memory=g.get("mem_util", 0))

    def nvmlDeviceGetClockInfo(self, h: _Handle, which: int) -> int:
        self._advance_power(h.gpu)
        g = self._check(h, "clocks")
        return int(g.get("sm_mhz", 1980) if which == 1 else g.get("mem_mhz", 3201))

    def nvmlDeviceGetMemoryInfo(self, h: _Handle) -> Any:
        g = self._check(h, "memory")
        used = float((h.mig or g).get("mem_used_gib", 1.0)) * (1 << 30)
        return SimpleNamespace(used=int(used), total=int(141 * (1 << 30)), free=0)

    def nvmlDeviceGetComputeRunningProcesses(self, h: _Handle) -> list[Any]:
        """`"processes": [{"pid": 123, "used_mib": 2048}]` of a GPU's spec."""
        g = self._check(h, "processes")
        return [SimpleNamespace(pid=int(p["pid"]), usedGpuMemory=int(p.get("used_mib", 0)) << 20)
                for p in g.get("processes", [])]

    def nvmlDeviceGetTemperature(self, h: _Handle, sensor: int) -> int:
        g = self._check(h, "temperature")
        return int(g.get("temp_c", 40))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: _Handle) -> int:
        g = self._check(h, "throttle")
        return int(g.get("throttle", 0))

    def nvmlDeviceGetPcieThroughput(self, h: _Handle, counter: int) -> int:  # the blocking one: never use
        self._count("nvmlDeviceGetPcieThroughput")
        time.sleep(0.02)
        return 0

    def nvmlDeviceGetFieldValues(self, h: _Handle, ids: list[Any]) -> list[Any]:
        self._count("nvmlDeviceGetFieldValues")
        g = h.gpu
        if "field_values" in g.get("unsupported", ()):
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        self._advance_counters(g)
        ts = int(self._t() * 1e6)
        out = []
        for req in ids:
            fid, scope = (req if isinstance(req, tuple) else (req, 0))
            v = SimpleNamespace(fieldId=fid, scopeId=scope, timestamp=ts, latencyUsec=0, valueType=0,
                                nvmlReturn=0, value=SimpleNamespace(dVal=0.0, uiVal=0, ulVal=0, ullVal=0, sllVal=0,
                                                                    siVal=0, usVal=0))
            unsup = g.get("unsupported", ())
            if fid == 186 and "power_instant" not in unsup:
                v.valueType, v.value.uiVal = 1, int(float(g.get("power_w", 100.0)) * 1000)
            elif fid == 185 and "power_instant" not in unsup:
                v.valueType, v.value.uiVal = 1, int(float(g.get("power_avg_w", g.get("power_w", 100.0))) * 1000)
            elif fid in (197, 198) and "pcie_counters" not in unsup:
                v.valueType, v.value.ullVal = 3, int(g["_pcie"][fid - 197])
            elif fid == 82 and "hbm_temp" not in unsup:
                v.valueType, v.value.uiVal = 1, int(g.get("hbm_temp_c", 45))
            elif fid == 91:
                v.valueType, v.value.uiVal = 1, int(g.get("nvlinks", 0))
            elif fid in (138, 139) and scope < int(g.get("nvlinks", 0)):
                v.valueType, v.value.ullVal = 3, int(g["_nvl"] / max(1, int(g.get("nvlinks", 1))))
            else:
                v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
            out.append(v)
        return out

    # --- GPM
    def nvmlGpmQueryDeviceSupport(self, h: _Handle) -> Any:
        return SimpleNamespace(version=1, isSupportedDevice=0 if "gpm" in h.gpu.get("unsupported", ()) else 1)

    def nvmlGpmSampleAlloc(self) -> _Sample:
        return _Sample()

    def nvmlGpmSampleFree(self, s: _Sample) -> None:
        self._count("nvmlGpmSampleFree")

    def nvmlGpmSampleGet(self, h: _Handle, s: _Sample) -> _Sample:
        self._count("nvmlGpmSampleGet")
        if h.gpu.get("gpm_in_use"):
            raise NVMLError(NVML_ERROR_IN_USE)
        s.t, s.gpu = self._t(), h.gpu
        return s

    def nvmlGpmMigSampleGet(self, h: _Handle, gi: int, s: _Sample) -> _Sample:
        return self.nvmlGpmSampleGet(h, s)

    def nvmlGpmMetricsGet(self, mg: _GpmMetricsGet) -> _GpmMetricsGet:
        self._count("nvmlGpmMetricsGet")
        s1, s2 = mg.sample1, mg.sample2
        g = s2.gpu or {}
        close = s1.t is None or s2.t is None or abs(s2.t - s1.t) < 0.1 - 1e-6  # the real GPM silently reads zeros
        vals = {1: g.get("util", 0), 2: g.get("sm_active", g.get("util", 0)), 3: g.get("occupancy", 10),
                4: g.get("int", 0), 5: g.get("tensor", 0), 7: g.get("hmma", g.get("tensor", 0)), 9: g.get("imma", 0),
                10: g.get("dram", 0), 11: g.get("fp64", 0), 12: g.get("fp32", 0), 13: g.get("fp16", 0), 20: g.get("pcie_tx_gbps", 0) * 1e9 / 1048576,
                21: g.get("pcie_rx_gbps", 0) * 1e9 / 1048576, 60: g.get("nvlink_gbps_per_dir", 0) * 1e9 / 1048576,
                61: g.get("nvlink_gbps_per_dir", 0) * 1e9 / 1048576}
        for i in range(mg.numMetrics):
            m = mg.metrics[i]
            m.nvmlReturn = 0
            m.value = 0.0 if close else float(vals.get(m.metricId, 0.0))
        return mg


def from_json(spec: str) -> FakeNvml:
    """`spec` is JSON text or the path of a JSON file."""
    if os.path.exists(spec):
        with open(spec) as f:
            return FakeNvml(jsondoc.loads(f.read()))
    return FakeNvml(jsondoc.loads(spec))
