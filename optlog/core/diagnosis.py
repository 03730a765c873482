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

On two or more GPUs the link counters (NVLink, else PCIe, per GPU and direction) are held against the
link bandwidth (`optlog calibrate`'s peer-to-peer copy, else the datasheet `interconnect_gbps`):
communication-bound when the links are the busiest unit and the SMs wait on them (`links_view`,
`_links_bound`).

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

from optlog.core import bounds as B
from optlog.core import modelfacts as MF
from optlog.core.bounds import BY_NAME, PIPE_FIELDS, THROTTLE_EVIDENCE
from optlog.core.numfmt import fmt_diagnosis, fmt_measured, fmt_share, fmt_sig, fmt_whole, plural

BOUNDS = B.NAMES


@dataclass
class Diagnosis:
    bound: str | None                 # a core.bounds name (memory, compute, pipe, latency, host, …) | None
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
    # issue 43: the bounding unit's share of its ceiling, the unit, the phase (prefill/decode, "" for
    # the whole point), each phase's own diagnosis, and the lever that would move it
    efficiency: float | None = None
    unit: str = ""
    phase: str = ""
    phases: list["Diagnosis"] = field(default_factory=list)
    lever: str = ""

    def headline(self) -> str:
        """"compute-bound on the tensor cores (fp16) at 47% efficiency, power-capped"."""
        if not self.bound:
            return "undecided"
        out = B.title(self.bound)
        if self.bound in ("memory", "compute", "pipe") and self.unit and self.bound != "memory":
            out = f"compute-bound on {self.unit}"
        if self.efficiency is not None:
            out += (f" at {fmt_whole(100 * self.efficiency)}% efficiency" if self.bound in ("memory", "compute", "pipe")
                    else f" at {fmt_whole(100 * self.efficiency)}% of the link bandwidth" if self.bound == "communication"
                    else f" ({fmt_whole(100 * self.efficiency)}% of the time waiting)")
        if self.bound == "compute" and "throttled" in self.reason and "power" in self.reason:
            out += ", power-capped"
        return out

    def metrics(self) -> dict[str, float]:
        """As run metrics: `bound_<word>` 0/1 for every word of core.bounds (absent when undecided; a
        host-bound point is also bound_latency, a pipe-bound one also bound_compute), the roofline
        numbers under `roofline_*`, and `roofline_basis` (what decided: 1 counters only, 2 the estimate
        from model facts, 3 the bench's own work counts) — the mark of a diagnosis optlog made, which
        `service.diagnoses.refresh` re-makes when its inputs change. Each phase's call as
        `bound_<phase>_<word>` and `roofline_<phase>_efficiency`."""
        out: dict[str, float] = dict(B.metrics_of(self.bound))
        for k, v in self.numbers.items():
            out[f"roofline_{k}"] = v
        if self.basis in BASIS_CODE:
            out["roofline_basis"] = BASIS_CODE[self.basis]
        for ph in self.phases:
            for k, v in B.metrics_of(ph.bound).items():
                out[k.replace("bound_", f"bound_{ph.phase}_", 1)] = v
            if ph.efficiency is not None:
                out[f"roofline_{ph.phase}_efficiency"] = ph.efficiency
        return out

    def text(self) -> str:
        head = f"diagnosis: {self.headline()} ({self.basis})"
        lines = [head, f"  why: {self.reason}"]
        for name, v in (("evidence", self.evidence), ("window", self.window), ("scale", self.scale),
                        ("would change its mind", self.change), ("lever", self.lever)):
            if v:
                lines.append(f"  {name}: {v}")
        if self.numbers:
            lines.append("  roofline: " + ", ".join(f"{k}={fmt_diagnosis(v)}" for k, v in self.numbers.items()))
        if self.counters:
            lines.append("  counters: " + ", ".join(f"{k}={fmt_diagnosis(v)}" for k, v in self.counters.items()))
        for ph in self.phases:
            lines.append(f"  {ph.phase}: {ph.headline()} ({ph.basis})")
            lines.append(f"    why: {ph.reason}")
            for name, v in (("window", ph.window), ("would change its mind", ph.change)):
                if v:
                    lines.append(f"    {name}: {v}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"bound": self.bound, "headline": self.headline(), "efficiency": self.efficiency, "unit": self.unit,
               "basis": self.basis, "reason": self.reason, "numbers": self.numbers,
               "counters": self.counters, "evidence": self.evidence, "window": self.window, "scale": self.scale,
               "would_change_its_mind": self.change, "lever": self.lever}
        if self.phase:
            out["phase"] = self.phase
        if self.phases:
            out["phases"] = [p.to_json() for p in self.phases]
        return out


BASIS_CODE = {"telemetry-only": 1.0, "roofline-estimate": 2.0, "roofline": 3.0}
BOUND_FRAC = 0.5
"""Kept for old callers (issue 30's cliff); no call reads it since issue 43: units are compared with
each other and with the SMs' idle time, not with a fixed share."""
COUNTERS = ("tensor_active", "hmma_active", "imma_active", "dram_bw_util", "sm_active", "sm_occupancy", "gpu_util",
            "gpu_power_frac", "gpu_power_w", "sm_clock_mhz", *PIPE_FIELDS)
THROTTLE_COUNTERS = tuple(f"throttle_{n}" for n in THROTTLE_EVIDENCE)
GPM_COUNTERS = ("tensor_active", "hmma_active", "imma_active", "dram_bw_util", "sm_active", "sm_occupancy",
                "gr_active", *PIPE_FIELDS)
PHASE_OVERLAP = 1.2
"""Prefill and decode windows longer together than this × the measured phase run at the same time
(continuous batching): the phases are not taken apart."""
GPU_MAX = "_gpu_max"
"""Suffix of a link rate's busiest GPU (`telemetry.summary`: each GPU's mean, the largest)."""
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
      average prompt + half the output per request (`completed` requests), plus one write per token;
      a prefill pass reads the KV before its tokens once (flash attention re-reads it per tile: more).
    - **Every token a pass carries** (issue 43): tokens per pass = (prompt + generated tokens) ÷ passes.
      llama.cpp counts a `llama_decode` call per batch (`-b`); it runs as micro-batches of `-ub`
      tokens, each reading the weights: with batches over `-ub` the weight reads are a lower bound.
    - **Activations**: the hidden state and the FFN's intermediate, written and read per layer per token
      in F32 (llama.cpp's): 4·layers·(12·n_embd + 4·n_ff) bytes a token; dominant in a long prefill.
    - **Attention FLOPs**: 4·layers·heads·head_dim per token per position attended (prompt/2 in a
      prefill, prompt + output/2 in a decode).
    Model facts: a label a user gave (`active_params=…`) wins over the `model_*` metrics optlog found
    at launch (`core.modelfacts`).
    """
    facts = {**labels, **metrics, **MF.effective(labels, metrics)[0]}
    p = _num(facts, "active_params", "active_params_per_token")
    if p is None:
        return None
    tin, tout = _tokens(facts)
    if tout is None:
        return None
    tin = tin or 0.0
    pbytes = _num(facts, "param_bytes") or 2.0
    kv = _num(facts, "kv_bytes_per_token") or 0.0
    n_dec = _num(facts, "srv_n_decode_delta")
    forced = _num(facts, "est_passes")
    if forced is not None:  # a phase's passes (phase_metrics)
        steps = forced
        steps_from = {1.0: "server decode calls less the decode passes", 2.0: "generated tokens ÷ requests decoding at once"
                      }.get(_num(facts, "est_passes_from") or 3.0, "one per request (prompts prefilling at once share one)")
    elif n_dec and n_dec > 0:
        # the server's passes over the whole point (warm-up included); the measured part's share of them
        steps, steps_from = n_dec * _measured_share(facts, tout), "server decode calls"
    else:
        batch = _num(facts, "mean_inflight", "concurrency", "max_concurrency") or 1.0
        steps, steps_from = tout / max(batch, 1.0), "client in-flight requests"
    steps = max(steps, 1.0)
    # every token a pass carries: the prompt tokens of the prefill passes and the generated ones
    # (issue 43: a prefill-heavy load carries ~800 tokens a pass, not the 3 generated ones)
    tok_per_step = (tin + tout) / steps
    weights = p
    n_exp, k_used, exp_params = _num(facts, "n_expert"), _num(facts, "n_expert_used"), _num(facts, "expert_params")
    # uniform routing: an upper bound on the experts a pass touches (a router that sends similar tokens to
    # the same experts touches fewer; the DRAM counter shows how many fewer)
    touched = None
    if n_exp and k_used and exp_params and n_exp > 0 and 0 < k_used <= n_exp:
        # the decode passes are most of them: the generated tokens a pass carries pick the experts
        touched = 1.0 - (1.0 - k_used / n_exp) ** max(tout / steps, 1.0)
        weights = (p - exp_params * k_used / n_exp) + exp_params * touched
    n_req = _num(facts, "completed")
    prompt = tin / n_req if n_req and n_req > 0 else (_num(facts, "input_len") or 0.0)
    ctx_in = _num(facts, "est_context_in")
    if ctx_in is not None and n_req:
        prompt = ctx_in / n_req  # the decode phase: its prompts were read before it, their KV is read now
    out_per = tout / n_req if n_req and n_req > 0 else (_num(facts, "output_len") or 0.0)
    ctx = prompt + 0.5 * out_per
    weight_bytes = pbytes * weights * steps
    # KV: one write per token; each generated token reads its sequence's KV (prompt + half its output);
    # each prompt token reads the KV before it once (flash attention's tiles re-read it: more, said so)
    kv_bytes = kv * (tin + tout) + kv * ctx * tout + kv * 0.5 * prompt * tin / max(tok_per_step, 1.0)
    # activations: the hidden state (n_embd) and the FFN's (n_ff) written and read per layer per token,
    # in F32 as llama.cpp keeps them: an estimate (kernels that fuse steps move less)
    n_layer, n_embd, n_ff = _num(facts, "n_layer"), _num(facts, "n_embd"), _num(facts, "n_ff")
    act_bytes = (tin + tout) * n_layer * (12 * n_embd + 4 * (n_ff or 0.0)) * 4.0 if n_layer and n_embd else 0.0
    # attention FLOPs (QKᵀ and PV): 4 · layers · heads · head_dim per token per position attended
    n_head, hd = _num(facts, "n_head"), _num(facts, "head_dim")
    attn = 4.0 * n_layer * n_head * hd * (0.5 * prompt * tin + ctx * tout) if n_layer and n_head and hd else 0.0
    parts = {"weight_bytes": weight_bytes, "kv_bytes": kv_bytes, "act_bytes": act_bytes, "steps": steps,
             "tokens_per_step": tok_per_step, "mean_context": ctx, "attn_flops": attn}
    if touched is not None:
        parts["experts_touched_frac"] = touched
    return WorkEstimate(2.0 * p * (tin + tout) + attn, weight_bytes + kv_bytes + act_bytes, parts, steps_from)


def work_from_model(labels: dict[str, Any], metrics: dict[str, float]) -> tuple[float, float] | None:
    """(flops, bytes) of `estimate_work`, or None."""
    est = estimate_work(labels, metrics)
    return (est.flops, est.bytes) if est else None


def counter_view(metrics: dict[str, float], ceilings: dict[str, float],
                 dtype: str = "bf16") -> tuple[dict[str, float], str, str]:
    """The GPM/NVML counters a diagnosis reads, the window they cover and their scale.

    Window: the measured phase's figures (`<field>_steady`, `telemetry.summary.steady`: decode windows
    from the load generator's per-request timestamps, or the bench's measured start/end) where the
    run has them, the whole point's (`<field>`) otherwise; both are kept (`<field>_run` is the whole
    point's beside a steady one). Scale: GPM's `dram_bw_util` is a share of the memory's theoretical
    bandwidth, the ceilings are calibrated (`optlog calibrate`'s device copy); `dram_bw_util_cal` is the
    same traffic as a share of the calibrated ceiling, and that is what is compared. `tensor_active`
    likewise: a share of the datasheet peak where optlog.yaml has one (`tensor_active_cal` on the
    calibrated peak of `dtype`), else said to be on the theoretical scale. Throttling: the share of the
    phase each clock-event reason held (`throttle_<reason>`), and the highest SM clock of the point."""
    m = metrics
    steady = any(isinstance(m.get(k + STEADY), (int, float)) for k in COUNTERS)
    counters: dict[str, float] = {}
    for k in (*COUNTERS, *THROTTLE_COUNTERS):
        v = m.get(k + STEADY) if steady and m.get(k + STEADY) is not None else m.get(k)
        if v is None:
            continue
        counters[k] = float(v)
        if steady and m.get(k) is not None and m.get(k + STEADY) is not None and k in ("tensor_active", "dram_bw_util",
                                                                                        "sm_active", "sm_occupancy",
                                                                                        "gpu_util", "gpu_power_frac"):
            counters[k + "_run"] = float(m[k])
    if m.get("sm_clock_mhz_max") is not None:
        counters["sm_clock_mhz_max"] = float(m["sm_clock_mhz_max"])
    if not steady:  # whole-point throttling: seconds under each reason over the point's length
        win = _num(m, "telemetry_window_s")
        for reason in THROTTLE_EVIDENCE:
            v = _num(m, f"throttle_{reason}_s")
            if v is not None and win:
                counters[f"throttle_{reason}"] = v / win
    # a datasheet peak is what a person wrote as peak_tflops.<dtype>: the plain name differs from the measurement
    ta, cal_peak = counters.get("tensor_active"), ceilings.get(f"measured_peak_tflops_{dtype}")
    sheet = ceilings.get(f"peak_tflops_{dtype}")
    sheet = sheet if sheet and cal_peak and sheet != cal_peak else None
    if ta is not None and sheet and cal_peak:
        counters["tensor_active_cal"] = ta * sheet / cal_peak
    point_s = _num(m, "telemetry_window_s")
    if steady:
        n = _num(m, "telemetry_steady_windows") or 0.0
        secs = _num(m, "telemetry_steady_s")
        of = f" of the {fmt_sig(point_s)} s point" if point_s else ""
        span = f"{fmt_sig(secs)} s{of}" if secs is not None else of.strip()
        window = (f"counters over the decode windows of the load generator's requests ({plural(n, 'window')}, "
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
            scale += ("; " if scale else "") + (f"GPM dram_bw_util {fmt_whole(dram)}% is of the theoretical {fmt_diagnosis(full)} GB/s ({src}); "
                     f"on the calibrated {fmt_diagnosis(cal)} GB/s that is {fmt_whole(counters['dram_bw_util_cal'])}% "
                     "(dram_bw_util_cal, what is compared)")
        else:
            scale += ("; " if scale else "") + (f"GPM dram_bw_util {fmt_whole(dram)}% is of the theoretical bandwidth, which is not known here "
                     "(no datasheet mem_bw_gbps, no calibrated counter scale: run `optlog calibrate` on the GPU): "
                     "compared as it is, which understates the traffic against a calibrated ceiling")
    if ta is not None:
        scale += ("; " if scale else "") + (
            f"GPM tensor_active {fmt_whole(ta)}% is of the datasheet {dtype} peak; on the calibrated one that is "
            f"{fmt_whole(counters['tensor_active_cal'])}% (tensor_active_cal)" if "tensor_active_cal" in counters else
            f"GPM tensor_active {fmt_whole(ta)}% is of the theoretical tensor peak (no datasheet peak_tflops.{dtype} "
            "in optlog.yaml to put it on the calibrated scale): shown, not compared")
    links = links_view(m, ceilings, steady, counters)
    if links:
        scale += ("; " if scale else "") + links
    return counters, window, scale


LINKS = (("nvlink", "NVLink"), ("pcie", "PCIe"))
"""The links between GPUs whose counters a multi-GPU run carries (`telemetry.fields`): NVLink where the
GPUs have it, else PCIe."""


def links_view(m: dict[str, float], ceilings: dict[str, float], steady: bool, counters: dict[str, float]) -> str:
    """The link counters of a multi-GPU run (`telemetry_gpus` ≥ 2; a single GPU's say nothing about
    communication): per GPU and per direction (`<link>_tx_gbps`, `<link>_rx_gbps`: the mean over the
    run's GPUs, over the measured phase where recorded), NVLink where present, else PCIe, put into
    `counters`; with a ceiling — the calibrated link bandwidth (`optlog calibrate`'s peer-to-peer copy,
    per direction), else the datasheet `interconnect_gbps` — the busier direction's share of it as
    `link_util` (%, what the diagnosis compares). Returns the scale text ("" for a single GPU)."""
    gpus = _num(m, "telemetry_gpus")
    if not gpus or gpus < 2:
        return ""
    for fam, name in LINKS:
        got, top = {}, {}
        for d in ("tx", "rx"):
            k = f"{fam}_{d}_gbps"
            use_steady = steady and _num(m, k + STEADY) is not None
            v = _num(m, k + STEADY) if use_steady else _num(m, k)
            if v is not None:
                got[k] = v
                g = _num(m, k + (STEADY if use_steady else "") + GPU_MAX)
                if g is not None:
                    top[k + GPU_MAX] = g
        if got:
            break
    else:
        return ""
    counters.update(got)
    counters.update(top)
    counters["link_gpus"] = gpus
    # the busiest GPU's link where each GPU's was summarised (a pipeline stage's boundary), else the mean
    busy = max(top.values()) if top else max(got.values())
    rates = ", ".join(f"{d} {fmt_diagnosis(got[f'{fam}_{d}_gbps'])}" for d in ("tx", "rx") if f"{fam}_{d}_gbps" in got)
    head = f"{name} per GPU {rates} GB/s (the mean of the {fmt_whole(gpus)} GPUs"
    head += f"; the busiest GPU's busier direction {fmt_diagnosis(busy)} GB/s, what is compared)" if top else ")"
    ceil, src = ceilings.get("measured_link_gbps"), "calibrated: `optlog calibrate`'s peer-to-peer copy, the fastest pair"
    if not ceil:
        ceil, src = ceilings.get("interconnect_gbps"), "the datasheet interconnect_gbps in optlog.yaml"
    if not ceil:
        return (f"{head}: no link ceiling (no calibrated peer-to-peer copy — run `optlog calibrate` on the GPUs — "
                "and no interconnect_gbps in optlog.yaml): shown, not compared")
    counters["link_util"] = 100.0 * busy / ceil
    out = (f"{head} against the link's {fmt_diagnosis(ceil)} GB/s per direction ({src}): the busier direction at "
           f"{fmt_whole(counters['link_util'])}% (link_util, what is compared)")
    ar = ceilings.get("measured_allreduce_busbw_gbps")
    if ar:
        out += (f"; an NCCL all-reduce reached {fmt_diagnosis(ar)} GB/s bus bandwidth at calibration "
                f"({fmt_whole(100 * busy / ar)}% of that)")
    if counters["link_util"] > 110:
        out += ("; above the ceiling: one pair's copy is below what the links to several peers carry together "
                "(a mesh without a switch), or the ceiling is wrong")
    return out


def _link_name(c: dict[str, float]) -> str:
    return "NVLink" if "nvlink_tx_gbps" in c or "nvlink_rx_gbps" in c else "PCIe"


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
        by_src.setdefault(src, []).append(fmt_measured(k, float(facts[k])).replace("=", " ", 1))
    if "param_bytes" not in facts and ("active_params" in facts or "active_params_per_token" in labels):
        by_src.setdefault("assumed: not found", []).append("param_bytes 2 bytes/parameter")
    return "; ".join(f"{', '.join(v)} ({src})" for src, v in by_src.items())


def diagnose(metrics: dict[str, float], ceilings: dict[str, float], labels: dict[str, Any] | None = None,
             latency_frac: float | None = None, fact_sources: dict[str, str] | None = None,
             phases: bool = True) -> Diagnosis:
    """Diagnose one run point (see the module docstring): the whole point, and where the load generator
    gave each phase's windows, prefill and decode apart (`Diagnosis.phases`). `fact_sources`: where each
    model fact came from (the run's environment `model_facts.sources`), named in the evidence.
    `latency_frac` is accepted for old callers and ignored: no fixed cliff decides (issue 43)."""
    labels = labels or {}
    d = _diagnose_one(metrics, ceilings, labels, fact_sources, None)
    if phases and d.basis == "roofline-estimate":
        pw, dw, dur = _num(metrics, "prefill_window_s"), _num(metrics, "decode_window_s"), _num(metrics, "duration_s")
        if pw and dw and dur and pw + dw > PHASE_OVERLAP * dur:
            # continuous batching: one request's prefill runs beside another's decode, in the same passes
            d.window += (f"; phases not taken apart: the prefill windows ({fmt_sig(pw)} s) and the decode windows "
                         f"({fmt_sig(dw)} s) overlap within the {fmt_sig(dur)} s measured phase (passes carry prompt "
                         "and generated tokens together): the whole point is the diagnosis")
            return d
        for ph in ("prefill", "decode"):
            pm = phase_metrics(metrics, ph)
            if pm is not None:
                pd = _diagnose_one(pm, ceilings, labels, fact_sources, ph)
                if pd.bound is not None or pd.basis != "none":
                    d.phases.append(pd)
    return d


def phase_metrics(m: dict[str, float], phase: str) -> dict[str, float] | None:
    """The metrics of one phase of a serving point, for `_diagnose_one`: its tokens (prefill: the prompt
    tokens, decode: the generated ones), its wall time (the union of the requests' windows in it, from
    the load generator), its passes and its counters (`<field>_prefill`, or the decode windows'
    `<field>_steady`). None where the point lacks that phase's window."""
    t = _num(m, f"{phase}_window_s")
    if not t or t <= 0:
        return None
    out = {k: v for k, v in m.items() if not k.endswith((STEADY, "_prefill", STEADY + GPU_MAX, "_prefill" + GPU_MAX))
           and not k.startswith(("telemetry_",))}
    suffix = "_prefill" if phase == "prefill" else STEADY
    name = suffix.lstrip("_")
    n_win = _num(m, f"telemetry_{name}_windows") or 0.0
    span = _num(m, f"telemetry_{name}_s")
    gpm_s = _num(m, "telemetry_gpm_interval_s")
    # a GPM reading averages over its whole interval: windows shorter than it are not resolved (a 50-ms
    # prefill at concurrency 1 read with 0.5-s GPM is mostly the decode around it): leave GPM out there
    dur = _num(m, "duration_s") or t
    unresolved = bool(gpm_s and span and n_win and span / n_win < gpm_s and span < 0.5 * dur)
    if unresolved:  # neither the phase's nor the whole point's GPM figures describe this phase
        out = {k: v for k, v in out.items() if not k.startswith(GPM_COUNTERS)}
    for k, v in m.items():
        if unresolved and k.startswith(GPM_COUNTERS):
            continue
        if k.endswith(suffix):
            out[k[: -len(suffix)] + STEADY] = v  # the phase's counters, read as "the measured phase"
        elif k.endswith(suffix + "_p50"):
            out[k[: -len(suffix) - 4] + STEADY + "_p50"] = v
        elif k.endswith(suffix + GPU_MAX):
            out[k[: -len(suffix + GPU_MAX)] + STEADY + GPU_MAX] = v
    for k in ("telemetry_window_s", "telemetry_gpm_interval_s"):
        if k in m:
            out[k] = m[k]
    if _num(m, f"telemetry_{suffix.lstrip('_')}_s") is not None:
        out["telemetry_steady_s"] = m[f"telemetry_{suffix.lstrip('_')}_s"]
        out["telemetry_steady_windows"] = m.get(f"telemetry_{suffix.lstrip('_')}_windows", 0.0)
    tin, tout = _tokens(m)
    out["phase_requests_at_once"] = _num(m, "mean_prefilling" if phase == "prefill" else "mean_decoding") or 0.0
    dec_passes = None
    n_dec = _num(m, "srv_n_decode_delta")
    md = _num(m, "mean_decoding") or 1.0
    if tout:
        dec_passes = tout / max(md, 1.0)
    if unresolved:
        out["phase_gpm_unresolved"] = 1.0
    n_req = _num(m, "completed") or 1.0
    if phase == "prefill":
        out["total_input_tokens"], out["total_output_tokens"] = tin or 0.0, 0.0
        # at least one prefill pass per request (fewer where prompts shared a pass: requests prefilling at once)
        floor = n_req / max(_num(m, "mean_prefilling") or 1.0, 1.0)
        if n_dec and dec_passes is not None:
            out["est_passes"] = max(floor, n_dec * _measured_share(m, tout) - dec_passes)
            out["est_passes_from"] = 1.0
        else:
            out["est_passes"], out["est_passes_from"] = floor, 3.0
        srv = _num(m, "srv_prompt_seconds_delta")
        ptok = _num(m, "srv_prompt_tokens_delta")
        if srv is not None and ptok and tin:  # its counters cover the whole point: the measured part's share
            srv *= min(1.0, tin / ptok)
        out["est_kv_reads"] = 0.0
    else:
        out["total_input_tokens"], out["total_output_tokens"] = 0.0, tout or 0.0
        if dec_passes is not None:
            out["est_passes"] = max(1.0, dec_passes)
            out["est_passes_from"] = 2.0
        out["est_context_in"] = (tin or 0.0)
        srv = _num(m, "srv_tokens_predicted_seconds_delta")
        if srv is not None:
            srv *= _measured_share(m, tout)
    # the server's own time in this phase (llama.cpp's per-slot seconds, summed) against the requests'
    # time in it: the rest went to the HTTP request, tokenisation, scheduling — positive evidence of the host
    busy = t * max(out["phase_requests_at_once"], 1.0)
    if srv is not None and busy > 0:
        out["phase_server_s"] = srv
        out["phase_host_share"] = max(0.0, 1.0 - srv / busy)
    out.pop("input_throughput", None)
    out.pop("output_throughput", None)
    out["duration_s"] = t
    return out


def _tokens(m: dict[str, Any]) -> tuple[float | None, float | None]:
    """(input, output) tokens of the measured phase: the load generator's, else rates × duration."""
    tin = _num(m, "total_input_tokens", "input_tokens")
    tout = _num(m, "total_output_tokens", "output_tokens")
    dur = _num(m, "duration_s")
    if tout is None and dur is not None:
        ot = _num(m, "output_throughput")
        tout = ot * dur if ot is not None else None
    if tin is None and dur is not None:
        it = _num(m, "input_throughput")
        tin = it * dur if it is not None else None
    return tin, tout


def _measured_share(m: dict[str, Any], tout: float | None) -> float:
    """The measured part's share of the server's counters (they cover the whole point, warm-up included)."""
    srv_out = _num(m, "srv_tokens_predicted_delta")
    return min(1.0, tout / srv_out) if tout and srv_out and srv_out > 0 else 1.0


def compute_type(labels: dict[str, Any], m: dict[str, Any]) -> tuple[str, str]:
    """(compute type, why) of a point: the `dtype` label or result; else from the model's bytes per
    parameter (2: F16 — the GGUF writer's and llama.cpp's half type; ~1.06 Q8_0 and the k-quants run
    llama.cpp's int8 MMQ kernels); else bf16, said so."""
    dt = labels.get("dtype") or m.get("dtype")
    if isinstance(dt, str) and dt:
        return dt, "the dtype label"
    pb = _num({**m, **MF.effective(labels, m)[0]}, "param_bytes")
    if pb is not None:
        if 1.9 <= pb <= 2.1:
            return "fp16", f"param_bytes {fmt_sig(pb)}: 16-bit weights (label dtype=bf16 if they are bf16)"
        if 0.3 <= pb < 1.9:
            return "int8", f"param_bytes {fmt_sig(pb)}: quantized weights (llama.cpp multiplies them as int8)"
        if pb >= 3.9:
            return "fp32", f"param_bytes {fmt_sig(pb)}"
    return "bf16", "no dtype known: bf16 assumed"


def _peak_for(ceilings: dict[str, float], dt: str) -> tuple[float | None, str]:
    """The calibrated peak for compute type `dt`, and which it is (a missing type said, not guessed)."""
    for k, src in ((f"measured_peak_tflops_{dt}", f"calibrated {dt}"), (f"peak_tflops_{dt}", f"{dt} (optlog.yaml)")):
        if k in ceilings:
            return ceilings[k], src
    p = ceilings.get("peak_tflops")
    if p:
        return p, f"no {dt} peak measured: the default peak_tflops instead"
    return None, f"no {dt} peak"


def _diagnose_one(m: dict[str, float], ceilings: dict[str, float], labels: dict[str, Any],
                  fact_sources: dict[str, str] | None, phase: str | None) -> Diagnosis:
    dtype, dtype_why = compute_type(labels, m)
    counters, cwindow, scale = counter_view(m, ceilings, dtype)
    if phase == "prefill":
        cwindow = cwindow.replace("decode windows", "prefill windows")
    if m.get("phase_gpm_unresolved"):
        cwindow += ("; GPM left out: its readings (telemetry gpm_interval_s) are longer than this phase's windows, "
                    "so they describe the other phase")
    flops, bytes_, t = _num(m, "flops"), _num(m, "bytes"), _num(m, "time_s")
    basis = "roofline"
    est: WorkEstimate | None = None
    if flops is None and bytes_ is None:
        est = estimate_work(labels, m)
        if est is not None:
            flops, bytes_ = est.flops, est.bytes
            t = _num(m, "duration_s")
            basis = "roofline-estimate"
    peak, peak_src = _peak_for(ceilings, dtype)
    bw = ceilings.get("measured_mem_bw_gbps") or ceilings.get("mem_bw_gbps")
    ach_tflops = _num(m, "tflops") if basis == "roofline" else None
    ach_gbps = _num(m, "gbps") if basis == "roofline" else None
    if t and t > 0:
        if flops is not None and ach_tflops is None:
            ach_tflops = flops / t / 1e12
        if bytes_ is not None and ach_gbps is None:
            ach_gbps = bytes_ / t / 1e9
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
        nums["est_act_gb"] = est.parts.get("act_bytes", 0.0) / 1e9
        nums["est_tokens_per_step"] = est.parts["tokens_per_step"]
        if "experts_touched_frac" in est.parts:
            nums["est_experts_touched_frac"] = est.parts["experts_touched_frac"]
    if counters.get("link_util") is not None:
        nums["link_frac"] = counters["link_util"] / 100.0
    if flops is not None and bytes_:
        nums["intensity"] = flops / bytes_
        if peak and bw:
            nums["ridge"] = peak * 1e12 / (bw * 1e9)
    if cf is None and mf is None:
        return _undecided(m, basis, ach_tflops, ach_gbps, flops, bytes_, dtype, counters, cwindow, scale, phase)
    # ---- the units and how busy each is (shares of their ceilings, 0–1)
    units: dict[str, tuple[float, str]] = {}
    dram = counters.get("dram_bw_util_cal", counters.get("dram_bw_util"))
    serving = est is not None
    if mf is not None:
        mem_share = mf
        src = "estimate" if serving else "the bench's bytes"
        if serving and dram is not None:
            mem_share, src = dram / 100.0, "GPM DRAM counter, calibrated scale"
        units["memory"] = (mem_share, src)
    if cf is not None:
        units["compute"] = (cf, f"achieved FLOP/s ÷ {peak_src} peak")
    pipes = {f: counters[f] / 100.0 for f in PIPE_FIELDS if counters.get(f) is not None}
    if pipes:
        pf = max(pipes, key=lambda k: pipes[k])
        units["pipe"] = (pipes[pf], f"GPM {pf} (the {PIPE_FIELDS[pf]} pipe)")
    busiest = max(units, key=lambda k: units[k][0])
    eff = units[busiest][0]
    # ---- positive evidence of waiting: idle SMs (serving) or kernels as short as a launch (a bench)
    sm = counters.get("sm_active")
    wait, wait_why = None, ""
    # a bench's whole-point counters hold its start-up: its SM activity counts over its measured phase only
    measured_idle = False  # whether anything measured the time the unit did not work (not a launch model)
    if sm is not None and (serving or "sm_active_run" in counters):
        measured_idle = True
        wait = max(0.0, 1.0 - sm / 100.0)
        wait_why = f"the SMs idle {fmt_whole(100 * wait)}% of the time (GPM sm_active {fmt_whole(sm)}%)"
    if not serving and t is not None and t > 0:
        launch = min(1.0, LAUNCH_S / t)
        if wait is None or launch > wait:
            wait = launch
            wait_why = (f"one kernel takes {fmt_sig(t * 1e6)} µs, close to a launch (~{fmt_sig(LAUNCH_S * 1e6)} µs): "
                        f"launches take ~{fmt_whole(100 * launch)}% of the loop")
    host, server_s, busy_s = _server_time(m, t) if serving else (None, None, None)
    # on a CPU target the server's compute is the unit's time: its own seconds covering the requests'
    # time is evidence that it did not wait (a GPU's SMs may idle inside it: there only a gap counts)
    cpu = serving and not _num(m, "telemetry_gpus")
    if host is not None and (host > 0.05 or (cpu and wait is None)) and (wait is None or host > wait):
        measured_idle = measured_idle or cpu or host > 0.05
        wait = host
        wait_why = (f"the server spent {fmt_sig(server_s or 0.0)} s of the requests' {fmt_sig(busy_s or 0.0)} s on them "
                    f"(its own counters): {fmt_whole(100 * host)}% went to the HTTP request, tokenisation and scheduling")
    bound: str | None
    lines: list[str] = []
    link = counters.get("link_util")
    link_share = link / 100.0 if link is not None else None
    if link_share is not None and _links_bound(link_share, eff, sm):
        bound, eff = "communication", link_share
        lines.append(_links_why(counters, link_share, f"{_unit_name(busiest, dtype, pipes)} at "
                                f"{fmt_whole(100 * units[busiest][0])}%", sm))
    elif host is not None and wait == host and host > eff:
        bound, eff = "host", host
        lines.append(f"{wait_why}, more than the busiest unit works ({_unit_name(busiest, dtype, pipes)} at "
                     f"{fmt_whole(100 * units[busiest][0])}%): the host side sets the pace of this phase")
    elif serving and sm is not None and sm < HOST_SM:
        bound, eff = "host", wait or 0.0
        lines.append(f"the GPU idles most of the time: {wait_why}; the host side (the server's scheduling and "
                     "sampling loop, tokenisation, HTTP, the client) sets the pace, not the kernels")
    elif wait is not None and wait > eff:
        bound, eff = "latency", wait
        lines.append(f"{wait_why}, more than the busiest unit works ({_unit_name(busiest, dtype, pipes)} at "
                     f"{fmt_whole(100 * units[busiest][0])}%): launches, gaps between short kernels or too little "
                     "work per kernel set the pace")
    elif not measured_idle and eff < 0.5:
        # more than half the time is unexplained and nothing measured the SMs: no call on an absence
        bound = None
        lines.append(f"the busiest unit is {_unit_name(busiest, dtype, pipes)} at only {fmt_whole(100 * eff)}% of its "
                     "ceiling, and nothing measured whether the SMs waited the rest of the time (no GPM sm_active "
                     "over this window" + (", no server time for it" if serving else "") + "): latency, the host or a "
                     "unit without a counter (a CUDA-core pipe), not told apart")
    else:
        bound = busiest
        lines.append(f"the busiest unit is {_unit_name(busiest, dtype, pipes)} at {fmt_whole(100 * eff)}% of its "
                     f"ceiling ({units[busiest][1]})")
    others = [f"{_unit_name(k, dtype, pipes)} {fmt_whole(100 * v[0])}%" for k, v in units.items()
              if k != busiest or bound == "communication"]
    if link_share is not None and bound != "communication":
        others.append(f"{_link_name(counters)} {fmt_whole(100 * link_share)}% of the link bandwidth"
                      + (f" (busier, but the SMs work {fmt_whole(sm)}% of the time: compute overlaps the communication)"
                         if link_share > units[busiest][0] and sm is not None else ""))
    if others:
        lines.append("the others: " + ", ".join(others))
    if wait is not None and bound not in ("latency", "host", "communication"):
        lines.append(wait_why + " (less than the busiest unit works: not latency-bound)")
    occ = counters.get("sm_occupancy")
    if bound == "memory" and occ is not None and sm is not None and sm >= 50 and occ < 50:
        lines.append(f"the SMs are busy ({fmt_whole(sm)}%) but hold few warps (sm_occupancy {fmt_whole(occ)}%) and no "
                     "pipe is busier than DRAM: too few loads in flight to reach the bandwidth — the kernel's memory "
                     "access (not the bytes) is the lever")
    side = None
    if "intensity" in nums and "ridge" in nums:
        side = "above" if nums["intensity"] >= nums["ridge"] else "below"
        agrees = {"above": ("compute",), "below": ("memory", "pipe", "latency", "host")}[side]
        lines.append(f"intensity {fmt_diagnosis(nums['intensity'])} FLOP/B is {side} the ridge "
                     f"{fmt_diagnosis(nums['ridge'])}" + ("" if bound in agrees else
                     " (the roofline alone would say " + ("compute" if side == "above" else "memory") + ")"))
    thr = throttling(counters)
    if thr:
        lines.append(thr)
    if max(cf or 0.0, mf or 0.0) > 1.1:
        lines.append("WARNING: achieved exceeds the ceiling by more than 10 % — the ceilings in optlog.yaml "
                     "(re-run `optlog calibrate`) or the work counts are wrong")
    agree = ""
    if est is not None:
        lines.append(f"estimate: {fmt_diagnosis(est.parts['tokens_per_step'])} tokens per pass ({est.steps_from}), "
                     f"weights {fmt_diagnosis(nums['est_weight_gb'])} GB + KV {fmt_diagnosis(nums['est_kv_gb'])} GB"
                     f" + activations {fmt_diagnosis(nums['est_act_gb'])} GB"
                     + (f", {fmt_share(est.parts['experts_touched_frac'])} of the experts touched per pass"
                        if "experts_touched_frac" in est.parts else ""))
        agree = _agreement(mf, dram, cf, counters)
        if agree:
            lines.append(agree)
    elif dram is not None or counters.get("tensor_active") is not None:
        # the bench's own counts decide; the counters (often over more than its timed loop) can only say
        # whether the same unit is the busier one
        ta = counters.get("tensor_active")
        same_unit = {"memory": (dram or 0) >= (ta or 0), "compute": (ta or 0) >= (dram or 0)}.get(bound or "", True)
        parts = ", ".join(x for x in (f"tensor_active {fmt_whole(ta)}%" if ta is not None else "",
                                       f"DRAM {fmt_whole(dram)}%" if dram is not None else "") if x)
        agree = (f"counters agree: {parts} (the same unit busier)" if same_unit else
                 f"counters disagree: {parts} (the other unit busier: their window may hold more than the timed loop)")
        lines.append(agree)
    if bound is None:
        return Diagnosis(None, basis, "; ".join(lines), nums, counters, _evidence(est, labels, m, fact_sources, dtype,
                         dtype_why, peak_src, agree), _window(est, phase, t, cwindow), scale,
                         "a GPM counter over this phase (a spec's telemetry gpm_interval_s under the phase's windows) "
                         "or the server's own time in it would decide", phase=phase or "")
    nums["efficiency"] = eff
    b = BY_NAME[bound]
    unit = (_unit_name(bound if bound in units else busiest, dtype, pipes) if bound in ("memory", "compute", "pipe")
            else f"the links between GPUs ({_link_name(counters)})" if bound == "communication" else b.unit)
    evidence = _evidence(est, labels, m, fact_sources, dtype, dtype_why, peak_src, agree)
    window = _window(est, phase, t, cwindow)
    d = Diagnosis(bound, basis, "; ".join(lines), nums, counters, evidence, window, scale,
                  _change(bound, eff, units, busiest, wait, dtype, pipes, est, serving, counters),
                  efficiency=eff, unit=unit, phase=phase or "", lever=_lever(bound, thr))
    return d


def _evidence(est: WorkEstimate | None, labels: dict[str, Any], m: dict[str, float], fact_sources: dict[str, str] | None,
              dtype: str, dtype_why: str, peak_src: str, agree: str) -> str:
    if est is not None:
        out = f"estimate from model facts × tokens: {_facts_used(labels, m, fact_sources)}"
    else:
        out = "work counts the bench reported (flops, bytes, time_s)"
    out += f"; compute type {dtype} ({dtype_why}), peak {peak_src}"
    if agree:
        out += "; " + agree.split(":")[0]
    return out


def _window(est: WorkEstimate | None, phase: str | None, t: float | None, cwindow: str) -> str:
    if est is not None:
        what = "the load generator's measured phase" if phase is None else f"the requests' {phase} windows"
        out = f"work over {what} ({fmt_sig(t or 0.0)} s)"
    else:
        out = f"work over the bench's own timed loop (time_s {fmt_sig(t or 0.0)} s)"
    return out + (f"; {cwindow}" if cwindow else "")


def _server_time(m: dict[str, float], t: float | None) -> tuple[float | None, float | None, float | None]:
    """(share of the requests' time the server did not spend on them, server s, requests' s): a phase's
    (`phase_metrics`), or the whole point's from llama.cpp's prompt and generation seconds (scaled to the
    measured part) against the measured phase × mean requests in flight. None without them."""
    # one request at a time only: with several, a request waits inside the server for room in a pass
    # (queueing behind the GPU, not host work), which its slot's seconds do not count
    if _num(m, "phase_host_share") is not None:
        at_once = _num(m, "phase_requests_at_once") or 1.0
        if at_once > SERVER_TIME_MAX_AT_ONCE:
            return None, None, None
        return m["phase_host_share"], _num(m, "phase_server_s"), (t or 0.0) * max(at_once, 1.0)
    ps, gs = _num(m, "srv_prompt_seconds_delta"), _num(m, "srv_tokens_predicted_seconds_delta")
    inflight = _num(m, "mean_inflight")
    if ps is None or gs is None or not t or not inflight or "phase_requests_at_once" in m \
            or inflight > SERVER_TIME_MAX_AT_ONCE:
        return None, None, None
    _tin, tout = _tokens(m)
    srv = (ps + gs) * _measured_share(m, tout)
    busy = t * max(inflight, 1.0)
    return max(0.0, 1.0 - srv / busy), srv, busy


SERVER_TIME_MAX_AT_ONCE = 1.5
"""The server's own seconds are evidence of host time only with about one request at a time."""
LAUNCH_S = 5e-6
"""A kernel launch's cost on the host (~5 µs): a timed loop of kernels this short is launch-bound."""
HOST_SM = 25.0
"""GPM sm_active under this (%) over the measured phase: the GPU idles most of the time, the host sets the pace."""
AGREE_TOL = 0.10
"""The estimate and the counter agree within this (absolute share of the ceiling, 10 points)."""


def _links_bound(link: float, busiest: float, sm: float | None) -> bool:
    """Communication-bound: the links are the busiest unit relative to their ceilings (above DRAM, the
    tensor cores and the pipes) and the SMs wait on them — the links are busy more of the time than
    the SMs are (GPM sm_active; NCCL's kernels hold a few SMs, the rest idle), or, without sm_active,
    the tensor cores busy less than the links (the first condition). Links that carry a trickle while
    the SMs idle are not it: the time goes elsewhere (the host, launches)."""
    return link > busiest and (sm is None or sm / 100.0 <= link)


def _links_why(c: dict[str, float], link: float, other: str, sm: float | None) -> str:
    waits = (f"the SMs wait: sm_active {fmt_whole(sm)}%, less of the time than the links are busy" if sm is not None
             else "no GPM sm_active: the tensor cores busy less than the links")
    return (f"the links are the busiest unit: {_link_name(c)} at {fmt_whole(100 * link)}% of the link bandwidth "
            f"(the busier direction, per GPU over {fmt_whole(c.get('link_gpus', 0))} GPUs), above {other}; {waits}: "
            "the GPUs spend the phase exchanging data"
            + ("" if _link_name(c) == "NVLink" else " (PCIe counts the host's transfers too: with each other or the host)"))


def _links_change(c: dict[str, float], eff: float, other: str) -> str:
    sm = c.get("sm_active")
    out = [f"{other} overtaking the links' {fmt_whole(100 * eff)}%"]
    out.append(f"the SMs busy more of the time than the links (sm_active above {fmt_whole(100 * eff)}%"
               + (f", {fmt_whole(sm)}% now" if sm is not None else ", not recorded") + "): compute overlapping the "
               "communication, the kernels then set the pace")
    out.append("a different link ceiling (calibrate's peer-to-peer copy is one pair's, per direction: links to "
               "several peers at once can carry more, so the share would fall)")
    return "; ".join(out)


def _unit_name(u: str, dtype: str, pipes: dict[str, float]) -> str:
    if u == "memory":
        return "DRAM bandwidth"
    if u == "compute":
        return f"the tensor cores ({dtype})"
    if u == "pipe" and pipes:
        pf = max(pipes, key=lambda k: pipes[k])
        return f"the {PIPE_FIELDS[pf]} pipe (CUDA cores)"
    return BY_NAME[u].unit if u in BY_NAME else u


def throttling(c: dict[str, float]) -> str:
    """Throttling seen over the phase (power cap, thermal), with power and clocks: evidence that the
    units run below their calibrated rate (a power-capped GEMM at 1,900 of 1,980 MHz)."""
    parts = []
    for name, why in (("sw_power_cap", "power cap"), ("hw_slowdown", "hardware slowdown"),
                      ("sw_thermal", "thermal (software)"), ("hw_thermal", "thermal"), ("hw_power_brake", "power brake")):
        v = c.get(f"throttle_{name}")
        if v is not None and v >= 0.1:
            parts.append(f"{why} engaged {fmt_whole(100 * v)}% of the phase")
    pf = c.get("gpu_power_frac")
    capped = bool(parts) or (pf is not None and pf >= 0.95)
    if not capped:
        return ""
    if pf is not None:
        parts.append(f"power at {fmt_whole(100 * pf)}% of the limit")
    clk, top = c.get("sm_clock_mhz"), c.get("sm_clock_mhz_max")
    if clk is not None and top and clk < top - 1:
        parts.append(f"SM clock {fmt_whole(clk)} MHz below the {fmt_whole(top)} MHz it reached")
    return "throttled: " + ", ".join(parts)


def _agreement(mf: float | None, dram: float | None, cf: float | None, c: dict[str, float]) -> str:
    """Whether the estimate and the counters agree, within AGREE_TOL, and the likely cause where not."""
    out = []
    if mf is not None and dram is not None:
        d = dram / 100.0 - mf
        if abs(d) <= AGREE_TOL:
            out.append(f"counters agree: DRAM {fmt_whole(dram)}% of the calibrated bandwidth vs {fmt_whole(100 * mf)}% "
                       f"estimated (within {fmt_whole(100 * AGREE_TOL)} points)")
        elif d > 0:
            out.append(f"counters disagree: DRAM {fmt_whole(dram)}% of the calibrated bandwidth vs {fmt_whole(100 * mf)}% "
                       "estimated: traffic the estimate leaves out (attention's KV reads per pass, activations it "
                       "under-counts, dequantisation scratch) or neighbouring phases in the counter's window")
        else:
            out.append(f"counters disagree: DRAM {fmt_whole(dram)}% of the calibrated bandwidth vs {fmt_whole(100 * mf)}% "
                       "estimated: fewer passes than counted, or weights served from L2 (a small model)")
    ta = c.get("tensor_active_cal", c.get("tensor_active"))
    if cf is not None and ta is not None and cf >= 0.05:
        d = ta / 100.0 - cf
        scale = "calibrated" if "tensor_active_cal" in c else "theoretical"
        if abs(d) <= AGREE_TOL:
            out.append(f"tensor_active {fmt_whole(ta)}% ({scale} scale) agrees with {fmt_whole(100 * cf)}% of peak")
        else:
            out.append(f"tensor_active {fmt_whole(ta)}% ({scale} scale) vs {fmt_whole(100 * cf)}% of peak estimated"
                       + ("" if scale == "calibrated" else ": no datasheet peak_tflops to put it on the calibrated scale"))
    if not out and dram is not None and mf is None:
        out.append(f"counters: DRAM {fmt_whole(dram)}%")
    return "; ".join(out)


def _lever(bound: str, thr: str) -> str:
    lever = BY_NAME[bound].lever
    if bound == "compute" and thr:
        return f"power-capped: the lever is the kernels ({lever})"
    return f"the lever: {lever}"


def _change(bound: str, eff: float, units: dict[str, tuple[float, str]], busiest: str, wait: float | None,
            dtype: str, pipes: dict[str, float], est: WorkEstimate | None, serving: bool,
            counters: dict[str, float] | None = None) -> str:
    """What would change the call: the unit that would overtake, and where the evidence would flip."""
    out = []
    c = counters or {}
    if bound == "communication":
        v, k = max((v[0], k) for k, v in units.items())
        return _links_change(c, eff, f"{_unit_name(k, dtype, pipes)} ({fmt_whole(100 * v)}%)")
    lk = c.get("link_util")
    if lk is not None:
        if lk / 100.0 > units[busiest][0]:  # the links are the busiest unit, but the SMs do not wait on them
            out.append(f"the SMs waiting on the links (sm_active under {fmt_whole(lk)}%, "
                       f"{fmt_whole(c.get('sm_active', 0.0))}% now) would make it communication-bound")
        else:
            out.append(f"the links ({_link_name(c)} {fmt_whole(lk)}% of their bandwidth) overtaking "
                       f"{fmt_whole(100 * units[busiest][0])}% while the SMs wait would make it communication-bound")
    if bound in ("latency", "host"):
        out.append(f"{_unit_name(busiest, dtype, pipes)} at {fmt_whole(100 * units[busiest][0])}% would bound it once it "
                   f"worked more of the time than the SMs wait ({fmt_whole(100 * (wait or 0))}% now): more work per pass "
                   "(a larger batch, larger kernels)")
        if bound == "host":
            out.append(f"sm_active at {fmt_whole(HOST_SM)}% or more would make it latency-bound rather than host-bound")
    else:
        rest = sorted(((v[0], k) for k, v in units.items() if k != bound), reverse=True)
        if rest:
            v, k = rest[0]
            out.append(f"{_unit_name(k, dtype, pipes)} ({fmt_whole(100 * v)}%) overtaking {fmt_whole(100 * eff)}%")
        if wait is not None:
            out.append(f"latency-bound if the SMs waited more than {fmt_whole(100 * eff)}% of the time "
                       f"({fmt_whole(100 * wait)}% now)")
        elif serving:
            out.append("GPM sm_active over the phase (idle SMs are the evidence of latency)")
        if bound == "memory" and not pipes and serving:
            out.append("GPM pipe counters (integer, FP32) busier than DRAM would make it compute-bound on the CUDA cores")
    if est is not None:
        out.append("model facts that are wrong (a label of the fact's name overrides them) or a wrong ceiling would move the estimate")
        if est.steps_from.startswith("client"):
            out.append("the server's own pass count (scrape its /metrics) would replace the client's in-flight requests")
    return "; ".join(out)


def _undecided(m: dict[str, float], basis: str, ach_tflops: float | None, ach_gbps: float | None,
               flops: float | None, bytes_: float | None, dtype: str, counters: dict[str, float], cwindow: str,
               scale: str, phase: str | None) -> Diagnosis:
    missing = None
    if ach_tflops is not None or ach_gbps is not None:
        got = ", ".join(x for x in (f"{fmt_diagnosis(ach_tflops)} TFLOP/s" if ach_tflops is not None else "",
                                    f"{fmt_diagnosis(ach_gbps)} GB/s" if ach_gbps is not None else "") if x)
        missing = (f"work counts give {got} ({basis}), but no ceiling to hold them against: no "
                   f"peak_tflops for {dtype} and no mem_bw_gbps in optlog.yaml (run `optlog calibrate`, "
                   "or write hardware.gpus.<kind>.peak_tflops / mem_bw_gbps)")
    elif flops is not None or bytes_ is not None:
        missing = f"work counts ({basis}) but no time (time_s or duration_s) to turn them into rates"
    d = _telemetry_only(counters, missing)
    d.phase = phase or ""
    if d.basis != "none":
        d.evidence = "counters only: " + (missing or "no work counts (no model facts found, no flops/bytes/time_s)")
        d.window, d.scale = cwindow, scale
        d.change = d.change or ("work counts would decide by the roofline (model facts found at launch or given as labels "
                    "— active_params, param_bytes — or the bench's flops/bytes/time_s)")
    return d


def _telemetry_only(c: dict[str, float], missing: str | None = None) -> Diagnosis:
    """From the GPM counters alone; `missing` says why the roofline could not decide (shown first)."""
    d = _from_counters(c)
    if missing:
        d.reason = f"{missing}; {d.reason}" if d.basis != "none" else missing + (
            "; and no GPM counters (tensor_active, dram_bw_util)" if "GPM" not in missing else "")
    return d


def _from_counters(c: dict[str, float]) -> Diagnosis:
    d = _from_gpm(c)
    link = c.get("link_util")
    if link is None:
        return d
    ta, dr, sm = c.get("tensor_active") or 0.0, _dram(c) or 0.0, c.get("sm_active")
    pipes = [c[f] for f in PIPE_FIELDS if c.get(f) is not None]
    names = {"tensor": ta, "DRAM": dr, **({"busiest pipe": max(pipes)} if pipes else {})}
    top = max(names, key=lambda k: names[k])
    if _links_bound(link / 100.0, names[top] / 100.0, sm):
        other = f"{'the tensor cores' if top == 'tensor' else top} at {fmt_whole(names[top])}%"
        return Diagnosis("communication", "telemetry-only", _links_why(c, link / 100.0, other, sm), 
                         {"link_frac": link / 100.0, "efficiency": link / 100.0}, c,
                         change=_links_change(c, link / 100.0, f"{'the tensor cores' if top == 'tensor' else top} "
                                              f"({fmt_whole(names[top])}%)"),
                         efficiency=link / 100.0, unit=f"the links between GPUs ({_link_name(c)})",
                         lever=_lever("communication", ""))
    d.reason += f"; the others: {_link_name(c)} {fmt_whole(link)}% of the link bandwidth"
    d.numbers["link_frac"] = link / 100.0
    return d


def _from_gpm(c: dict[str, float]) -> Diagnosis:
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
