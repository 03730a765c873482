"""nvidia-smi as a telemetry source for hosts without optlog: one long-lived
`nvidia-smi --query-gpu=… --format=csv,noheader,nounits -lms N` stream (one separate call costs
~30 ms, a loop costs nothing extra), parsed into the same samples as the NVML sampler, plus
`nvidia-smi dmon` for PCIe rates and, where the driver offers `--gpm-metrics`, GPM metrics.

What this path cannot give (said once, by `missing_notice()`): the energy counter (energy is
integrated from power.draw.instant), NVLink rates, and without dmon's GPM metrics: SM occupancy,
SM activity, tensor activity, DRAM bandwidth.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

# query field -> (sample field, scale)
QUERY: list[tuple[str, str | None, float]] = [
    ("timestamp", None, 1.0),
    ("index", "gpu", 1.0),
    ("uuid", "uuid", 1.0),
    ("power.draw.instant", "gpu_power_w", 1.0),
    ("power.draw", "gpu_power_avg_w", 1.0),
    ("enforced.power.limit", "gpu_power_limit_w", 1.0),
    ("utilization.gpu", "gpu_util", 1.0),
    ("utilization.memory", "mem_util", 1.0),
    ("clocks.sm", "sm_clock_mhz", 1.0),
    ("clocks.mem", "mem_clock_mhz", 1.0),
    ("temperature.gpu", "gpu_temp_c", 1.0),
    ("temperature.memory", "hbm_temp_c", 1.0),
    ("memory.used", "mem_used_gib", 1.0 / 1024.0),
    ("clocks_event_reasons.active", "throttle", 1.0),
]
# a conservative list for old drivers (an unknown field makes the whole query fail)
QUERY_SAFE = ["timestamp", "index", "uuid", "power.draw", "enforced.power.limit", "utilization.gpu",
              "utilization.memory", "clocks.sm", "clocks.mem", "temperature.gpu", "memory.used",
              "clocks_throttle_reasons.active"]
ALIASES = {"clocks_throttle_reasons.active": "clocks_event_reasons.active"}
NA = {"", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]", "[GPU requires reset]"}

# dmon column -> (sample field, scale)
DMON: dict[str, tuple[str, float]] = {
    "pwr": ("gpu_power_avg_w", 1.0), "gtemp": ("gpu_temp_c", 1.0), "mtemp": ("hbm_temp_c", 1.0),
    "sm": ("gpu_util", 1.0), "mem": ("mem_util", 1.0), "mclk": ("mem_clock_mhz", 1.0),
    "pclk": ("sm_clock_mhz", 1.0), "rxpci": ("pcie_rx_gbps", 1e-3), "txpci": ("pcie_tx_gbps", 1e-3),
    "fb": ("mem_used_gib", 1.0 / 1024.0),
    # GPM metrics (`--gpm-metrics 1,2,3,5,10`); column names as nvidia-smi 580.159 prints them (unit "GPM:%")
    "gract": ("gr_active", 1.0), "smutil": ("sm_active", 1.0), "smocc": ("sm_occupancy", 1.0),
    "mmaact": ("tensor_active", 1.0), "dram": ("dram_bw_util", 1.0),
}
GPM_IDS = "1,2,3,5,10"


def query_fields(available: set[str] | None = None) -> list[str]:
    """The query fields to ask for; with `available` (from `--help-query-gpu`), only those offered."""
    names = [q for q, _f, _s in QUERY]
    if available is None:
        return names
    out = [n for n in names if n in available]
    if "clocks_event_reasons.active" not in out and "clocks_throttle_reasons.active" in available:
        out.append("clocks_throttle_reasons.active")
    return out


def help_fields(help_text: str) -> set[str]:
    """Field names listed by `nvidia-smi --help-query-gpu` (lines like `"power.draw" or "x"`)."""
    out: set[str] = set()
    for line in help_text.splitlines():
        if line.startswith('"'):
            for part in line.split(" or "):
                part = part.strip()
                if part.startswith('"') and part.endswith('"'):
                    out.add(part.strip('"'))
    return out


def query_cmd(interval_ms: int, fields: list[str] | None = None, gpus: str | None = None) -> list[str]:
    cmd = ["nvidia-smi", "--query-gpu=" + ",".join(fields or query_fields()), "--format=csv,noheader,nounits",
           f"-lms={max(1, int(interval_ms))}"]
    if gpus:
        cmd.insert(1, f"--id={gpus}")
    return cmd


def dmon_cmd(interval_s: int = 1, gpm: bool = True, gpus: str | None = None) -> list[str]:
    cmd = ["nvidia-smi", "dmon", "-s", "pucmt", "-d", str(max(1, int(interval_s)))]
    if gpm:
        cmd += ["--gpm-metrics", GPM_IDS]
    if gpus:
        cmd += ["-i", gpus]
    return cmd


def _num(text: str) -> float | None:
    t = text.strip()
    if t in NA or t.startswith("["):
        return None
    if t.startswith("0x"):
        return float(int(t, 16))
    try:
        return float(t)
    except ValueError:
        return None


def parse_query_line(line: str, fields: list[str], now: float | None = None) -> dict[str, Any] | None:
    """One CSV line of the query stream → a sample (None for a blank or malformed line)."""
    parts = [p.strip() for p in line.rstrip("\n").split(",")]
    if len(parts) != len(fields):
        return None
    table = {q: (f, s) for q, f, s in QUERY}
    s: dict[str, Any] = {}
    for name, raw in zip(fields, parts):
        name = ALIASES.get(name, name)
        if name == "timestamp":
            try:
                s["t"] = datetime.strptime(raw, "%Y/%m/%d %H:%M:%S.%f").timestamp()
            except ValueError:
                pass
            continue
        if name == "uuid":
            s["uuid"] = raw
            continue
        f, scale = table.get(name, (None, 1.0))
        if f is None:
            continue
        v = _num(raw)
        if v is None:
            continue
        s[f] = int(v) if f in ("gpu", "throttle") else v * scale
    if "gpu" not in s:
        return None
    if now is not None or "t" not in s:
        s["t"] = now if now is not None else time.time()
    if "gpu_power_w" not in s and "gpu_power_avg_w" in s:
        s["gpu_power_w"] = s["gpu_power_avg_w"]
    if "gpu_power_w" in s and s.get("gpu_power_limit_w"):
        s["gpu_power_frac"] = s["gpu_power_w"] / s["gpu_power_limit_w"]
    return s


class DmonParser:
    """`nvidia-smi dmon` text: `# gpu pwr gtemp …` header, `# Idx W C …` units, then rows."""

    def __init__(self) -> None:
        self.cols: list[str] = []

    def feed(self, line: str, now: float | None = None) -> dict[str, Any] | None:
        line = line.strip()
        if not line:
            return None
        if line.startswith("#"):
            toks = line[1:].split()
            if toks and toks[0].lower() in ("gpu", "idx") and toks[0].lower() == "gpu":
                self.cols = toks
            return None
        toks = line.split()
        if not self.cols or len(toks) != len(self.cols):
            return None
        s: dict[str, Any] = {"t": time.time() if now is None else now}
        for c, raw in zip(self.cols, toks):
            if c.lower() == "gpu":
                try:
                    s["gpu"] = int(raw)
                except ValueError:
                    return None
                continue
            key = c.split(":")[-1]
            f = DMON.get(c) or DMON.get(key)
            v = _num(raw) if raw != "-" else None
            if v is None:
                continue
            if f is None:
                s[f"dmon_{key}"] = v
            else:
                s[f[0]] = v * f[1]
        if "nvlink_tx_gbps" in s:
            s["nvlink_gbps"] = s["nvlink_tx_gbps"] + s.get("nvlink_rx_gbps", 0.0)
        return s


def missing_notice(fields: list[str], gpm: bool) -> str:
    have = {f for q, f, _s in QUERY if q in fields or ALIASES.get(q) in fields}
    missing = ["energy counter (energy integrated from power)", "NVLink rates"]
    if "power.draw.instant" not in fields:
        missing.append("instantaneous power (the 1-s average is used)")
    if not gpm:
        missing.append("GPM: sm_occupancy, sm_active, tensor_active, dram_bw_util")
    else:
        missing.append("GPM only through `nvidia-smi dmon --gpm-metrics`, at 1-s resolution, where the driver offers it")
    del have
    return "telemetry through nvidia-smi (optlog not installed on the host): not available: " + "; ".join(missing)
