"""Bound diagnosis of one run point: compute-bound, memory-bound or latency/launch-bound (pure).

Two roads, in order:
1. **Roofline** — work counts (FLOPs and bytes moved) and the time give achieved TFLOP/s and GB/s;
   each over its ceiling (`peak_tflops[_dtype]`, `mem_bw_gbps` from optlog.yaml) is a fraction. The
   larger fraction names the resource that limits the point; when both are under `latency_frac`
   (BOUND_FRAC, 0.5) the point is latency-bound: more than half its time goes to neither unit.
   Arithmetic intensity (FLOP/byte) against the ridge point (peak / bandwidth) is reported beside it.
   Work counts come from the run's metrics (`flops`, `bytes`, `time_s` — what the GEMM probe
   prints) or, for a serving run, from model facts (`active_params` per token, `kv_bytes_per_token`,
   optional `param_bytes`, default 2; for MoE `expert_params`, `n_expert`, `n_expert_used`: found at
   launch as `model_*` metrics, a label of the same name winning) and the tokens and forward passes it
   processed (`estimate_work`: an estimate, labelled so).
2. **Telemetry only** (labelled so) — GPM counters: tensor pipes busy → compute-bound; DRAM
   bandwidth busy → memory-bound; SMs mostly idle while kernels "run" → latency/launch-bound.

Counters are read over the measured phase where the run has it (`<field>_steady`), and GPM's DRAM %
(a share of the theoretical bandwidth) on the calibrated scale (`counter_view`). Each diagnosis names
its evidence, window, scale and what would change its mind (issue 30).

`gpu_util` and power never decide: util.gpu counts time any kernel ran (94 % for a decode-shaped
GEMM at 7 % of the tensor peak, DESIGN §4) and HBM traffic burns power too. They are shown only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from optlog.core import modelfacts as MF
from optlog.core.numfmt import fmt_diagnosis, fmt_share, fmt_sig, fmt_whole

BOUNDS = ("compute", "memory", "latency")


@dataclass
class Diagnosis:
    bound: str | None                 # compute | memory | latency | None (cannot tell)
    basis: str                        # roofline | roofline-estimate | telemetry-only | none
    reason: str
    numbers: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    # what decided (issue 30): the evidence used, the window its figures cover, the scale the
    # counters were read on, and what would change the call
    evidence: str = ""
    window: str = ""
    scale: str = ""
    change: str = ""

    def metrics(self) -> dict[str, float]:
        """As run metrics: bound_compute/bound_memory/bound_latency 0/1 (absent when undecided),
        the roofline numbers under `roofline_*`, and `roofline_basis` (what decided: 1 counters only,
        2 the estimate from model facts, 3 the bench's own work counts) — the mark of a diagnosis optlog
        made, which `service.diagnoses.refresh` re-makes when its inputs change."""
        out: dict[str, float] = {}
        if self.bound:
            for b in BOUNDS:
                out[f"bound_{b}"] = 1.0 if self.bound == b else 0.0
        for k, v in self.numbers.items():
            out[f"roofline_{k}"] = v
        if self.basis in BASIS_CODE:
            out["roofline_basis"] = BASIS_CODE[self.basis]
        return out

    def text(self) -> str:
        head = f"diagnosis: {self.bound + '-bound' if self.bound else 'undecided'} ({self.basis})"
        lines = [head, f"  why: {self.reason}"]
        for name, v in (("evidence", self.evidence), ("window", self.window), ("scale", self.scale),
                        ("would change its mind", self.change)):
            if v:
                lines.append(f"  {name}: {v}")
        if self.numbers:
            lines.append("  roofline: " + ", ".join(f"{k}={fmt_diagnosis(v)}" for k, v in self.numbers.items()))
        if self.counters:
            lines.append("  counters: " + ", ".join(f"{k}={fmt_diagnosis(v)}" for k, v in self.counters.items()))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"bound": self.bound, "basis": self.basis, "reason": self.reason, "numbers": self.numbers,
                "counters": self.counters, "evidence": self.evidence, "window": self.window, "scale": self.scale,
                "would_change_its_mind": self.change}


BASIS_CODE = {"telemetry-only": 1.0, "roofline-estimate": 2.0, "roofline": 3.0}
BOUND_FRAC = 0.5
"""A unit bounds a point when it runs at this share of its ceiling or more: below it on both, more
than half the time goes to something else (launches, host work, small kernels), so the point is
latency-bound whichever ceiling is nearer (the H200's 1 B decode at concurrency 1, issue 30)."""
COUNTERS = ("tensor_active", "dram_bw_util", "sm_active", "sm_occupancy", "gpu_util", "gpu_power_frac")
STEADY = "_steady"
"""Suffix of a telemetry summary over the measured phase (`telemetry.summary.steady`)."""


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


@dataclass
class WorkEstimate:
    """FLOPs and bytes of a serving run estimated from model facts, with the parts they came from."""
    flops: float
    bytes: float
    parts: dict[str, float]          # weight_bytes, kv_bytes, steps, tokens_per_step, ...
    steps_from: str                  # "server decode calls" | "client in-flight requests"


def estimate_work(labels: dict[str, Any], metrics: dict[str, float]) -> WorkEstimate | None:
    """(flops, bytes) of a serving run from model facts × tokens, or None without `active_params`.

    What a real server (llama.cpp on an H200, docs/gpu-proof/serving/) showed the estimate must count:
    - **Weight reads are per forward pass, not per token**: each pass (decode step or prefill chunk)
      reads the weights once for its whole batch. The number of passes is the server's own count where it
      was scraped (`srv_n_decode_delta`, llama.cpp's `n_decode_total`, scaled to the measured part of the
      point), else output tokens / mean in-flight requests (the batch a client *offered*; a server may
      run smaller ones).
    - **MoE: the experts the batch touches, not those one token uses**: with `n_expert` experts, `k =
      n_expert_used` per token and B tokens per decode pass, a pass reads about E·(1 − (1 − k/E)^B)
      experts under uniform routing (an upper bound), i.e. nearly all of `expert_params` once B ≫ E/k. `active_params` per token is
      right for FLOPs, wrong for bytes.
    - **KV reads grow with the context**: each decoded token reads the KV of its whole sequence, on
      average prompt + half the output per request (`completed` requests), plus one write per token.
    Attention FLOPs (4·ctx·d per layer per token) are left out: under 1 % at these context lengths.
    Model facts: a label a user gave (`active_params=…`) wins over the `model_*` metrics optlog found
    at launch (`core.modelfacts`).
    """
    facts = {**labels, **metrics, **MF.effective(labels, metrics)[0]}
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
    n_dec = _num(facts, "srv_n_decode_delta")
    srv_out = _num(facts, "srv_tokens_predicted_delta")
    if n_dec and n_dec > 0:
        # the server's passes over the whole point (warm-up included); the measured part's share of them
        share = min(1.0, tout / srv_out) if srv_out and srv_out > 0 else 1.0
        steps, steps_from = n_dec * share, "server decode calls"
    else:
        batch = _num(facts, "mean_inflight", "concurrency", "max_concurrency") or 1.0
        steps, steps_from = tout / max(batch, 1.0), "client in-flight requests"
    steps = max(steps, 1.0)
    # the decode batch: prefill passes are few (one per request or batch of prompts) next to decode passes
    tok_per_step = tout / steps
    weights = p
    n_exp, k_used, exp_params = _num(facts, "n_expert"), _num(facts, "n_expert_used"), _num(facts, "expert_params")
    # uniform routing: an upper bound on the experts a pass touches (a router that sends similar tokens to
    # the same experts touches fewer; the DRAM counter shows how many fewer)
    touched = None
    if n_exp and k_used and exp_params and n_exp > 0 and 0 < k_used <= n_exp:
        touched = 1.0 - (1.0 - k_used / n_exp) ** max(tok_per_step, 1.0)
        weights = (p - exp_params * k_used / n_exp) + exp_params * touched
    n_req = _num(facts, "completed")
    if n_req and n_req > 0:
        ctx = tin / n_req + 0.5 * tout / n_req
    else:
        ctx = (_num(facts, "input_len") or 0.0) + 0.5 * (_num(facts, "output_len") or 0.0)
    weight_bytes = pbytes * weights * steps
    kv_bytes = kv * (tin + tout) + kv * ctx * tout
    parts = {"weight_bytes": weight_bytes, "kv_bytes": kv_bytes, "steps": steps, "tokens_per_step": tok_per_step,
             "mean_context": ctx}
    if touched is not None:
        parts["experts_touched_frac"] = touched
    return WorkEstimate(2.0 * p * (tin + tout), weight_bytes + kv_bytes, parts, steps_from)


def work_from_model(labels: dict[str, Any], metrics: dict[str, float]) -> tuple[float, float] | None:
    """(flops, bytes) of `estimate_work`, or None."""
    est = estimate_work(labels, metrics)
    return (est.flops, est.bytes) if est else None


def counter_view(metrics: dict[str, float], ceilings: dict[str, float]) -> tuple[dict[str, float], str, str]:
    """The GPM/NVML counters a diagnosis reads, the window they cover and the scale of the DRAM one.

    Window: the measured phase's figures (`<field>_steady`, `telemetry.summary.steady`: decode windows
    from the load generator's per-request timestamps, or the bench's measured start/end) where the
    run has them, the whole point's (`<field>`) otherwise; both are kept (`<field>_run` is the whole
    point's beside a steady one). Scale: GPM's `dram_bw_util` is a share of the memory's theoretical
    bandwidth, the ceilings are calibrated (`optlog calibrate`'s device copy); `dram_bw_util_cal` is the
    same traffic as a share of the calibrated ceiling, and that is what is compared with 50 %."""
    m = metrics
    steady = any(isinstance(m.get(k + STEADY), (int, float)) for k in COUNTERS)
    counters: dict[str, float] = {}
    for k in COUNTERS:
        v = m.get(k + STEADY) if steady and m.get(k + STEADY) is not None else m.get(k)
        if v is None:
            continue
        counters[k] = float(v)
        if steady and m.get(k) is not None and m.get(k + STEADY) is not None:
            counters[k + "_run"] = float(m[k])
    point_s = _num(m, "telemetry_window_s")
    if steady:
        n = _num(m, "telemetry_steady_windows") or 0.0
        secs = _num(m, "telemetry_steady_s")
        of = f" of the {fmt_sig(point_s)} s point" if point_s else ""
        span = f"{fmt_sig(secs)} s{of}" if secs is not None else of.strip()
        window = (f"counters over the decode windows of the load generator's requests ({fmt_whole(n)} window(s), "
                  f"{span}; whole-point figures kept as *_run)" if n > 0 else
                  f"counters over the bench's measured phase ({span}; whole-point figures kept as *_run)")
    elif counters:
        window = ("counters over the whole point" + (f" ({fmt_sig(point_s)} s)" if point_s else "")
                  + ": start-up, warm-up, prefill and gaps included (no measured-phase timestamps)")
    else:
        window = ""
    gpm_s = _num(m, "telemetry_gpm_interval_s")
    secs = _num(m, "telemetry_steady_s")
    if window and gpm_s and secs is not None and gpm_s > secs / 2:
        window += (f"; but each GPM reading averages {fmt_sig(gpm_s)} s, as long as the measured phase itself: "
                   "the GPM counters mix in what lies around it (a spec's telemetry gpm_interval_s well under "
                   "the phase's length resolves it)")
    scale = ""
    dram = counters.get("dram_bw_util")
    cal = ceilings.get("measured_mem_bw_gbps") or ceilings.get("mem_bw_gbps")
    full, src = ceilings.get("measured_dram_counter_full_gbps"), "measured by `optlog calibrate` during its copy"
    if not full:
        full, src = ceilings.get("datasheet_mem_bw_gbps"), "the datasheet mem_bw_gbps"
    if dram is not None:
        if full and cal:
            counters["dram_bw_util_cal"] = dram * full / cal
            if "dram_bw_util_run" in counters:
                counters["dram_bw_util_run_cal"] = counters["dram_bw_util_run"] * full / cal
            scale = (f"GPM dram_bw_util {fmt_whole(dram)}% is of the theoretical {fmt_sig(full)} GB/s ({src}); "
                     f"on the calibrated {fmt_sig(cal)} GB/s that is {fmt_whole(counters['dram_bw_util_cal'])}% "
                     "(dram_bw_util_cal, what is compared)")
        else:
            scale = (f"GPM dram_bw_util {fmt_whole(dram)}% is of the theoretical bandwidth, which is not known here "
                     "(no datasheet mem_bw_gbps, no calibrated counter scale: run `optlog calibrate` on the GPU): "
                     "compared as it is, which understates the traffic against a calibrated ceiling")
    return counters, window, scale


def _dram(c: dict[str, float]) -> float | None:
    """DRAM activity on the calibrated scale where known."""
    v = c.get("dram_bw_util_cal")
    return v if v is not None else c.get("dram_bw_util")


def _facts_used(labels: dict[str, Any], metrics: dict[str, float], fact_sources: dict[str, str] | None) -> str:
    facts, where = MF.effective(labels, metrics)
    by_src: dict[str, list[str]] = {}   # one source named once, after the facts it gave
    for k in ("active_params", "param_bytes", "kv_bytes_per_token", "expert_params"):
        if k not in facts:
            continue
        src = "a label" if where.get(k) == "label" else (fact_sources or {}).get(k) or "found at launch"
        by_src.setdefault(src, []).append(f"{k} {fmt_sig(float(facts[k]))}")
    if "param_bytes" not in facts and ("active_params" in facts or "active_params_per_token" in labels):
        by_src.setdefault("assumed: not found", []).append("param_bytes 2")
    return "; ".join(f"{', '.join(v)} ({src})" for src, v in by_src.items())


def diagnose(metrics: dict[str, float], ceilings: dict[str, float], labels: dict[str, Any] | None = None,
             latency_frac: float = BOUND_FRAC, fact_sources: dict[str, str] | None = None) -> Diagnosis:
    """Diagnose one run point (see the module docstring). `fact_sources`: where each model fact came
    from (the run's environment `model_facts.sources`), named in the evidence."""
    labels = labels or {}
    m = metrics
    dtype = labels.get("dtype") or m.get("dtype")
    counters, cwindow, scale = counter_view(m, ceilings)
    flops = _num(m, "flops")
    bytes_ = _num(m, "bytes")
    t = _num(m, "time_s")
    basis = "roofline"
    est: WorkEstimate | None = None
    if flops is None and bytes_ is None:
        est = estimate_work(labels, m)
        if est is not None:
            flops, bytes_ = est.flops, est.bytes
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
        if est is not None:
            nums["est_weight_gb"] = est.parts["weight_bytes"] / 1e9
            nums["est_kv_gb"] = est.parts["kv_bytes"] / 1e9
            nums["est_tokens_per_step"] = est.parts["tokens_per_step"]
            if "experts_touched_frac" in est.parts:
                nums["est_experts_touched_frac"] = est.parts["experts_touched_frac"]
        if flops is not None and bytes_:
            nums["intensity"] = flops / bytes_
            if peak and bw:
                nums["ridge"] = peak * 1e12 / (bw * 1e9)
        if cf is not None or mf is not None:
            cfv, mfv = cf or 0.0, mf or 0.0
            if max(cfv, mfv) < latency_frac:
                bound = "latency"
                nearer = "memory bandwidth" if mfv >= cfv else "peak compute"
                reason = (f"neither ceiling is near: {fmt_share(cfv)} of peak compute, {fmt_share(mfv)} of memory bandwidth "
                          f"(under {fmt_share(latency_frac)} of both; the nearer is {nearer}) "
                          f"({_latency_cause(counters)})")
            elif cfv >= mfv:
                bound = "compute"
                reason = f"{fmt_share(cfv)} of peak compute vs {fmt_share(mfv)} of memory bandwidth"
            else:
                bound = "memory"
                reason = f"{fmt_share(mfv)} of memory bandwidth vs {fmt_share(cfv)} of peak compute"
            if "intensity" in nums and "ridge" in nums:
                side = "above" if nums["intensity"] >= nums["ridge"] else "below"
                reason += f"; intensity {fmt_diagnosis(nums['intensity'])} FLOP/B is {side} the ridge {fmt_diagnosis(nums['ridge'])}"
            if max(cfv, mfv) > 1.1:
                reason += ("; WARNING: achieved exceeds the ceiling by more than 10 % — the ceilings in optlog.yaml "
                           "(re-run `optlog calibrate`) or the work counts are wrong")
            if est is not None:
                reason += (f"; estimate: {fmt_diagnosis(est.parts['tokens_per_step'])} tokens per pass ({est.steps_from}), "
                           f"weights {fmt_diagnosis(nums['est_weight_gb'])} GB + KV {fmt_diagnosis(nums['est_kv_gb'])} GB read")
                if "experts_touched_frac" in est.parts:
                    reason += f", {fmt_share(est.parts['experts_touched_frac'])} of the experts touched per pass"
            note = _counter_note(bound, counters)
            if note:
                reason += f"; {note}"
            if est is not None:
                evidence = f"estimate from model facts × tokens: {_facts_used(labels, m, fact_sources)}"
                wwin = f"work over the load generator's measured phase (duration_s {fmt_sig(t or 0.0)} s)"
            else:
                evidence = "work counts the bench reported (flops, bytes, time_s)"
                wwin = f"work over the bench's own timed loop (time_s {fmt_sig(t or 0.0)} s)"
            if note:
                evidence += "; counters " + ("agree" if note.startswith("counters agree") else "disagree")
            window = wwin + (f"; {cwindow}" if cwindow else "")
            d = Diagnosis(bound, basis, reason, nums, counters, evidence, window, scale,
                          _change_roofline(bound, cfv, mfv, latency_frac, est))
            return d
    missing = None
    if ach_tflops is not None or ach_gbps is not None:
        got = ", ".join(x for x in (f"{fmt_diagnosis(ach_tflops)} TFLOP/s" if ach_tflops is not None else "",
                                    f"{fmt_diagnosis(ach_gbps)} GB/s" if ach_gbps is not None else "") if x)
        missing = (f"work counts give {got} ({basis}), but no ceiling to hold them against: no "
                   f"peak_tflops for {dtype or 'bf16'} and no mem_bw_gbps in optlog.yaml (run `optlog calibrate`, "
                   "or write hardware.gpus.<kind>.peak_tflops / mem_bw_gbps)")
    elif flops is not None or bytes_ is not None:
        missing = f"work counts ({basis}) but no time (time_s or duration_s) to turn them into rates"
    d = _telemetry_only(counters, missing)
    if d.basis != "none":
        d.evidence = "counters only: " + (missing or "no work counts (no model facts found, no flops/bytes/time_s)")
        d.window, d.scale = cwindow, scale
        d.change = ("work counts would decide by the roofline (model facts found at launch or given as labels "
                    "— active_params, param_bytes — or the bench's flops/bytes/time_s); on counters, tensor_active "
                    f"≥ 50 % → compute-bound, DRAM ≥ 50 % of the calibrated bandwidth → memory-bound")
    return d


def _change_roofline(bound: str, cf: float, mf: float, thr: float, est: WorkEstimate | None) -> str:
    t = fmt_share(thr)
    if bound == "memory":
        out = (f"latency-bound if achieved bandwidth fell under {t} of the ceiling (now {fmt_share(mf)}); "
               f"compute-bound if the compute share passed the memory share (now {fmt_share(cf)})")
    elif bound == "compute":
        out = (f"latency-bound if achieved compute fell under {t} of peak (now {fmt_share(cf)}); "
               f"memory-bound if the memory share passed it (now {fmt_share(mf)})")
    else:
        out = (f"memory-bound from {t} of the bandwidth ceiling (now {fmt_share(mf)}), compute-bound from {t} of "
               f"peak compute (now {fmt_share(cf)}): more work per pass (a larger batch, larger kernels) moves it")
    if est is not None:
        out += "; model facts that are wrong (a label of the fact's name overrides them) or a wrong ceiling would move the estimate"
        if est.steps_from != "server decode calls":
            out += "; the server's own pass count (scrape its /metrics) would replace the client's in-flight requests"
    return out


def _latency_cause(c: dict[str, float]) -> str:
    """What "neither ceiling is near" means, from the SM activity where the GPU reported it: an idle GPU
    waits on the host; busy SMs that use neither unit run small or non-tensor kernels."""
    sm = c.get("sm_active")
    if sm is None:
        return "launch gaps, synchronisation, host-side work or too little work in flight"
    if sm < 25:
        return (f"the GPU is idle most of the time, sm_active {fmt_whole(sm)}%: the host side (the server's scheduling "
                "and sampling loop, tokenisation, HTTP, the client) sets the pace, not the kernels")
    if sm >= 50:
        return (f"sm_active {fmt_whole(sm)}%: kernels keep the SMs busy but use neither unit, so many small launches, "
                "non-tensor work or synchronisation")
    return f"sm_active {fmt_whole(sm)}%: the GPU waits between kernels part of the time (launch gaps or the host)"


def _counter_note(bound: str, c: dict[str, float]) -> str:
    ta, dr = c.get("tensor_active"), _dram(c)
    if ta is None and dr is None:
        return ""
    parts = []
    if ta is not None:
        parts.append(f"tensor_active {fmt_whole(ta)}%")
    if dr is not None:
        parts.append(f"dram_bw_util {fmt_whole(c['dram_bw_util'])}%" + (
            f" ({fmt_whole(dr)}% of the calibrated bandwidth)" if "dram_bw_util_cal" in c else ""))
    agree = (bound == "compute" and (ta or 0) >= (dr or 0)) or (bound == "memory" and (dr or 0) >= (ta or 0)) \
        or (bound == "latency" and max(ta or 0, dr or 0) < 50)
    return ("counters agree: " if agree else "counters disagree: ") + ", ".join(parts)


def _telemetry_only(c: dict[str, float], missing: str | None = None) -> Diagnosis:
    """From the GPM counters alone; `missing` says why the roofline could not decide (shown first)."""
    d = _from_counters(c)
    if missing:
        d.reason = f"{missing}; {d.reason}" if d.basis != "none" else missing + (
            "; and no GPM counters (tensor_active, dram_bw_util)" if "GPM" not in missing else "")
    return d


def _from_counters(c: dict[str, float]) -> Diagnosis:
    ta, dr, sm = c.get("tensor_active"), _dram(c), c.get("sm_active")
    if ta is None and dr is None:
        why = "no work counts and no GPM counters (tensor_active, dram_bw_util)"
        if "gpu_util" in c:
            why += f"; gpu_util {fmt_whole(c['gpu_util'])}% alone cannot tell (it counts time any kernel ran)"
        return Diagnosis(None, "none", why, {}, c)
    ta, dr = ta or 0.0, dr or 0.0
    if ta >= 50 and ta >= dr:
        return Diagnosis("compute", "telemetry-only", f"tensor pipes busy {fmt_whole(ta)}% (DRAM bandwidth {fmt_whole(dr)}%)", {}, c)
    if dr >= 50:
        of = "of the calibrated bandwidth" if "dram_bw_util_cal" in c else "of its maximum"
        return Diagnosis("memory", "telemetry-only", f"DRAM bandwidth {fmt_whole(dr)}% {of} (tensor {fmt_whole(ta)}%)", {}, c)
    if sm is not None and sm < 50:
        return Diagnosis("latency", "telemetry-only",
                         f"SMs busy only {fmt_whole(sm)}%, tensor {fmt_whole(ta)}%, DRAM {fmt_whole(dr)}%: the GPU waits between kernels", {}, c)
    extra = f", gpu_util {fmt_whole(c['gpu_util'])}%" if "gpu_util" in c else ""
    if sm is None:
        return Diagnosis("latency", "telemetry-only",
                         f"tensor {fmt_whole(ta)}% and DRAM bandwidth {fmt_whole(dr)}% both low{extra}: neither compute- nor "
                         "memory-bound; likely latency/launch overhead", {}, c)
    return Diagnosis(None, "telemetry-only",
                     f"SMs busy {fmt_whole(sm)}% but tensor {fmt_whole(ta)}% and DRAM {fmt_whole(dr)}% low{extra}: not tensor-compute- and "
                     "not memory-bound; non-tensor (CUDA-core) work or latency — work counts would decide", {}, c)


# ---------------------------------------------------------------- stored diagnoses
# A launched run stores its diagnosis as metrics with these prefixes, and the ceilings it used.
DIAG_PREFIXES = ("bound_", "roofline_")
CEILING_KEYS = ("roofline_peak_tflops", "roofline_mem_bw_gbps")


def diagnosis_inputs(metrics: dict[str, float]) -> dict[str, float]:
    """A run's metrics without its stored diagnosis: what a new diagnosis is made from."""
    return {k: v for k, v in metrics.items() if not k.startswith(DIAG_PREFIXES)}


def stored(metrics: dict[str, float]) -> dict[str, float]:
    """The diagnosis metrics stored with a run (`bound_*`, `roofline_*`)."""
    return {k: v for k, v in metrics.items() if k.startswith(DIAG_PREFIXES)}


def same(a: dict[str, float], b: dict[str, float]) -> bool:
    """Two diagnoses as metrics are the same (keys equal, values within float noise)."""
    if set(a) != set(b):
        return False
    return all(math.isclose(a[k], b[k], rel_tol=1e-6, abs_tol=1e-12) for k in a)
