"""What can bound a run, in one table: the words a hypothesis uses for it, how its throughput scales
along the axes an experiment varies, the evidence that calls it and the lever that moves it (pure).

Read by the diagnosis (core.diagnosis: which bound a point has, its metrics and texts), by
discrimination (core.discriminate: which bound a hypothesis names, and what each predicts along an
axis) and through it by `next`. One place, so that a diagnosis's word and a hypothesis's word are the
same word (issue 43).

The bounds (`Bound.name`), each naming the unit whose time sets the pace:
- **memory**: DRAM bandwidth; efficiency = achieved bytes/s ÷ the calibrated bandwidth.
- **compute**: the tensor cores; efficiency = achieved FLOP/s ÷ the calibrated peak for the model's
  compute type (fp16, bf16, fp8, int8…).
- **pipe**: compute on the CUDA cores, not the tensor cores: one of GPM's pipes (integer, FP32, FP16,
  FP64) is the busiest unit — e.g. the dequantisation of a quantized mat-vec.
- **latency**: the SMs idle between short kernels (launches, synchronisation, too little work in a
  kernel): called on positive evidence (low SM activity, kernels as short as a launch), never from the
  absence of a ceiling.
- **host**: the GPU idles most of the time: the host side (the server's scheduler and sampling, HTTP,
  tokenisation, the client) sets the pace.
- **communication**: the links between GPUs (NVLink/PCIe).

`family` is the older three-word call (compute, memory, latency, communication) a bound also sets as
a metric, so a prediction written as `a.bound_latency > 0.5` keeps its meaning for a host-bound point.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Bound:
    name: str
    title: str                       # "memory-bound"
    unit: str                        # the unit whose time sets the pace
    words: tuple[str, ...]           # how a hypothesis names it (lower case; first bound that matches wins)
    exponent: dict[str, float]       # throughput ∝ axis^k along each axis (batch, split)
    why: dict[str, str]              # the reason for each exponent
    evidence: str                    # what calls it
    lever: str                       # what would move the point off it
    family: str = ""                 # the older word it also sets (bound_<family> = 1)
    also: tuple[str, ...] = field(default_factory=tuple)


# Order matters for reading a hypothesis: the more specific words first (communication before
# compute's "gemm", the non-tensor pipe before compute, host before latency).
TABLE: tuple[Bound, ...] = (
    Bound("communication", "communication-bound", "the links between GPUs (NVLink/PCIe)",
          ("communication", "comm-bound", "allreduce", "all-reduce", "interconnect", "nccl"),
          {"batch": 0.0, "split": -1.0},
          {"batch": "each pass's allreduce grows with the batch: tokens/s stay flat",
           "split": "a larger tensor-parallel group allreduces over more, slower links: throughput falls as tp grows"},
          "link counters (NVLink/PCIe GB/s) near the link's calibrated bandwidth while the SMs wait",
          "less traffic between GPUs (a smaller tensor-parallel group, overlap of communication with compute)",
          "communication"),
    Bound("memory", "memory-bound", "DRAM bandwidth",
          ("memory-bound", "memory bound", "bandwidth-bound", "reading the weights", "memory-bandwidth"),
          {"batch": 1.0, "split": 1.0},
          {"batch": "each pass reads the weights once for the whole batch: tokens/s grow with it",
           "split": "each GPU reads 1/tp of the weights: throughput follows tp"},
          "achieved bytes/s (the estimate, and GPM's DRAM counter on the calibrated scale) is the busiest unit",
          "fewer bytes per token (a larger batch per pass, smaller weights, a smaller KV cache) or, where the "
          "kernels reach a low share of the bandwidth, their memory access (more bytes in flight)",
          "memory"),
    Bound("pipe", "compute-bound on the CUDA cores", "a non-tensor pipe (integer, FP32, FP16, FP64)",
          ("non-tensor", "cuda core", "cuda-core", "dequantis", "dequantiz", "integer pipe", "fp32 pipe",
           "alu-bound", "pipe-bound"),
          {"batch": 1.0, "split": 1.0},
          {"batch": "the weights are dequantised once per pass for the whole batch: tokens/s grow with it",
           "split": "each GPU dequantises 1/tp of the weights: throughput follows tp"},
          "a GPM pipe counter (integer, FP32, FP16, FP64) is the busiest unit, above DRAM and the tensor cores",
          "the kernels: fewer instructions per weight (a cheaper dequantisation, a tensor-core path for the "
          "format, a larger batch per pass)",
          "compute"),
    Bound("compute", "compute-bound on the tensor cores", "the tensor cores",
          ("compute-bound", "compute bound", "arithmetic", "gemm work", "flop", "tensor core"),
          {"batch": 0.0, "split": 1.0},
          {"batch": "the arithmetic grows with the batch: tokens/s stay flat",
           "split": "each GPU's GEMMs shrink as the tensor-parallel degree grows: throughput follows tp"},
          "achieved FLOP/s against the calibrated peak of the compute type is the busiest unit, intensity "
          "above the ridge, the SMs busy",
          "the kernels (tile shapes, autotuning, fused attention) or a lower-precision type with a higher peak",
          "compute"),
    Bound("host", "host-bound", "the host (CPU side)",
          ("host-bound", "host bound", "cpu-bound", "cpu bound", "scheduler overhead", "python overhead"),
          {"batch": 0.0, "split": 0.0},
          {"batch": "per-token host work (sampling, detokenisation, HTTP) grows with the batch: tokens/s stay flat",
           "split": "the host side does not move with the split"},
          "GPM sm_active low (the GPU idles most of the time) over the measured phase",
          "less host work per token or its overlap with the GPU (CUDA graphs, async scheduling, a faster client)",
          "latency"),
    Bound("latency", "latency-bound", "kernel launches and the gaps between short kernels",
          ("latency-bound", "latency bound", "launch overhead", "launch-bound", "bubble", "idle"),
          {"batch": 1.0, "split": 0.0},
          {"batch": "each pass costs a fixed time: tokens/s grow with the batch",
           "split": "a fixed per-step cost does not move with the split"},
          "the SMs idle more of the time than the busiest unit is busy (GPM sm_active), or kernels as short "
          "as a launch",
          "more work per launch (a larger batch, fused or larger kernels, CUDA graphs)",
          "latency"),
)

BY_NAME: dict[str, Bound] = {b.name: b for b in TABLE}
NAMES: tuple[str, ...] = tuple(b.name for b in TABLE)
FAMILIES: tuple[str, ...] = ("compute", "memory", "latency", "communication")
"""The older words, each a `bound_<word>` metric that predictions read."""
METRIC_NAMES: tuple[str, ...] = ("compute", "memory", "latency", "communication", "pipe", "host")
"""Every `bound_<word>` metric a diagnosis writes (0/1)."""

# the evidence a diagnosis reads from telemetry (one vocabulary: telemetry.fields takes it from here):
# GPM's non-tensor pipes, by the name a diagnosis gives them, and the clock-event reasons read as throttling
PIPE_FIELDS: dict[str, str] = {"int_active": "integer", "fp32_active": "FP32", "fp16_active": "FP16",
                               "fp64_active": "FP64"}
THROTTLE_EVIDENCE: tuple[str, ...] = ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")

# what discriminate reads (kept under the names it always had)
BOUND_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = tuple((b.name, b.words) for b in TABLE)
EXPONENT: dict[str, dict[str, float]] = {axis: {b.name: b.exponent[axis] for b in TABLE} for axis in ("batch", "split")}
WHY: dict[tuple[str, str], str] = {(axis, b.name): b.why[axis] for b in TABLE for axis in b.why}


def named_in(text: str) -> str | None:
    """The bound `text` names (the first of TABLE whose words it contains), or None."""
    t = text.lower()
    for b in TABLE:
        if any(w in t for w in b.words):
            return b.name
    return None


def metrics_of(name: str | None) -> dict[str, float]:
    """`bound_<word>` 0/1 for a call: the bound itself and its family (a host-bound point is also
    `bound_latency`, a pipe-bound one also `bound_compute`); empty when undecided."""
    if not name:
        return {}
    b = BY_NAME[name]
    on = {name, b.family}
    return {f"bound_{w}": 1.0 if w in on else 0.0 for w in METRIC_NAMES}


def from_metrics(m: dict[str, float]) -> str | None:
    """The bound stored as metrics: the most specific word set (pipe before compute, host before latency)."""
    for w in ("pipe", "host", "compute", "memory", "latency", "communication"):
        if m.get(f"bound_{w}") == 1.0:
            return w
    return None


def title(name: str | None) -> str:
    return BY_NAME[name].title if name in BY_NAME else "undecided"
