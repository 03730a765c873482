"""Replay of the telemetry recorded on an H200 (docs/gpu-proof/diagnosis/): each point's expert call.

The fixtures are the run metrics (`optlog --json run show N`, percentiles left out) and the ceilings
`optlog calibrate` wrote, of two device sessions: 2026-12-02 (issue 30: decode cases, a batch of 64,
bf16 GEMMs) and 2026-12-04 (issue 43: fp16 GEMMs from 256³ to 8192³, a prefill-heavy load at two
micro-batch sizes, Q8_0 decodes, small models); and one H100 session, 2026-12-06 (the 8 B Q8_0 and F16
decodes again, after Nsight Compute read their mat-vec kernels: docs/gpu-proof/diagnosis/2026-12-06-h100/).
The calls below are what an engineer says from the
same numbers, each at more than one size or batch so no rule is fitted to one point.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from optlog.core import bounds as B
from optlog.core.diagnosis import diagnose

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "diagnosis"


def _load(tag: str) -> tuple[dict[str, float], dict[int, dict[str, Any]]]:
    d = json.loads((FIX / f"{tag}.json").read_text())
    return d["ceilings"], {r["id"]: r for r in d["runs"]}


def _call(tag: str, rid: int) -> Any:
    ceilings, runs = _load(tag)
    r = runs[rid]
    return diagnose(r["metrics"], ceilings, r["labels"])


# (session, run, what, bound, efficiency range) — efficiency: the bounding unit's share of its ceiling
# (latency/host: the share of the time waiting)
CASES = [
    # issue 43's session: fp16 GEMM probe small → large (latency → compute), decode-shaped (memory)
    ("h200-2026-12-04", 1, "GEMM 256³: a 10-µs launch loop on 14% of the SMs", "latency", (0.4, 0.95)),
    ("h200-2026-12-04", 2, "GEMM 1024³: still one launch a kernel", "latency", (0.4, 0.7)),
    ("h200-2026-12-04", 3, "GEMM 4096³", "compute", (0.9, 1.05)),
    ("h200-2026-12-04", 4, "GEMM 8192³", "compute", (0.9, 1.05)),
    ("h200-2026-12-04", 5, "GEMM M=16", "memory", (0.7, 0.9)),
    ("h200-2026-12-04", 6, "GEMM M=64", "memory", (0.8, 0.95)),
    # serving, F16 decode at concurrency 1: memory at two model sizes
    ("h200-2026-12-04", 7, "dense 8 B F16 c=1", "memory", (0.6, 0.75)),
    ("h200-2026-12-04", 11, "dense 4 B F16 c=1", "memory", (0.55, 0.7)),
    # prefill-heavy load (2,048-token prompts, 4 output tokens, 8 slots): tensor compute at two -ub
    ("h200-2026-12-04", 8, "dense 8 B prefill -ub 2048", "compute", (0.4, 0.6)),
    ("h200-2026-12-04", 12, "dense 8 B prefill -ub 512", "compute", (0.35, 0.55)),
    # Q8_0 decode at concurrency 1: DRAM at ~40 % with busy SMs, no pipe busier (see the docs)
    ("h200-2026-12-04", 9, "dense 8 B Q8_0 c=1", "memory", (0.3, 0.5)),
    ("h200-2026-12-04", 13, "dense 4 B Q8_0 c=1", "memory", (0.3, 0.45)),
    # small models at concurrency 1: the SMs idle more than DRAM works
    ("h200-2026-12-04", 10, "dense 1 B c=1", "latency", (0.3, 0.55)),
    ("h200-2026-12-04", 14, "dense 0.5 B c=1", "latency", (0.4, 0.6)),
    # the same two decodes on an H100 (another GPU, another bandwidth): Nsight Compute read the Q8_0
    # mat-vec kernels at 57 % of DRAM peak, issue slots 37 %, 66 % of stalls waiting on loads, 46 %
    # occupancy (57 registers a thread): memory latency, not the integer pipe (26 %)
    ("h100-2026-12-06", 1, "dense 8 B Q8_0 c=1 on an H100", "memory", (0.45, 0.6)),
    ("h100-2026-12-06", 2, "dense 8 B F16 c=1 on an H100", "memory", (0.7, 0.85)),
    # issue 30's session, replayed with today's rules
    ("h200-2026-12-02", 1, "GEMM bf16 M=16", "memory", (0.85, 1.0)),
    ("h200-2026-12-02", 2, "GEMM bf16 8192³", "compute", (0.9, 1.05)),
    ("h200-2026-12-02", 3, "dense 8 B c=1", "memory", (0.6, 0.75)),
    ("h200-2026-12-02", 4, "dense 8 B c=1", "memory", (0.6, 0.75)),
    ("h200-2026-12-02", 6, "dense 1 B c=1", "latency", (0.35, 0.55)),
    ("h200-2026-12-02", 9, "MoE 128×512 c=1", "latency", (0.35, 0.55)),
    ("h200-2026-12-02", 11, "dense 8 B c=64: the GPU idles", "host", (0.7, 0.85)),
    ("h200-2026-12-02", 12, "dense 8 B c=64: the GPU idles", "host", (0.7, 0.85)),
]


@pytest.mark.parametrize("tag,rid,what,bound,eff", CASES, ids=[f"{c[0][-5:]}-run{c[1]}" for c in CASES])
def test_each_recorded_point_gets_the_expert_call(tag: str, rid: int, what: str, bound: str,
                                                  eff: tuple[float, float]) -> None:
    d = _call(tag, rid)
    assert d.bound == bound, f"{what}: {d.text()}"
    assert d.efficiency is not None and eff[0] <= d.efficiency <= eff[1], f"{what}: {d.efficiency} {d.reason}"


def test_the_prefill_heavy_load_is_compute_bound_power_capped_and_says_the_lever_is_the_kernels() -> None:
    """Issue 43's pivot: not "latency-bound because under 50 % of the peak"."""
    d = _call("h200-2026-12-04", 8)
    assert d.headline().startswith("compute-bound on the tensor cores (fp16) at ")
    assert "power-capped" in d.headline()
    assert "power cap engaged" in d.reason and "SM clock" in d.reason
    assert "the lever is the kernels" in d.lever
    # every token a pass carries: ~2,500 prompt tokens per llama_decode call, not the 4 generated ones
    assert d.numbers["est_tokens_per_step"] > 1000
    # the peak of the model's compute type (F16 → fp16, which calibrate measured), not bf16's
    assert d.numbers["peak_tflops"] == pytest.approx(653.2)
    assert "intensity" in d.reason and "above the ridge" in d.reason
    # the estimate counts activations now, and says where it and the counter disagree
    assert d.numbers["est_act_gb"] > 0
    assert "counters disagree" in d.reason and "leaves out" in d.reason
    # its prefill and decode ran in the same passes (8 slots): not taken apart, said so
    assert not d.phases and "overlap" in d.window
    m = d.metrics()
    assert m["bound_compute"] == 1.0 and m["bound_latency"] == 0.0 and m["bound_pipe"] == 0.0


