"""The telemetry fields a sample may carry: one vocabulary for NVML, nvidia-smi and stored chunks.

A sample is a dict `{"t": unix seconds, "gpu": index, "uuid": ..., FIELD: value, ...}`; a field that
is not available is simply absent. These names are also the stems of the per-run metrics
(`gpu_power_w_mean`, `tensor_active_p95`, ...; see telemetry.summary).
"""

from __future__ import annotations

# name -> (unit, description)
FIELDS: dict[str, tuple[str, str]] = {
    "gpu_power_w": ("W", "board power over the tick: mean of the driver's 20-ms power samples where it keeps them, "
                    "else the instantaneous field, else NVML's 1-s average"),
    "gpu_power_avg_w": ("W", "NVML's 1-second average power (nvmlDeviceGetPowerUsage on Ampere+)"),
    "gpu_power_limit_w": ("W", "enforced power limit"),
    "gpu_power_frac": ("", "gpu_power_w / gpu_power_limit_w"),
    "energy_j": ("J", "energy since the sampler started (total-energy counter deltas)"),
    "gpu_util": ("%", "util.gpu: time any kernel ran (NOT how busy the SMs are)"),
    "mem_util": ("%", "util.memory: time the memory controller was busy"),
    "sm_clock_mhz": ("MHz", "SM clock"),
    "mem_clock_mhz": ("MHz", "memory clock"),
    "mem_used_gib": ("GiB", "device memory used"),
    "gpu_temp_c": ("°C", "GPU temperature"),
    "hbm_temp_c": ("°C", "memory (HBM) temperature"),
    "throttle": ("bits", "clock-event (throttle) reasons bitmask"),
    "pcie_tx_gbps": ("GB/s", "PCIe transmit rate (non-blocking counters or GPM)"),
    "pcie_rx_gbps": ("GB/s", "PCIe receive rate"),
    "nvlink_tx_gbps": ("GB/s", "NVLink transmit rate, all links"),
    "nvlink_rx_gbps": ("GB/s", "NVLink receive rate, all links"),
    "nvlink_gbps": ("GB/s", "NVLink tx + rx"),
    "gr_active": ("%", "GPM: time any graphics/compute engine was active"),
    "sm_active": ("%", "GPM: SMs busy (at least one warp resident)"),
    "sm_occupancy": ("%", "GPM: resident warps vs the theoretical maximum"),
    "tensor_active": ("%", "GPM: time the tensor pipes were busy"),
    "dram_bw_util": ("%", "GPM: DRAM bandwidth used vs the theoretical maximum"),
    # the pipes (issue 43): which unit a kernel that is neither tensor- nor memory-bound keeps busy
    "hmma_active": ("%", "GPM: time the SMs ran half-precision (FP16/BF16) tensor operations"),
    "imma_active": ("%", "GPM: time the SMs ran integer tensor operations"),
    "int_active": ("%", "GPM: time the SMs ran integer operations (the integer pipe: dequantisation, indexing)"),
    "fp16_active": ("%", "GPM: time the SMs ran FP16 (non-tensor) operations"),
    "fp32_active": ("%", "GPM: time the SMs ran FP32 (non-tensor) operations"),
    "fp64_active": ("%", "GPM: time the SMs ran FP64 operations"),
}

# fields summarised into mean/p5/p50/p95/max metrics (throttle and energy are handled apart)
SUMMARISED = [f for f in FIELDS if f not in ("throttle", "energy_j", "gpu_power_limit_w")]

# clock-event reason bits (nvml.h nvmlClocksEventReason*)
THROTTLE_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "app_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clock",
}

GPM_FIELDS = ("gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_bw_util", "hmma_active", "imma_active",
              "int_active", "fp16_active", "fp32_active", "fp64_active")
# the non-tensor pipes and the clock-event reasons a diagnosis reads (a share of the phase,
# `throttle_<name>_steady`): core.bounds' vocabulary
from optlog.core.bounds import PIPE_FIELDS, THROTTLE_EVIDENCE  # noqa: E402


def throttle_names(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]
