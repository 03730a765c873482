"""`optlog.yaml`: the workspace's settings, as typed models.

One place for configuration. Unknown keys are errors (a typo must not pass silently); every error
names the file, line and field.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model, field_validator

from optlog.core.text import windows_reserved
from optlog.paths import DEFAULT_PLAN_PREFIX, Workspace
from optlog.yamlio import load_model

PLAN_PREFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


class _Strict(BaseModel):
    # .inf / .nan are no interval, peak or limit: refused like any other impossible value
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# Values that reach an `ssh` or `sbatch` command line: one that starts with '-' would be read as an
# option (`-oProxyCommand=…`), so names are plain words.
_WORD_RE = re.compile(r"[A-Za-z0-9_\[][A-Za-z0-9_.@%:,\[\]/-]*")


def _word(v: str | None) -> str | None:
    if v is not None and not _WORD_RE.fullmatch(v):
        raise ValueError(f"{v!r} is not a plain name (letters, digits, '.', '_', '-', ':', '@'; "
                         "not starting with '-')")
    return v


Word = Annotated[str, AfterValidator(_word)]

# the base of an executor kind's section model (an entry of optlog.yaml `executors.<kind>`)
Section = _Strict


class PlansSettings(_Strict):
    prefix: str = DEFAULT_PLAN_PREFIX

    @field_validator("prefix")
    @classmethod
    def _prefix_ok(cls, v: str) -> str:
        if not PLAN_PREFIX_RE.match(v) or windows_reserved(v):
            raise ValueError("must be letters, digits, '.', '_' or '-' (it names a folder and files), and no "
                             "name Windows keeps for a device (con, nul, com1, …)")
        return v


class GpuSpec(_Strict):
    """Ceilings of one GPU kind: datasheet values or what `optlog calibrate` measured."""

    count: int | None = Field(default=None, ge=1)
    peak_tflops: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    mem_bw_gbps: float | None = Field(default=None, gt=0)
    interconnect_gbps: float | None = Field(default=None, gt=0)
    power_limit_w: float | None = Field(default=None, gt=0)
    source: str | None = None
    measured: dict[str, Any] = Field(default_factory=dict)


class HardwareSettings(_Strict):
    default: str | None = None
    gpus: dict[str, GpuSpec] = Field(default_factory=dict)


class ExecutorSettings(_Strict):
    """optlog.yaml `executors:`: one section per registered executor kind, each typed by its kind
    (optlog.runs.executors.registry). The config sits below the executors, so `load_config` is
    handed their sections; this base (no sections) is what a Config made without them holds."""

    def section(self, name: str) -> Any:
        """The section of executor kind `name` (its hosts, partitions, …); {} when none."""
        return getattr(self, name, None) or {}


class TelemetrySettings(_Strict):
    enabled: bool = True
    interval_s: float = Field(default=0.5, gt=0)
    warmup_s: float = Field(default=0.0, ge=0)
    gpm: bool = True
    gpm_interval_s: float = Field(default=10.0, ge=0.1)  # GPM window; each read costs ~2.3 ms CPU (H200)
    gpus: str | list[str | int] | None = None      # NVML indices or UUIDs; default: the run's CUDA_VISIBLE_DEVICES
    scrape: str | None = None                       # a Prometheus /metrics URL scraped during each point
    scrape_interval_s: float = Field(default=1.0, gt=0)
    remote: str = Field(default="auto", pattern="^(auto|optlog|nvidia-smi)$")
    optlog: str | None = None                       # the optlog command on remote hosts (for `telemetry sample`)


class HostLoadSettings(_Strict):
    """When a launched run counts as measured under load (runs.hostload): labelled `loaded=true`."""

    # the run's processes got less than this share of the CPU time they asked for (runs.treeshare); null: never
    min_cpu_share: float | None = Field(default=0.9, ge=0, le=1)
    # busy CPUs before the run / CPUs (the machine, not the run: off by default, it flagged every run
    # on a small shared machine); null: never
    busy_cpus_fraction: float | None = Field(default=None, ge=0)
    gpu_processes: bool = True                                   # another process on the run's GPUs counts as load
    window_s: float = Field(default=0.1, ge=0, le=5)             # how long busy CPUs are measured, before and after


class TuneSettings(_Strict):
    """optlog tune (docs/tune.md): how a dead worker's trial is noticed and run again."""

    heartbeat_s: int = Field(default=10, ge=1)  # a running trial's heartbeat in the study's storage
    grace_s: int = Field(default=60, ge=1)      # no heartbeat this long: the trial is failed and retried
    remeasure: int = Field(default=3, ge=0, le=100)  # repeats of the best and the runner-up before naming the best