def test_phases_apart_at_concurrency_1_prefill_is_host_time_decode_is_memory() -> None:
    d = _call("h200-2026-12-04", 7)
    ph = {p.phase: p for p in d.phases}
    assert set(ph) == {"prefill", "decode"}
    assert ph["decode"].bound == "memory" and ph["decode"].numbers["est_tokens_per_step"] == pytest.approx(1.0, abs=0.05)
    # the 50-ms prefills are not resolved by 0.5-s GPM readings: the server's own prompt time decides
    assert ph["prefill"].bound == "host" and "server spent" in ph["prefill"].reason
    assert "sm_active" not in ph["prefill"].counters
    m = d.metrics()
    assert m["bound_decode_memory"] == 1.0 and m["bound_prefill_host"] == 1.0 and m["bound_prefill_latency"] == 1.0


def test_the_quantized_decode_names_what_the_counters_show() -> None:
    """Q8_0 at c=1: DRAM 40 % of the calibrated bandwidth, SMs 76 % busy with few warps, the integer pipe
    26 % (the F16 decode's is 22 %): memory-bound at low efficiency, the lever the kernel's access."""
    d = _call("h200-2026-12-04", 9)
    assert d.bound == "memory"
    assert "integer pipe" in d.reason and "sm_occupancy" in d.reason and "too few loads in flight" in d.reason


