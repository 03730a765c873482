"""NVML sampler: one tick reads every run GPU's power, energy, clocks, memory, temperature, clock-event
reasons, PCIe/NVLink counters and (where the device supports it) GPM metrics.

The `pynvml` module (from nvidia-ml-py) is injected (`NvmlSampler(nv=...)`), so CI tests the logic
against a fake module (optlog.telemetry.fakenvml) that behaves like the real one: NotSupported
errors, GPM zeros for samples closer than 100 ms, MIG handles.

Rules it keeps:
- Only non-blocking sources: the classic `nvmlDeviceGetPcieThroughput` blocks 20 ms, so PCIe comes
  from the byte counters in field values (or GPM); NVLink from the throughput field counters.
- Power: the driver's own 20-ms power samples (`nvmlDeviceGetSamples`, NVML_TOTAL_POWER_SAMPLES; they
  match the instantaneous-power field), drained every `power_drain_s` (2 s; the buffer holds ~2.4 s)
  in one driver call (`_PowerDrain`), each tick getting the mean over its window: energy-consistent,
  and no transient falls between samples. Where the driver keeps no such buffer: the field
  `NVML_FI_DEV_POWER_INSTANT`, polled per tick, with NVML's plain `nvmlDeviceGetPowerUsage` (a 1-s
  average on Ampere and newer) beside it as `gpu_power_avg_w` on slow ticks.
- Energy from the total-energy counter (mJ), read at point boundaries (`read_energy()`) and every
  `energy_every_s` (60 s; one read costs ~3.4 ms of CPU), never by integrating power unless the counter
  is missing.
- Cost (measured on an H200, driver 580, at 10 Hz: bench/telemetry_bench.py, BENCHMARKS.md): a tick
  costs mostly its wake-up (the first NVML call and the Python work on cold caches), then per GPU
  util/clock/throttle ~8 µs each (read straight through ctypes, `_HotReads`), instant power ~55 µs,
  memory info ~70 µs, one buffer drain ~0.5 ms whatever its length (half that in one call), one GPM
  read ~2.3 ms. So each tick reads util, SM clock and clock-event reasons; power comes from the
  drained buffer; memory, temperatures and memory clock every `slow_every_s` (2 s); GPM once per
  `gpm_interval_s` (10 s) and at every point's start and end (a GPM value is a window average, so a
  point always gets its own). Samples simply lack what was not read on that tick.
- GPM: support is checked per device (`nvmlGpmQueryDeviceSupport`), two samples at least 100 ms
  apart (closer ones silently read zeros); "in use" (a profiler holds it) → not available.
- Anything unsupported → absent from the sample, with ONE notice per device and field; no driver →
  `NvmlUnavailable` (callers turn it into a notice), never a crash mid-run.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from optlog import settings
from optlog.telemetry.fakenvml import from_json
from optlog.telemetry.fields import GPM_FIELDS

GPM_MIN_GAP_S = 0.1
ERR_NOT_SUPPORTED = 3
ERR_IN_USE = 19
MIB = 1024 * 1024

# GPM metric id -> our field (scale applied after)
GPM_METRICS = {
    1: "gr_active",          # NVML_GPM_METRIC_GRAPHICS_UTIL
    2: "sm_active",          # NVML_GPM_METRIC_SM_UTIL
    3: "sm_occupancy",       # NVML_GPM_METRIC_SM_OCCUPANCY
    4: "int_active",         # NVML_GPM_METRIC_INTEGER_UTIL
    5: "tensor_active",      # NVML_GPM_METRIC_ANY_TENSOR_UTIL
    7: "hmma_active",        # NVML_GPM_METRIC_HMMA_TENSOR_UTIL
    9: "imma_active",        # NVML_GPM_METRIC_IMMA_TENSOR_UTIL
    10: "dram_bw_util",      # NVML_GPM_METRIC_DRAM_BW_UTIL
    11: "fp64_active",       # NVML_GPM_METRIC_FP64_UTIL
    12: "fp32_active",       # NVML_GPM_METRIC_FP32_UTIL
    13: "fp16_active",       # NVML_GPM_METRIC_FP16_UTIL
    20: "gpm_pcie_tx",       # NVML_GPM_METRIC_PCIE_TX_PER_SEC (MiB/s)
    21: "gpm_pcie_rx",       # NVML_GPM_METRIC_PCIE_RX_PER_SEC
    60: "gpm_nvlink_rx",     # NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC
    61: "gpm_nvlink_tx",     # NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC
}

SAMPLES_POWER = 0   # NVML_TOTAL_POWER_SAMPLES
ERR_NOT_FOUND = 6
FI_POWER_AVERAGE = 185
FI_POWER_INSTANT = 186
FI_PCIE_TX = 197
FI_PCIE_RX = 198
FI_NVLINK_LINK_COUNT = 91
FI_NVLINK_TX = 138
FI_NVLINK_RX = 139
FI_MEMORY_TEMP = 82


class NvmlUnavailable(Exception):
    """NVML cannot be used here (no library, no driver, no devices selected)."""


def load_pynvml() -> Any:
    """The NVML module: the fake when OPTLOG_FAKE_NVML names a JSON spec (tests), else pynvml."""
    spec = settings.read("fake_nvml")
    if spec:
        return from_json(spec)
    try:
        import pynvml  # deferred: NVML only where a GPU is sampled
    except ImportError as e:  # pragma: no cover - a dependency, but keep the message
        raise NvmlUnavailable(f"pynvml (nvidia-ml-py) is not installed: {e}") from None
    return pynvml


@dataclass
class Device:
    index: int                   # NVML index of the physical GPU
    uuid: str                    # GPU-… or MIG-…
    name: str
    handle: Any
    parent: Any                  # the physical GPU's handle (== handle unless MIG)
    mig: bool = False
    gi_id: int | None = None     # GPU instance id of a MIG device (for GPM)
    label: str = ""              # what the user selected it as
    gpm: bool = False
    gpm_samples: list[Any] = field(default_factory=list)
    gpm_t: float = 0.0
    power_limit_w: float | None = None
    nvlinks: int = 0
    last_counters: dict[str, tuple[float, float]] = field(default_factory=dict)
    energy0_mj: float | None = None
    energy_last_j: float | None = None
    energy_t: float = 0.0
    integrated_j: float = 0.0
    last_power: tuple[float, float] | None = None
    slow_t: float = -1e18
    links_t: float = -1e18
    gpm_mg: Any = None
    dead: bool = False
    power_buf: bool = False          # power from the driver's 20-ms sample buffer, drained every power_drain_s
    power_ts_us: int = 0             # newest buffered power sample already taken (µs, wall clock)
    power_pts: list[tuple[float, float]] = field(default_factory=list)  # (t, W) not yet given to a tick
    pending: list[dict[str, Any]] = field(default_factory=list)         # ticks waiting for their power
    drain_t: float = 0.0
    last_tick_t: float | None = None
    fast: Any = None                 # _HotReads: the per-tick calls without the wrappers (real NVML only)
    fast_power: Any = None           # _PowerDrain: the buffer drain in one driver call (real NVML only)

    def describe(self) -> dict[str, Any]:
        return {"index": self.index, "uuid": self.uuid, "name": self.name, "mig": self.mig, "gpm": self.gpm,
                "power_limit_w": self.power_limit_w, "nvlinks": self.nvlinks, "label": self.label}


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _err_code(e: BaseException) -> int | None:
    return getattr(e, "value", None)


def _err_text(e: BaseException) -> str:
    try:
        return str(e) or type(e).__name__
    except Exception:
        return type(e).__name__


# ------------------------------------------------------------------------------------- device mapping


def _enumerate(nv: Any) -> tuple[list[Device], dict[str, Device]]:
    """All physical GPUs (NVML order = PCI bus order) and every MIG device, by UUID."""
    gpus: list[Device] = []
    by_uuid: dict[str, Device] = {}
    n = nv.nvmlDeviceGetCount()
    for i in range(n):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        uuid = _s(nv.nvmlDeviceGetUUID(h))
        try:
            name = _s(nv.nvmlDeviceGetName(h))
        except Exception:
            name = "?"
        d = Device(index=i, uuid=uuid, name=name, handle=h, parent=h)
        gpus.append(d)
        by_uuid[uuid] = d
        try:
            cur, _pending = nv.nvmlDeviceGetMigMode(h)
        except Exception:
            cur = 0
        if cur:
            try:
                count = nv.nvmlDeviceGetMaxMigDeviceCount(h)
            except Exception:
                count = 0
            for j in range(count):
                try:
                    mh = nv.nvmlDeviceGetMigDeviceHandleByIndex(h, j)
                except Exception:
                    continue
                muuid = _s(nv.nvmlDeviceGetUUID(mh))
                try:
                    gi = int(nv.nvmlDeviceGetGpuInstanceId(mh))
                except Exception:
                    gi = None
                by_uuid[muuid] = Device(index=i, uuid=muuid, name=f"{name} MIG", handle=mh, parent=h, mig=True, gi_id=gi)
    return gpus, by_uuid


def _minor(nv: Any, d: Device) -> int:
    try:
        return int(nv.nvmlDeviceGetMinorNumber(d.handle))
    except Exception:
        return d.index


def _match_token(tok: str, gpus: list[Device], by_uuid: dict[str, Device]) -> Device | None:
    """A CUDA_VISIBLE_DEVICES entry or a --gpus entry: index, (prefix of a) GPU-/MIG- UUID, or the
    legacy `MIG-GPU-<uuid>/<gi>/<ci>`."""
    t = tok.strip()
    if not t:
        return None
    if t.isdigit():
        i = int(t)
        return gpus[i] if i < len(gpus) else None
    if t.startswith("MIG-GPU-") and "/" in t:
        parent_uuid, gi, *_ = t[4:].split("/")
        for d in by_uuid.values():
            if d.mig and d.gi_id is not None and str(d.gi_id) == gi:
                par = next((g for g in gpus if g.handle is d.parent), None)
                if par is not None and par.uuid == parent_uuid:
                    return d
        return None
    cand = t if t.startswith(("GPU-", "MIG-")) else "GPU-" + t
    if cand in by_uuid:
        return by_uuid[cand]
    hits = [d for u, d in by_uuid.items() if u.startswith(cand)]  # CUDA accepts unique prefixes
    return hits[0] if len(hits) == 1 else None


def select_devices(nv: Any, env: dict[str, str] | None = None, gpus: str | list[Any] | None = None,
                   notice: Callable[[str], None] = lambda _t: None) -> list[Device]:
    """The run's GPUs as NVML devices, matched by UUID.

    Precedence: an explicit `gpus` list (NVML indices or UUIDs); else CUDA_VISIBLE_DEVICES (indices in
    CUDA's order, UUIDs or MIG ids; CUDA stops at the first invalid entry, so do we); else Slurm's
    SLURM_STEP_GPUS / SLURM_JOB_GPUS (device minor numbers); else every GPU.
    """
    env = dict(settings.environ() if env is None else env)
    all_gpus, by_uuid = _enumerate(nv)
    chosen: list[Device] = []

    def add(d: Device, label: str) -> None:
        if all(c.uuid != d.uuid for c in chosen):
            d.label = label
            chosen.append(d)

    if gpus not in (None, "", []):
        toks = gpus.split(",") if isinstance(gpus, str) else [str(g) for g in gpus]
        for t in toks:
            d = _match_token(t, all_gpus, by_uuid)
            if d is None:
                notice(f"telemetry: no GPU matches {t.strip()!r} (known: {', '.join(g.uuid for g in all_gpus)})")
            else:
                add(d, t.strip())
        return chosen
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        order = env.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
        toks = [t for t in cvd.split(",")]
        if any(t.strip().isdigit() for t in toks) and order != "PCI_BUS_ID":
            names = {g.name for g in all_gpus}
            if len(names) > 1:
                notice("telemetry: CUDA_VISIBLE_DEVICES uses indices and CUDA_DEVICE_ORDER is not PCI_BUS_ID on a "
                       "machine with different GPU models: CUDA's order (fastest first) may differ from NVML's; "
                       "assuming PCI bus order — set CUDA_DEVICE_ORDER=PCI_BUS_ID or use UUIDs")
        for pos, t in enumerate(toks):
            d = _match_token(t, all_gpus, by_uuid)
            if d is None:
                if t.strip():
                    notice(f"telemetry: CUDA_VISIBLE_DEVICES entry {t.strip()!r} matches no GPU; CUDA ignores it "
                           "and every entry after it")
                break
            add(d, f"cuda:{pos}")
        return chosen
    slurm = env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS")
    if slurm:
        minors = {_minor(nv, g): g for g in all_gpus}
        for t in slurm.split(","):
            t = t.strip()
            if t.isdigit() and int(t) in minors:
                add(minors[int(t)], f"slurm:{t}")
            elif t:
                d = _match_token(t, all_gpus, by_uuid)
                if d is not None:
                    add(d, f"slurm:{t}")
        if not chosen and len(all_gpus) == len(slurm.split(",")):
            # devices constrained by cgroups: the job sees exactly its own GPUs, renumbered
            for g in all_gpus:
                add(g, f"slurm:{g.index}")
        return chosen
    for g in all_gpus:
        add(g, str(g.index))
    return chosen


# ------------------------------------------------------------------------------------- the sampler


class NvmlSampler:
    def __init__(self, nv: Any | None = None, *, gpus: str | list[Any] | None = None,
                 env: dict[str, str] | None = None, interval_s: float = 0.5, gpm: bool = True,
                 energy_every_s: float = 60.0, gpm_interval_s: float = 10.0, slow_every_s: float = 2.0,
                 links_every_s: float = 5.0, power_drain_s: float = 2.0,
                 notice: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._nv_arg = nv
        self.nv: Any = None
        self.gpus_sel = gpus
        self.env = env
        self.interval_s = interval_s
        self.want_gpm = gpm
        self.energy_every_s = energy_every_s
        self.gpm_interval_s = max(GPM_MIN_GAP_S, gpm_interval_s)
        self.slow_every_s = slow_every_s      # temperatures, memory clock, 1-s average power
        self.links_every_s = links_every_s    # PCIe/NVLink byte counters where GPM cannot give rates
        self.power_drain_s = power_drain_s    # 0: poll instantaneous power every tick instead of the buffer
        self._notice = notice or (lambda _t: None)
        self.clock = clock
        self.devices: list[Device] = []
        self.unavailable: dict[tuple[str, str], str] = {}
        self._notified: set[tuple[str, str]] = set()
        self.notices: list[str] = []
        self.open_ = False

    # -- notices
    def notice(self, text: str) -> None:
        self.notices.append(text)
        self._notice(text)

    def _unavail(self, d: Device, what: str, why: str, instead: str = "") -> None:
        key = (d.uuid, what)
        if key in self._notified:
            return
        self._notified.add(key)
        self.unavailable[key] = why
        self.notice(f"telemetry: GPU {d.label or d.index} ({d.uuid[:16]}…): {what} not available ({why})"
                    + (f"; {instead}" if instead else ""))

    def _off(self, d: Device, what: str) -> bool:
        return (d.uuid, what) in self.unavailable

    def _call(self, d: Device, what: str, fn: Callable[..., Any], *args: Any, instead: str = "") -> Any:
        """Run one NVML query `fn(*args)`; an error marks the field unavailable for this device (one
        notice). Arguments rather than a closure: this runs several times per GPU per tick."""
        if (d.uuid, what) in self.unavailable:
            return None
        try:
            return fn(*args)
        except Exception as e:  # NVMLError and friends
            self._unavail(d, what, _err_text(e), instead)
            return None

    # -- lifecycle
    def open(self) -> list[Device]:
        nv = self._nv_arg
        if nv is None:
            nv = load_pynvml()
        self.nv = nv
        try:
            nv.nvmlInit()
        except Exception as e:
            raise NvmlUnavailable(f"NVML did not initialise ({_err_text(e)}): no NVIDIA driver here?") from None
        self.open_ = True
        try:
            self.devices = select_devices(nv, self.env, self.gpus_sel, self.notice)
        except Exception as e:
            self.close()
            raise NvmlUnavailable(f"cannot list GPUs through NVML: {_err_text(e)}") from None
        if not self.devices:
            self.close()
            raise NvmlUnavailable("no GPU selected for telemetry")
        now = self.clock()
        for d in self.devices:
            if d.mig:
                self.notice(f"telemetry: {d.uuid[:20]}… is a MIG device: power, energy, clocks and temperature "
                            "are the whole GPU's")
            lim = self._call(d, "power limit", nv.nvmlDeviceGetEnforcedPowerLimit, d.parent)
            d.power_limit_w = lim / 1000.0 if lim is not None else None
            nl = self._fields(d, [FI_NVLINK_LINK_COUNT], quiet=True)
            d.nvlinks = int(nl.get(FI_NVLINK_LINK_COUNT) or 0)
            mj = self._call(d, "energy counter", nv.nvmlDeviceGetTotalEnergyConsumption, d.parent,
                            instead="energy integrated from power instead")
            if mj is not None:
                d.energy0_mj = float(mj)
                d.energy_last_j = 0.0
                d.energy_t = now
            if self.power_drain_s > 0:
                self._power_buffer_init(d, now)
            if not d.mig:
                d.fast = _HotReads.build(nv, d.parent)
            if self.want_gpm:
                self._gpm_init(d, now)
            self._counters(d, now)  # baseline for rates
        return self.devices

    def close(self) -> None:
        nv = self.nv
        if nv is None:
            return
        for d in self.devices:
            for s in d.gpm_samples:
                try:
                    nv.nvmlGpmSampleFree(s)
                except Exception:
                    pass
            d.gpm_samples = []
        if self.open_:
            try:
                nv.nvmlShutdown()
            except Exception:
                pass
        self.open_ = False

    def __enter__(self) -> "NvmlSampler":
        self.open()
        return self

    def __exit__(self, *a: Any) -> None:
        self.close()

    # -- pieces
    def _fields(self, d: Device, ids: list[Any], quiet: bool = False) -> dict[Any, float]:
        """Field values in one batch; returns {id: value} (and {(id, '_ts'): µs timestamp})."""
        nv = self.nv
        try:
            vals = nv.nvmlDeviceGetFieldValues(d.parent, ids)
        except Exception as e:
            if not quiet:
                self._unavail(d, "field values", _err_text(e))
            return {}
        out: dict[Any, float] = {}
        for req, v in zip(ids, vals):
            if getattr(v, "nvmlReturn", 0) != 0:
                out[("err", req)] = float(v.nvmlReturn)
                continue
            out[req] = _field_value(v)
            out[("ts", req)] = float(getattr(v, "timestamp", 0) or 0)
        return out

    def _gpm_init(self, d: Device, now: float) -> None:
        nv = self.nv
        try:
            sup = nv.nvmlGpmQueryDeviceSupport(d.parent)
            ok = bool(getattr(sup, "isSupportedDevice", 0))
        except Exception as e:
            self._unavail(d, "GPM (SM occupancy, tensor activity, DRAM bandwidth)", _err_text(e))
            return
        if not ok:
            self._unavail(d, "GPM (SM occupancy, tensor activity, DRAM bandwidth)", "the device does not support GPM")
            return
        try:
            d.gpm_samples = [nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()]
            self._gpm_get(d, d.gpm_samples[0])
            d.gpm_t = self.clock()
            d.gpm = True
        except Exception as e:
            why = _err_text(e)
            if _err_code(e) == ERR_IN_USE:
                why = "GPM is in use (a profiler such as ncu or DCGM holds it)"
            self._unavail(d, "GPM (SM occupancy, tensor activity, DRAM bandwidth)", why)
            d.gpm = False

    def _gpm_get(self, d: Device, s: Any) -> None:
        if d.mig and d.gi_id is not None:
            self.nv.nvmlGpmMigSampleGet(d.parent, d.gi_id, s)
        else:
            self.nv.nvmlGpmSampleGet(d.parent, s)

    def _gpm_read(self, d: Device, now: float, force: bool = False) -> dict[str, float]:
        """GPM metrics over [last GPM sample, now] once the window (`gpm_interval_s`) is full, or with
        `force` (a point's end: its last stretch gets its own reading) once 100 ms passed; else {}."""
        if not d.gpm:
            return {}
        if force and self.clock() - d.gpm_t >= GPM_MIN_GAP_S + 0.005:
            return self._gpm_take(d)
        # the gap is judged at the moment of the call (not the tick's start): closer than 100 ms, GPM
        # silently reads zeros, so such a tick skips GPM and the next one covers the longer window
        at = self.clock()
        short = self.gpm_interval_s - (at - d.gpm_t)
        if 0 < short <= min(0.015, 0.2 * self.interval_s) and self.clock is time.time:
            time.sleep(short + 0.001)  # a tick a few ms early (jitter): wait rather than skip a window
            at = self.clock()
        if at - d.gpm_t < max(GPM_MIN_GAP_S, self.gpm_interval_s - 0.02 * self.interval_s) - 1e-6:
            return {}
        return self._gpm_take(d)

    def _gpm_take(self, d: Device) -> dict[str, float]:
        nv = self.nv
        s1, s2 = d.gpm_samples
        try:
            self._gpm_get(d, s2)
            # the window's end is stamped AFTER the call: the next window is then >= 100 ms by the
            # device's own clock too (stamping before it could leave a window a few µs short: zeros)
            after = self.clock()
            ids = list(GPM_METRICS)
            mg = d.gpm_mg
            if mg is None:  # the struct holds 477 metric slots: build it once per device, not per read
                mg = d.gpm_mg = nv.c_nvmlGpmMetricsGet_t()
                mg.version = getattr(nv, "NVML_GPM_METRICS_GET_VERSION", 1)
                mg.numMetrics = len(ids)
                for i, m in enumerate(ids):
                    mg.metrics[i].metricId = m
            mg.sample1 = s1
            mg.sample2 = s2
            nv.nvmlGpmMetricsGet(mg)
        except Exception as e:
            why = _err_text(e)
            if _err_code(e) == ERR_IN_USE:
                why = "GPM is in use (a profiler such as ncu or DCGM holds it)"
            self._unavail(d, "GPM (SM occupancy, tensor activity, DRAM bandwidth)", why)
            d.gpm = False
            return {}
        d.gpm_samples = [s2, s1]  # the newer sample is the next interval's start
        d.gpm_t = after
        out: dict[str, float] = {}
        for i, m in enumerate(ids):
            met = mg.metrics[i]
            if getattr(met, "nvmlReturn", 0) != 0:
                continue
            v = float(met.value)
            if v != v:  # NaN
                continue
            out[GPM_METRICS[m]] = v
        return out

    def _counters(self, d: Device, now: float, slow: bool = True, links: bool = True) -> dict[str, float]:
        """Instantaneous power every tick (unless it comes from the driver's buffer); on slow ticks (every `slow_every_s`) HBM temperature and, where
        GPM does not give them, PCIe and NVLink rates (GB/s) from byte counters (deltas against the previous
        read). Measured on an H200: the power field costs ~5 µs, but per-link NVLink throughput fields
        ~0.7 ms each (18 links × 2 = 26 ms a batch), so those never run on every tick."""
        ids: list[Any] = [] if d.power_buf else [FI_POWER_INSTANT]
        if slow:
            ids.append(FI_MEMORY_TEMP)
        if links:
            if not d.gpm:
                ids += [FI_PCIE_TX, FI_PCIE_RX]
                for link in range(d.nvlinks):
                    ids.append((FI_NVLINK_TX, link))
                    ids.append((FI_NVLINK_RX, link))
        if not ids or self._off(d, "field values"):
            return {}
        fv = self._fields(d, ids)
        out: dict[str, float] = {}
        if FI_POWER_INSTANT in fv:
            out["_power_instant_w"] = fv[FI_POWER_INSTANT] / 1000.0
        elif ("err", FI_POWER_INSTANT) in fv:
            self._unavail(d, "instantaneous power", "Not Supported", "using NVML's 1-s average power")
        if FI_MEMORY_TEMP in fv:
            out["hbm_temp_c"] = fv[FI_MEMORY_TEMP]
        elif ("err", FI_MEMORY_TEMP) in fv:
            self._unavail(d, "memory temperature", "Not Supported")

        def rate(key: str, value: float | None, ts_us: float, scale: float) -> float | None:
            if value is None:
                return None
            t = ts_us / 1e6 if ts_us else now
            prev = d.last_counters.get(key)
            d.last_counters[key] = (t, value)
            if prev is None or t <= prev[0] or value < prev[1]:
                return None
            return (value - prev[1]) * scale / (t - prev[0]) / 1e9

        for fid, name in ((FI_PCIE_TX, "pcie_tx_gbps"), (FI_PCIE_RX, "pcie_rx_gbps")):
            if fid in fv:
                r = rate(name, fv[fid], fv.get(("ts", fid), 0.0), 1.0)
                if r is not None:
                    out[name] = r
            elif ("err", fid) in fv:
                self._unavail(d, f"PCIe counters ({name})", "Not Supported", "GPM's PCIe rate used where supported")
        if d.nvlinks and links and not d.gpm:
            for fid, name in ((FI_NVLINK_TX, "nvlink_tx_gbps"), (FI_NVLINK_RX, "nvlink_rx_gbps")):
                tot = 0.0
                got = 0
                ts = 0.0
                for link in range(d.nvlinks):
                    k = (fid, link)
                    if k in fv:
                        tot += fv[k]
                        ts = max(ts, fv.get(("ts", k), 0.0))
                        got += 1
                if got:
                    r = rate(name, tot, ts, 1024.0)  # KiB counters
                    if r is not None:
                        out[name] = r
                else:
                    self._unavail(d, f"NVLink counters ({name})", "Not Supported", "GPM's NVLink rate used where supported")
        return out

    def read_energy(self, now: float | None = None) -> dict[str, float]:
        """Energy (J) per device since open(): the counter where offered, else integrated power."""
        now = self.clock() if now is None else now
        out: dict[str, float] = {}
        for d in self.devices:
            if d.energy0_mj is not None and not self._off(d, "energy counter"):
                e = self._call(d, "energy counter", self.nv.nvmlDeviceGetTotalEnergyConsumption, d.parent,
                               instead="energy integrated from power instead")
                if e is not None:
                    d.energy_last_j = (float(e) - d.energy0_mj) / 1000.0
                    d.energy_t = now
                    out[d.uuid] = d.energy_last_j
                    continue
            out[d.uuid] = d.integrated_j
        return out

    # -- power from the driver's buffer
    def _power_buffer_init(self, d: Device, now: float) -> None:
        """Use the driver's own power samples (`nvmlDeviceGetSamples(NVML_TOTAL_POWER_SAMPLES)`) when it
        keeps them: on an H200 they come every 20 ms and match the instantaneous-power field (median
        difference 1.3 W), and draining them once a second costs about half of polling that field 10
        times (bench/nvml_sources.py). Anything else (no buffer, an error) → poll the field per tick."""
        fn = getattr(self.nv, "nvmlDeviceGetSamples", None)
        if fn is None:
            return
        try:
            _vt, smp = fn(d.parent, SAMPLES_POWER, 0)
        except Exception:
            return
        if not smp:
            return
        d.power_buf = True
        d.power_ts_us = max(int(x.timeStamp) for x in smp)  # history from before open() is not ours
        d.drain_t = now
        d.fast_power = _PowerDrain.build(self.nv, d.parent)

    def _drain_power(self, d: Device, now: float) -> list[dict[str, Any]]:
        """Give each waiting tick the mean of the buffered power samples in its window (previous tick,
        this tick]; a tick whose window holds none takes the nearest sample within one interval. Returns
        the ticks, now complete."""
        d.drain_t = now
        got = d.fast_power.read(d.power_ts_us) if d.fast_power is not None else None
        if got is None:  # no fast path, or it hit anything but success / nothing new: the wrapper says why
            try:
                vt, smp = self.nv.nvmlDeviceGetSamples(d.parent, SAMPLES_POWER, d.power_ts_us)
                attr = _VALUE_ATTR.get(vt, "uiVal")
                got = [(int(x.timeStamp), float(getattr(x.sampleValue, attr))) for x in smp]
            except Exception as e:
                if _err_code(e) != ERR_NOT_FOUND:  # "Not Found" = no new sample since the last drain
                    self._unavail(d, "power sample buffer", _err_text(e), "polling instantaneous power instead")
                    d.power_buf = False
                got = []
        pts = d.power_pts
        newest = d.power_ts_us
        for ts, mw in got:
            if ts > d.power_ts_us:
                pts.append((ts / 1e6, mw / 1000.0))
                if ts > newest:
                    newest = ts
        if newest != d.power_ts_us:
            pts.sort()
            d.power_ts_us = newest
        ticks, d.pending = d.pending, []
        prev = d.last_tick_t
        i, n = 0, len(pts)
        for s in ticks:
            t = s["t"]
            lo = prev if prev is not None else t - self.interval_s
            tot, cnt = 0.0, 0
            while i < n and pts[i][0] <= t:
                if pts[i][0] > lo:
                    tot += pts[i][1]
                    cnt += 1
                i += 1
            if cnt:
                power: float | None = tot / cnt
            else:
                near = [pts[j] for j in (i - 1, i) if 0 <= j < n and abs(pts[j][0] - t) <= self.interval_s]
                power = min(near, key=lambda p: abs(p[0] - t))[1] if near else None
            if power is not None:
                self._apply_power(d, s, power, t)
            prev = t
        d.power_pts = pts[max(0, i - 1):]  # the last sample taken stays for the next tick's nearest lookup
        d.last_tick_t = prev
        return ticks

    def _apply_power(self, d: Device, s: dict[str, Any], power: float, t: float) -> None:
        s["gpu_power_w"] = power
        if d.power_limit_w:
            s["gpu_power_limit_w"] = d.power_limit_w
            s["gpu_power_frac"] = power / d.power_limit_w
        if d.energy0_mj is None:
            if d.last_power is not None:
                t0, p0 = d.last_power
                d.integrated_j += (t - t0) * (p0 + power) / 2
            s["energy_j"] = d.integrated_j
        d.last_power = (t, power)

    # -- one tick
    def sample(self, now: float | None = None, flush: bool = False) -> list[dict[str, Any]]:
        """Read one tick for every run GPU; returns the samples that are complete. With power from the
        driver's buffer, ticks wait for the next drain (every `power_drain_s`) and come out together;
        `flush=True` (a point's end, the last tick) drains now so nothing is held back."""
        now = self.clock() if now is None else now
        nv = self.nv
        call = self._call
        out: list[dict[str, Any]] = []
        for d in self.devices:
            if d.dead:
                continue
            s: dict[str, Any] = {"t": now, "gpu": d.index, "uuid": d.uuid}
            if d.label and d.label != str(d.index):
                s["as"] = d.label
            p, h = d.parent, d.handle
            slow = now - d.slow_t >= self.slow_every_s
            if slow:
                d.slow_t = now
            links = now - d.links_t >= self.links_every_s
            if links:
                d.links_t = now
            ctr = self._counters(d, now, slow, links) if (slow or links or not d.power_buf) else {}
            inst = ctr.pop("_power_instant_w", None)
            if not d.power_buf and (slow or inst is None):  # buffered power needs no 1-s average beside it
                pw = call(d, "power", nv.nvmlDeviceGetPowerUsage, p)
                if pw is not None:
                    s["gpu_power_avg_w"] = pw / 1000.0
            s.update(ctr)
            hot = d.fast.read() if d.fast is not None else None
            if hot is not None:  # all three calls succeeded: no per-call wrapper, error or notice work
                s["gpu_util"], s["mem_util"], s["sm_clock_mhz"], s["throttle"] = hot
            else:
                if not d.mig:
                    u = call(d, "utilization", nv.nvmlDeviceGetUtilizationRates, h)
                    if u is not None:
                        s["gpu_util"] = float(u.gpu)
                        s["mem_util"] = float(u.memory)
                sm = call(d, "SM clock", nv.nvmlDeviceGetClockInfo, p, 1)
                if sm is not None:
                    s["sm_clock_mhz"] = float(sm)
                thr = call(d, "clock-event reasons", _clock_events, nv, p)
                if thr is not None:
                    s["throttle"] = int(thr)
            if slow:
                mc = call(d, "memory clock", nv.nvmlDeviceGetClockInfo, p, 2)
                if mc is not None:
                    s["mem_clock_mhz"] = float(mc)
                mem = call(d, "memory used", nv.nvmlDeviceGetMemoryInfo, h)
                if mem is not None:
                    s["mem_used_gib"] = float(mem.used) / (1 << 30)
                t = call(d, "temperature", _temperature, nv, p)
                if t is not None:
                    s["gpu_temp_c"] = float(t)
            if d.gpm:
                gpm = self._gpm_read(d, now, force=flush)
                if gpm:
                    for k in GPM_FIELDS:
                        if k in gpm:
                            s[k] = gpm[k]
                    if "gpm_pcie_tx" in gpm:
                        s["pcie_tx_gbps"] = gpm["gpm_pcie_tx"] * MIB / 1e9
                        s["pcie_rx_gbps"] = gpm.get("gpm_pcie_rx", 0.0) * MIB / 1e9
                    if "gpm_nvlink_tx" in gpm and d.nvlinks:
                        s["nvlink_tx_gbps"] = gpm["gpm_nvlink_tx"] * MIB / 1e9
                        s["nvlink_rx_gbps"] = gpm.get("gpm_nvlink_rx", 0.0) * MIB / 1e9
            if "nvlink_tx_gbps" in s:
                s["nvlink_gbps"] = s["nvlink_tx_gbps"] + s.get("nvlink_rx_gbps", 0.0)
            if d.energy0_mj is not None:
                if now - d.energy_t >= self.energy_every_s and (d.uuid, "energy counter") not in self.unavailable:
                    e = call(d, "energy counter", nv.nvmlDeviceGetTotalEnergyConsumption, p,
                             instead="energy integrated from power instead")
                    if e is not None:
                        d.energy_last_j = (float(e) - d.energy0_mj) / 1000.0
                        d.energy_t = now
                if d.energy_last_j is not None:
                    s["energy_j"] = d.energy_last_j
            if d.power_buf:
                d.pending.append(s)
                if flush or now - d.drain_t >= self.power_drain_s:
                    out.extend(self._drain_power(d, now))
                if not d.power_buf:  # the buffer failed just now: later ticks poll the field
                    d.slow_t = -1e18
                continue
            power = inst if inst is not None else s.get("gpu_power_avg_w")
            if power is not None:
                self._apply_power(d, s, power, now)
            elif d.energy0_mj is None:
                s["energy_j"] = d.integrated_j
            out.append(s)
        return out

    def flush(self) -> list[dict[str, Any]]:
        """Every tick still waiting for its power, completed now."""
        now = self.clock()
        out: list[dict[str, Any]] = []
        for d in self.devices:
            if d.power_buf and d.pending:
                out.extend(self._drain_power(d, now))
        return out

    def loop(self, on_samples: Callable[[list[dict[str, Any]]], None], stop: Any, count: int | None = None) -> None:
        """Sample every `interval_s` until `stop` (a threading.Event) is set or `count` ticks ran.
        Ticks keep absolute deadlines, so a slow tick does not shift the next ones."""
        n = 0
        nxt = time.monotonic()
        while not stop.is_set():
            n += 1
            last = count is not None and n >= count
            batch = self.sample(flush=last)
            if batch:
                on_samples(batch)
            if last:
                return
            nxt += self.interval_s
            delay = nxt - time.monotonic()
            if delay < 0:
                nxt = time.monotonic()
                delay = 0
            if stop.wait(delay):
                break
        rest = self.flush()
        if rest:
            on_samples(rest)


_VALUE_ATTR = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _field_value(v: Any) -> float:
    return float(getattr(v.value, _VALUE_ATTR.get(getattr(v, "valueType", 0), "dVal")))


class _HotReads:
    """The three calls every tick makes (utilization, SM clock, clock-event reasons) straight through
    ctypes with buffers allocated once. On an H200 at 10 Hz the tick's Python work, not the driver, was
    most of the sampler's CPU (bench/telemetry_bench.py): pynvml's wrappers build a struct, look up the
    function and check the status per call, ~15 µs each on a cold cache. Any non-success status →
    None, and the tick takes the ordinary path, which raises, notices and marks the field unavailable.
    Only for the real module (the fake has no function pointers)."""

    __slots__ = ("h", "fu", "fc", "fe", "u", "c", "e", "ru", "rc", "re")
    h: Any
    fu: Any
    fc: Any
    fe: Any
    u: Any
    c: Any
    e: Any
    ru: Any
    rc: Any
    re: Any

    @classmethod
    def build(cls, nv: Any, handle: Any) -> "_HotReads | None":
        get = getattr(nv, "_nvmlGetFunctionPointer", None)
        ut = getattr(nv, "c_nvmlUtilization_t", None)
        if get is None or ut is None:
            return None
        try:
            self = cls()
            self.h = handle
            self.fu = get("nvmlDeviceGetUtilizationRates")
            self.fc = get("nvmlDeviceGetClockInfo")
            self.fe = get("nvmlDeviceGetCurrentClocksEventReasons")
            self.u, self.c, self.e = ut(), ctypes.c_uint(), ctypes.c_ulonglong()
            self.ru, self.rc, self.re = ctypes.byref(self.u), ctypes.byref(self.c), ctypes.byref(self.e)
            return self if self.read() is not None else None
        except Exception:
            return None

    def read(self) -> tuple[float, float, float, int] | None:
        if self.fu(self.h, self.ru) or self.fc(self.h, 1, self.rc) or self.fe(self.h, self.re):
            return None
        u = self.u
        return float(u.gpu), float(u.memory), float(self.c.value), int(self.e.value)


class _PowerDrain:
    """`nvmlDeviceGetSamples(NVML_TOTAL_POWER_SAMPLES)` in ONE driver call into a buffer allocated
    once. pynvml's wrapper calls the driver twice per drain (once for the count, once for the data)
    and builds an object per sample; the driver keeps at most ~120 power samples, so 256 slots always
    suffice. `read` → [(µs, mW)], [] when nothing is new, None on any other status (the caller then
    takes the wrapper, which raises and notices). Only for the real module."""

    __slots__ = ("h", "fn", "buf", "n", "vt", "rbuf", "rn", "rvt", "cap", "ull")
    h: Any
    fn: Any
    buf: Any
    n: Any
    vt: Any
    rbuf: Any
    rn: Any
    rvt: Any
    cap: Any
    ull: Any

    SLOTS = 256

    @classmethod
    def build(cls, nv: Any, handle: Any) -> "_PowerDrain | None":
        get = getattr(nv, "_nvmlGetFunctionPointer", None)
        st = getattr(nv, "c_nvmlSample_t", None)
        if get is None or st is None:
            return None
        try:
            self = cls()
            self.h = handle
            self.fn = get("nvmlDeviceGetSamples")
            self.cap = cls.SLOTS
            self.buf = (st * cls.SLOTS)()
            self.n, self.vt = ctypes.c_uint(0), ctypes.c_int(0)
            self.rbuf, self.rn, self.rvt = self.buf, ctypes.byref(self.n), ctypes.byref(self.vt)
            self.ull = ctypes.c_ulonglong
            return self
        except Exception:
            return None

    def read(self, last_us: int) -> list[tuple[int, float]] | None:
        self.n.value = self.cap
        ret = self.fn(self.h, SAMPLES_POWER, self.ull(last_us), self.rvt, self.rn, self.rbuf)
        if ret == ERR_NOT_FOUND:
            return []
        if ret != 0:
            return None
        attr = _VALUE_ATTR.get(self.vt.value, "uiVal")
        buf = self.buf
        return [(int(buf[i].timeStamp), float(getattr(buf[i].sampleValue, attr))) for i in range(self.n.value)]


def _temperature(nv: Any, h: Any) -> Any:
    fn = getattr(nv, "nvmlDeviceGetTemperatureV", None)
    if fn is not None:
        try:
            return fn(h, 0)
        except TypeError:
            pass
    return nv.nvmlDeviceGetTemperature(h, 0)


def _clock_events(nv: Any, h: Any) -> Any:
    fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
    return fn(h)