class Config(_Strict):
    # The workspace's identity: keeps its rows apart from other workspaces on one database server
    # (each gets its own PostgreSQL schema). Written by `optlog init`; do not copy it to another workspace.
    id: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}$")
    name: str = "optlog"
    plans: PlansSettings = Field(default_factory=PlansSettings)
    hardware: HardwareSettings = Field(default_factory=HardwareSettings)
    executors: ExecutorSettings = Field(default_factory=ExecutorSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    host_load: HostLoadSettings = Field(default_factory=HostLoadSettings)
    tune: TuneSettings = Field(default_factory=TuneSettings)

    def ceilings(self) -> dict[str, float]:
        """Names usable in prediction expressions: `peak_tflops` (default dtype of the default GPU),
        `peak_tflops_<dtype>`, `mem_bw_gbps`, `interconnect_gbps`, `power_limit_w`."""
        out: dict[str, float] = {}
        gpus = self.hardware.gpus
        kind = self.hardware.default or (next(iter(gpus)) if gpus else None)
        spec = gpus.get(kind) if kind else None
        if spec is None:
            return out
        for dtype, v in spec.peak_tflops.items():
            out[f"peak_tflops_{dtype}"] = float(v)
        if spec.peak_tflops:
            first = "bf16" if "bf16" in spec.peak_tflops else next(iter(spec.peak_tflops))
            out["peak_tflops"] = float(spec.peak_tflops[first])
        for k in ("mem_bw_gbps", "interconnect_gbps", "power_limit_w"):
            v = getattr(spec, k)
            if v is not None:
                out[k] = float(v)
        # what `optlog calibrate` measured, beside any datasheet values (the diagnosis prefers these)
        meas = spec.measured or {}
        for dtype, v in (meas.get("peak_tflops") or {}).items():
            try:
                out[f"measured_peak_tflops_{dtype}"] = float(v)
            except (TypeError, ValueError):
                pass
        for k in ("mem_bw_gbps", "allreduce_busbw_gbps", "dram_counter_full_gbps", "link_gbps"):
            if isinstance(meas.get(k), (int, float)):
                out[f"measured_{k}"] = float(meas[k])
        if spec.mem_bw_gbps is not None:  # the theoretical figure GPM's DRAM % is a share of (diagnosis scale)
            out["datasheet_mem_bw_gbps"] = float(spec.mem_bw_gbps)
        # where nobody wrote a datasheet value, the plain names read the measurement (calibrate never
        # writes a measurement into the datasheet keys themselves)
        for k in list(out):
            if k.startswith("measured_peak_tflops_"):
                out.setdefault(k.replace("measured_", "", 1), out[k])
        if "measured_mem_bw_gbps" in out:
            out.setdefault("mem_bw_gbps", out["measured_mem_bw_gbps"])
        if "peak_tflops" not in out and any(k.startswith("peak_tflops_") for k in out):
            dts = {k[len("peak_tflops_"):] for k in out if k.startswith("peak_tflops_")}
            out["peak_tflops"] = out[f"peak_tflops_{'bf16' if 'bf16' in dts else sorted(dts)[0]}"]
        return out


def config_model(executors: Mapping[str, Any]) -> type[Config]:
    """The model of optlog.yaml with these executor sections (name → type; the registry's
    `config_sections()`)."""
    return _config_model(tuple(executors.items()))


@functools.lru_cache(maxsize=8)
def _config_model(sections: tuple[tuple[str, Any], ...]) -> type[Config]:
    fields: dict[str, Any] = {name: (ann, Field(default_factory=dict)) for name, ann in sections}
    executors = create_model("ExecutorSettings", __base__=ExecutorSettings, **fields)
    return create_model("Config", __base__=Config, executors=(executors, Field(default_factory=executors)))


def load_config(ws: Workspace, executors: Mapping[str, Any]) -> Config:
    """optlog.yaml, validated; `executors` gives the type of each section of `executors:` by kind
    (optlog.runs.executors.registry.config_sections())."""
    return load_model(config_model(executors), ws.config_file, ws.rel(ws.config_file))


def default_config_text(name: str, prefix: str, identity: str | None = None) -> str:
    ident = f"id: {identity}  # this workspace's identity (keeps it apart on a shared database)\n" if identity else ""
    return f"""\
# optlog workspace settings. Unknown keys are errors.
{ident}name: {name}
plans:
  prefix: {prefix}          # plans render to {prefix}/{prefix}-NN.md
hardware:
  default: null            # the GPU kind whose ceilings predictions use (peak_tflops, mem_bw_gbps, ...)
  gpus: {{}}                 # e.g. h200: {{peak_tflops: {{bf16: 989}}, mem_bw_gbps: 4800, power_limit_w: 700}}
executors:
  ssh: {{}}                  # e.g. gpu-box: {{host: gpu-box.example, user: me}}
  slurm: {{}}                # e.g. gpu: {{partition: gpu, gres: "gpu:8", time: "02:00:00"}}
telemetry:
  interval_s: 0.5
  warmup_s: 0
"""