def test_a_pipe_busier_than_dram_and_the_tensor_cores_is_non_tensor_compute() -> None:
    """The rule for CUDA-core work (e.g. a dequantisation that saturates the integer pipe): the same
    recorded Q8_0 point with its integer pipe at 70 %."""
    ceilings, runs = _load("h200-2026-12-04")
    m = dict(runs[9]["metrics"], int_active_steady=70.0)
    d = diagnose(m, ceilings, runs[9]["labels"])
    assert d.bound == "pipe" and d.unit == "the integer pipe (CUDA cores)"
    assert d.headline().startswith("compute-bound on the integer pipe (CUDA cores) at 70%")
    assert d.metrics()["bound_compute"] == 1.0 and d.metrics()["bound_pipe"] == 1.0


def test_latency_needs_positive_evidence_not_a_missing_ceiling() -> None:
    """The 1 B decode without its SM counter: nothing says the SMs waited, so no latency call."""
    ceilings, runs = _load("h200-2026-12-04")
    m = {k: v for k, v in runs[10]["metrics"].items() if not k.startswith(("sm_active", "sm_occupancy"))}
    d = diagnose(m, ceilings, runs[10]["labels"], phases=False)
    assert d.bound is None and "not told apart" in d.reason


def test_one_table_of_bounds_for_diagnosis_and_hypotheses() -> None:
    from optlog.core import discriminate as D

    assert D.EXPONENT is B.EXPONENT and D.BOUND_WORDS is B.BOUND_WORDS
    assert B.named_in("Q8_0 decode is bound by dequantisation on the CUDA cores") == "pipe"
    assert B.named_in("prefill is compute-bound") == "compute"
    assert B.named_in("the server is host-bound at c=64") == "host"
    assert set(B.EXPONENT["batch"]) == set(B.NAMES)


def test_the_report_meets_hypotheses_about_bounds_with_the_diagnosis_and_draws_the_roofline(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from optlog.core import report as C
    from optlog.render import plots as PL

    ceilings, runs = _load("h200-2026-12-04")
    rows_in = [{"id": r["id"], "name": r["name"], "labels": r["labels"], "metrics": r["metrics"], "status": "succeeded",
                "invalidated": False, "hypothesis": "prefill-latency" if r["id"] in (8, 12) else
                ("decode-memory" if r["id"] in (7, 11) else None)} for r in runs.values()]
    rows = C.diagnoses(rows_in, ceilings)
    assert len(rows) == 14   # each launched configuration, the two -ub settings apart (their spec names)
    docs = {"prefill-latency": SimpleNamespace(title="Prefill is latency-bound", statement="", verdicts=[]),
            "decode-memory": SimpleNamespace(title="Decode is memory-bound", statement="", verdicts=[])}
    bv = {v["hypothesis"]: v for v in C.bound_verdicts(docs, rows)}
    assert [a["run"] for a in bv["decode-memory"]["agrees"]] == [7, 11] and not bv["decode-memory"]["disagrees"]
    assert not bv["prefill-latency"]["agrees"]
    assert {d["run"] for d in bv["prefill-latency"]["disagrees"]} == {8, 12}
    assert all("compute-bound on the tensor cores" in d["call"] for d in bv["prefill-latency"]["disagrees"])
    view = C.roofline_view(rows, ceilings)
    assert view is not None and len(view["points"]) == 14 and 653.2 in view["peaks"]
    out = tmp_path / "roof.svg"
    PL.roofline(str(out), "roofline", view)
    svg = out.read_text()
    assert "arithmetic intensity" in svg and "dense8b-prefill-ub2048" in svg and "4,268 GB/s" in svg


@pytest.mark.parametrize("tag", ["h200-2026-12-02", "h200-2026-12-04", "h100-2026-12-06"])
def test_no_diagnosis_text_prints_a_figure_in_scientific_notation(tag: str) -> None:
    """Issue 44's one number style reaches the diagnosis: `active_params 7.983e+09` and `32700 GB`
    read as `7,983,108,096 parameters` and `32,700 GB` (the tables' style, with units)."""
    ceilings, runs = _load(tag)
    for rid, r in runs.items():
        d = diagnose(r["metrics"], ceilings, r["labels"])
        text = d.text()
        assert not re.search(r"\d[eE][+-]\d", text), f"run {rid}: {text}"
        assert not re.search(r"(?<![\d.,])\d{5,}(?![\d.,])", text.replace(tag, "")), f"run {rid}: {text}"
