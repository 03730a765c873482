"""Bound diagnosis of one run point: compute-bound, memory-bound or latency/launch-bound (pure).

Two roads, in order:
1. **Roofline** — work counts (FLOPs and bytes moved) and the time give achieved TFLOP/s and GB/s;
   each over its ceiling (`peak_tflops[_dtype]`, `mem_bw_gbps` from optlog.yaml) is a fraction. The
   larger fraction names the resource that limits the point; when both are small (under
   `latency_frac`, default 0.25) the point is latency/launch-bound: neither unit is anywhere near busy.
   Arithmetic intensity (FLOP/byte) against the ridge point (peak / bandwidth) is reported beside it.
   Work counts come from the run's metrics (`flops`, `bytes`, `time_s` — what the GEMM probe
   prints) or, for a serving run, from model facts (`active_params` per token, `kv_bytes_per_token`,
   optional `param_bytes`, default 2) times the tokens it processed (an estimate, labelled so).
2. **Telemetry only** (labelled so) — GPM counters: tensor pipes busy → compute-bound; DRAM
   bandwidth busy → memory-bound; SMs mostly idle while kernels "run" → latency/launch-bound.

`gpu_util` and power never decide: util.gpu counts time any kernel ran (94 % for a decode-shaped
GEMM at 7 % of the tensor peak, DESIGN §4) and HBM traffic burns power too. They are shown only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BOUNDS = ("compute", "memory", "latency")


@dataclass
class Diagnosis:
    bound: str | None                 # compute | memory | latency | None (cannot tell)
    basis: str                        # roofline | roofline-estimate | telemetry-only | none
    reason: str
    numbers: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        """As run metrics: bound_compute/bound_memory/bound_latency 0/1 (absent when undecided),
        plus the roofline numbers under `roofline_*`."""
        out: dict[str, float] = {}
        if self.bound:
            for b in BOUNDS:
                out[f"bound_{b}"] = 1.0 if self.bound == b else 0.0
        for k, v in self.numbers.items():
            out[f"roofline_{k}"] = v
        return out

    def text(self) -> str:
        head = f"diagnosis: {self.bound + '-bound' if self.bound else 'undecided'} ({self.basis})"
        lines = [head, f"  why: {self.reason}"]
        if self.numbers:
            lines.append("  roofline: " + ", ".join(f"{k}={_fmt(v)}" for k, v in self.numbers.items()))
        if self.counters:
            lines.append("  counters: " + ", ".join(f"{k}={_fmt(v)}" for k, v in self.counters.items()))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"bound": self.bound, "basis": self.basis, "reason": self.reason, "numbers": self.numbers,
                "counters": self.counters}


def _fmt(v: float) -> str:
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _num(d: dict[str, Any], *keys: str) -> float | None:
    for k in keys:
        v = d.get(k)
        if v is None:
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if f == f:
            return f
    return None


def _peak(ceilings: dict[str, float], dtype: str | None) -> float | None:
    """The compute ceiling for `dtype`: measured (optlog calibrate) before datasheet."""
    dt = dtype or "bf16"
    for k in (f"measured_peak_tflops_{dt}", f"peak_tflops_{dt}"):
        if k in ceilings:
            return ceilings[k]
    return ceilings.get("peak_tflops")


def work_from_model(labels: dict[str, Any], metrics: dict[str, float]) -> tuple[float, float] | None:
    """(flops, bytes) of a serving run estimated from model facts × tokens, or None."""
    facts = {**labels, **metrics}
    p = _num(facts, "active_params", "active_params_per_token")
    if p is None:
        return None
    tin = _num(facts, "total_input_tokens", "input_tokens")
    tout = _num(facts, "total_output_tokens", "output_tokens")
    dur = _num(facts, "duration_s")
    if tout is None and dur is not None:
        ot = _num(facts, "output_throughput")
        tout = ot * dur if ot is not None else None
    if tin is None and dur is not None:
        it = _num(facts, "input_throughput")
        tin = it * dur if it is not None else 0.0
    if tout is None:
        return None
    tin = tin or 0.0
    pbytes = _num(facts, "param_bytes") or 2.0
    kv = _num(facts, "kv_bytes_per_token") or 0.0
    batch = _num(facts, "mean_inflight", "concurrency", "max_concurrency") or 1.0
    flops = 2.0 * p * (tin + tout)
    # each decode step reads the active weights once for the whole batch; KV written once per token
    # and read once per step per request (context ~ input + half the output, on average)
    steps = tout / max(batch, 1.0)
    ctx_len = (tin / max(tout, 1.0)) + 0.5 * (tout / max(steps, 1.0))
    bytes_ = pbytes * p * steps + kv * (tin + tout) + kv * ctx_len * tout
    return flops, bytes_


def diagnose(metrics: dict[str, float], ceilings: dict[str, float], labels: dict[str, Any] | None = None,
             latency_frac: float = 0.25) -> Diagnosis:
    labels = labels or {}
    m = metrics
    dtype = labels.get("dtype") or m.get("dtype")  # type: ignore[assignment]
    counters = {k: float(m[k]) for k in ("tensor_active", "dram_bw_util", "sm_active", "sm_occupancy", "gpu_util",
                                         "gpu_power_frac") if k in m and m[k] is not None}
    flops = _num(m, "flops")
    bytes_ = _num(m, "bytes")
    t = _num(m, "time_s")
    basis = "roofline"
    if flops is None and bytes_ is None:
        est = work_from_model(labels, m)
        if est is not None:
            flops, bytes_ = est
            t = _num(m, "duration_s")
            basis = "roofline-estimate"
    peak = _peak(ceilings, str(dtype) if dtype else None)
    bw = ceilings.get("measured_mem_bw_gbps") or ceilings.get("mem_bw_gbps")
    ach_tflops = _num(m, "tflops") if basis == "roofline" else None
    ach_gbps = _num(m, "gbps") if basis == "roofline" else None
    if t and t > 0:
        if flops is not None and ach_tflops is None:
            ach_tflops = flops / t / 1e12
        if bytes_ is not None and ach_gbps is None:
            ach_gbps = bytes_ / t / 1e9
    if (ach_tflops is not None or ach_gbps is not None) and (peak or bw):
        nums: dict[str, float] = {}
        cf = mf = None
        if ach_tflops is not None:
            nums["achieved_tflops"] = ach_tflops
            if peak:
                cf = ach_tflops / peak
                nums["peak_tflops"] = peak
                nums["compute_frac"] = cf
        if ach_gbps is not None:
            nums["achieved_gbps"] = ach_gbps
            if bw:
                mf = ach_gbps / bw
                nums["mem_bw_gbps"] = bw
                nums["mem_frac"] = mf
        if flops is not None and bytes_:
            nums["intensity"] = flops / bytes_
            if peak and bw:
                nums["ridge"] = peak * 1e12 / (bw * 1e9)
        if cf is not None or mf is not None:
            cfv, mfv = cf or 0.0, mf or 0.0
            if max(cfv, mfv) < latency_frac:
                bound = "latency"
                reason = (f"neither ceiling is near: {cfv:.0%} of peak compute, {mfv:.0%} of memory bandwidth "
                          "(launch gaps, synchronisation or too little work in flight)")
            elif cfv >= mfv:
                bound = "compute"
                reason = f"{cfv:.0%} of peak compute vs {mfv:.0%} of memory bandwidth"
            else:
                bound = "memory"
                reason = f"{mfv:.0%} of memory bandwidth vs {cfv:.0%} of peak compute"
            if "intensity" in nums and "ridge" in nums:
                side = "above" if nums["intensity"] >= nums["ridge"] else "below"
                reason += f"; intensity {_fmt(nums['intensity'])} FLOP/B is {side} the ridge {_fmt(nums['ridge'])}"
            if max(cfv, mfv) > 1.1:
                reason += ("; WARNING: achieved exceeds the ceiling by more than 10 % — the ceilings in optlog.yaml "
                           "(re-run `optlog calibrate`) or the work counts are wrong")
            note = _counter_note(bound, counters)
            if note:
                reason += f"; {note}"
            return Diagnosis(bound, basis, reason, nums, counters)
    return _telemetry_only(counters)


def _counter_note(bound: str, c: dict[str, float]) -> str:
    ta, dr = c.get("tensor_active"), c.get("dram_bw_util")
    if ta is None and dr is None:
        return ""
    parts = []
    if ta is not None:
        parts.append(f"tensor_active {ta:.0f}%")
    if dr is not None:
        parts.append(f"dram_bw_util {dr:.0f}%")
    agree = (bound == "compute" and (ta or 0) >= (dr or 0)) or (bound == "memory" and (dr or 0) >= (ta or 0)) \
        or (bound == "latency" and max(ta or 0, dr or 0) < 50)
    return ("counters agree: " if agree else "counters disagree: ") + ", ".join(parts)


def _telemetry_only(c: dict[str, float]) -> Diagnosis:
    ta, dr, sm = c.get("tensor_active"), c.get("dram_bw_util"), c.get("sm_active")
    if ta is None and dr is None:
        why = "no work counts and no GPM counters (tensor_active, dram_bw_util)"
        if "gpu_util" in c:
            why += f"; gpu_util {c['gpu_util']:.0f}% alone cannot tell (it counts time any kernel ran)"
        return Diagnosis(None, "none", why, {}, c)
    ta, dr = ta or 0.0, dr or 0.0
    if ta >= 50 and ta >= dr:
        return Diagnosis("compute", "telemetry-only", f"tensor pipes busy {ta:.0f}% (DRAM bandwidth {dr:.0f}%)", {}, c)
    if dr >= 50:
        return Diagnosis("memory", "telemetry-only", f"DRAM bandwidth {dr:.0f}% of its maximum (tensor {ta:.0f}%)", {}, c)
    if sm is not None and sm < 50:
        return Diagnosis("latency", "telemetry-only",
                         f"SMs busy only {sm:.0f}%, tensor {ta:.0f}%, DRAM {dr:.0f}%: the GPU waits between kernels", {}, c)
    extra = f", gpu_util {c['gpu_util']:.0f}%" if "gpu_util" in c else ""
    if sm is None:
        return Diagnosis("latency", "telemetry-only",
                         f"tensor {ta:.0f}% and DRAM bandwidth {dr:.0f}% both low{extra}: neither compute- nor "
                         "memory-bound; likely latency/launch overhead", {}, c)
    return Diagnosis(None, "telemetry-only",
                     f"SMs busy {sm:.0f}% but tensor {ta:.0f}% and DRAM {dr:.0f}% low{extra}: not tensor-compute- and "
                     "not memory-bound; non-tensor (CUDA-core) work or latency — work counts would decide", {}, c)
