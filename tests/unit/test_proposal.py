"""core.proposal and core.costing (issue 45): a proposed spec is checked against what it edits (an
axis only a label, a workload that cannot fill the batch), sized to the machine (threads never past
its CPUs, splits never past its GPUs), and costed from the runs already measured. Pure: plain data."""

from __future__ import annotations

from optlog.core import costing as CO
from optlog.core import discriminate as D
from optlog.core import proposal as P
from optlog.core import verdict as V
from optlog.core.hypothesis import Prediction

# the issue's spec: the bench's client concurrency follows {{ parallel }}, num_prompts is a fixed 4
ISSUE_SPEC = {
    "params": {"num_prompts": 4},
    "matrix": {"parallel": [1, 8], "concurrency": [8]},
    "server": {"cmd": "llama-server -m m.gguf -t 1 --parallel {{ parallel }} --port {{ port }}"},
    "bench": {"cmd": "python -m optlog.loadgen http://127.0.0.1:{{ port }} --concurrency {{ parallel }} "
                     "--num-prompts {{ num_prompts }} --output-file {{ out }}/r.jsonl"},
}


def _views(par_levels, prompts=4, conc=None):
    return [P.PointView({"parallel": p, "concurrency": 8, "repeat": 0},
                        ["llama-server", "--parallel", str(p)],
                        ["python", "--concurrency", str(conc or p), "--num-prompts", str(prompts)])
            for p in par_levels]


def test_an_axis_no_command_reads_is_only_a_label():
    assert P.reads(ISSUE_SPEC, "parallel") and P.reads(ISSUE_SPEC, "num_prompts")
    assert not P.reads(ISSUE_SPEC, "concurrency")  # `--concurrency {{ parallel }}`: the flag, not the name
    probs = P.axis_problems(ISSUE_SPEC, ["parallel", "concurrency"], _views([1, 8]))
    assert probs == ["concurrency is only a label: no server or bench placeholder reads it ({{ concurrency }})"]
    # read, but two levels that run the same commands (a placeholder in a part that does not change them)
    same = [P.PointView({"parallel": p}, ["srv"], ["bench"]) for p in (1, 8)]
    assert P.axis_problems(ISSUE_SPEC, ["parallel"], same) == [
        "parallel: points that differ only in parallel run the same commands"]


def test_the_workload_must_fill_the_batch():
    # 4 prompts cannot fill 8 slots twice; the client concurrency follows parallel, so it is enough
    probs = P.workload_problems(_views([1, 8]), "parallel")
    assert [(x.kind, x.labels["parallel"], x.have, x.need) for x in probs] == [("prompts", 8, 4.0, 16.0)]
    assert "sends 4 requests, fewer than 16 (2 per slot)" in probs[0].text()
    # a client concurrency of 4 beside a batch of 8 caps it
    probs = P.workload_problems(_views([8], prompts=16, conc=4), "parallel")
    assert [(x.kind, x.have, x.need) for x in probs] == [("concurrency", 4.0, 8.0)]
    assert P.workload_problems(_views([1, 8], prompts=16), "parallel") == []
    assert P.flag_value(["b", "--num-prompts=12"], P.PROMPT_FLAGS) == 12
    assert P.flag_value(["b", "--concurrency", "2,4"], P.CLIENT_CONCURRENCY_FLAGS) == 2


def test_rewrite_a_flag_of_a_command_template():
    cmd, old = P.rewrite_flag(ISSUE_SPEC["bench"]["cmd"], P.PROMPT_FLAGS, "{{ parallel * 2 }}")
    assert old == "{{ num_prompts }}" and "--num-prompts {{ parallel * 2 }} --output-file" in cmd
    cmd, old = P.rewrite_flag(["b", "--num-prompts=4", "x"], P.PROMPT_FLAGS, "16")
    assert (cmd, old) == (["b", "--num-prompts=16", "x"], "4")
    assert P.rewrite_flag("bench --rate 3", P.PROMPT_FLAGS, "16") == ("bench --rate 3", None)


def test_levels_are_sized_to_the_machine():
    two = P.resources_of([{"host": {"cpus": 2}, "gpus": []}, {"host": {"cpus": 16}}])
    assert (two.cpus, two.gpus) == (2, 0)
    kept, why = P.fit_levels("threads", [4, 8, 16, 32], two)
    assert kept == [] and why == "threads 4, 8, 16, 32 left out: the machine has 2 CPUs, 0 GPUs"
    assert P.fit_levels("parallel", [4, 8], two) == ([4, 8], None)  # not a machine resource
    eight = P.resources_of([{"host": {"cpus": 64}, "gpus": [{"memory_mib": 81559}] * 4}])
    assert P.fit_levels("config", ["tp2pp4", "tp1pp2"], eight)[0] == ["tp1pp2"]
    assert P.fit_levels("threads", [4], P.Resources())[0] == [4]  # unknown: nothing to size by


def test_a_scaling_claim_never_proposes_more_threads_than_cpus():
    """The issue's scaling candidate proposed 4 to 32 threads on a 2-CPU machine."""
    fast = Prediction(id="compute.p1", expect="k(threads) >= 0.8", metric="tps", a={"m": "x"})
    flat = Prediction(id="memory.p1", expect="k(threads) < 0.3", metric="tps", a={"m": "x"})
    runs = [V.RunRow(i, {"m": "x", "threads": t}, {"tps": y})
            for i, (t, y) in enumerate([(1, 10.0), (1, 13.0), (2, 14.0), (2, 19.0)], 1)]
    ev = V.Evidence(runs)
    res = V.evaluate([fast, flat], ev, {})
    hyps = {"compute": D.Hyp("compute", preds=[fast], results={fast.id: res[fast.id]}),
            "memory": D.Hyp("memory", rivals=["compute"], preds=[flat], results={flat.id: res[flat.id]})}
    (free,) = D.analyse(hyps, ev.runs, {})
    assert any(c.axis == "threads" and max(c.levels) > 2 for c in free["candidates"])  # unsized, as before
    (e,) = D.analyse(hyps, ev.runs, {}, None, P.Resources(cpus=2))
    assert not any(c.axis == "threads" for c in e["candidates"]), e["candidates"]
    assert any("threads 4" in n and "the machine has 2 CPUs" in n for n in e["notes"] + e.get("missing", []))
    (e,) = D.analyse(hyps, ev.runs, {}, None, P.Resources(cpus=4))
    assert all(max(c.levels) <= 4 for c in e["candidates"] if c.axis == "threads") and e["candidates"]


def test_the_cost_comes_from_the_median_run_by_level():
    measured = [CO.Measured({"parallel": 1}, s, 2) for s in (3.0, 4.0, 30.0)] + \
               [CO.Measured({"parallel": 2}, s, 4) for s in (5.0, 6.0)]
    planned = [CO.Planned({"parallel": p}, 2 * p) for p in (1, 4) for _ in range(3)]
    c = CO.estimate(planned, measured, "parallel")
    assert c.runs == 6
    # parallel 1: the median 4 s (the 30 s outlier does not move it); parallel 4: nearest is 2 (median
    # 5.5 s at 4 requests), 8 requests → between 5.5 s (overlapped) and 11 s (serial)
    assert c.low_s == 3 * 4.0 + 3 * 5.5 and c.high_s == 3 * 4.0 + 3 * 11.0
    assert c.low_s < c.seconds < c.high_s
    assert c.by_level == [{"level": 1, "median_s": 4.0, "runs": 3}, {"level": 2, "median_s": 5.5, "runs": 2}]
    assert c.text().startswith("6 runs, about 35s (28s–45s) from 5 measured runs: the median by parallel (1: 4.0s (3); 2: 5.5s (2))")
    none = CO.estimate(planned, [], "parallel")
    assert none.runs == 6 and none.seconds is None and "time unknown" in none.text()


def test_a_fits_noise_is_the_scatter_about_its_line_not_the_trend():
    """A first look of one run at parallel 1 and one at 2 read as noise the trend between the two
    levels (sd 0.38 on the real server) and asked for 15 repeats of 5 levels, 75 runs; a fit's noise
    is the scatter of its points about the line, unknown below 3 points."""
    mem = Prediction(id="memory.p1", expect="k(parallel) >= 0.8", metric="tps", a={"m": "x"})
    cpu = Prediction(id="compute.p1", expect="k(parallel) <= 0.3", metric="tps", a={"m": "x"})

    def judged(points):
        runs = [V.RunRow(i, {"m": "x", "parallel": p}, {"tps": y}) for i, (p, y) in enumerate(points, 1)]
        ev = V.Evidence(runs)
        return V.evaluate([mem, cpu], ev, {}), ev

    res, ev = judged([(1, 30.0), (2, 30.0 * 2 ** 0.8)])  # k = 0.8: memory unclear, compute falsified
    assert D.noise_of(list(res.values()))[0] is None
    hyps = {"memory": D.Hyp("memory", preds=[mem], results={mem.id: res[mem.id]}),
            "compute": D.Hyp("compute", rivals=["memory"], preds=[cpu], results={cpu.id: res[cpu.id]})}
    (e,) = D.analyse(hyps, ev.runs, {}, "memory")
    assert e["state"] == "partly" and e["noise"] is None, e["why"]
    (c,) = [c for c in e["candidates"] if c.source == "scaling"]
    assert c.repeats == 3 and c.levels == [4], c
    # on a line y = 30·p^0.5 with ±5 % scatter, the noise is about 0.05, not the trend's spread (0.3)
    res, _ = judged([(1, 30.0 * 1.05), (1, 30.0 * 0.95), (2, 42.4 * 1.05), (2, 42.4 * 0.95), (4, 60.0)])
    noise = D.noise_of(list(res.values()))[0]
    assert noise is not None and 0.02 < noise < 0.08, noise


def test_a_batch_level_is_checked_against_the_memory_it_needs():
    """Issue 45: weights + KV per token × context per slot × slots, + 20 % margin, against the GPU's
    memory (or the host's for a CPU target); a level that does not fit is dropped or capped, with the
    figures; an unknown fact or memory makes no check, and says so."""
    gib = 1024 ** 3
    # 16 GiB of weights, 128 KiB of KV per token, vLLM's 4,096 tokens a sequence: 0.5 GiB a slot
    mem = P.need_of({"weight_bytes": 16 * gib, "kv_bytes_per_token": 131072},
                    ["vllm", "serve", "--max-model-len", "4096"], [], None)
    assert mem.tokens_per_slot == 4096 and mem.context_from == "the server's context per sequence"
    gpu = P.resources_of([{"host": {"cpus": 32}, "gpus": [{"memory_mib": 81920}]}])  # one 80 GiB GPU
    kept, why = P.fit_memory("parallel", [64, 128], [32], gpu, mem)  # 128 slots: (16 + 64) × 1.2 = 96 GiB
    assert kept == [64, 101] and why == (
        "parallel 128 needs ~96 GiB of KV + weights (64 GiB of KV cache for 128 slots × 4,096 tokens, the "
        "server's context per sequence, + 16 GiB of weights, + 20 % margin); the GPU has 80 GiB: capped at 101")
    assert P.fit_memory("parallel", [64], [32], gpu, mem) == ([64], None)
    # llama.cpp: -c is the whole cache, shared out among the slots; a CPU target: the host's memory
    cpu = P.Resources(cpus=2, gpus=0, host_memory_mib=8192)
    small = P.need_of({"total_params": 6e9, "param_bytes": 1.0, "kv_bytes_per_token": 131072},
                      ["llama-server", "-c", "8192", "--parallel", "2"], [], 2)
    assert small.tokens_per_slot == 4096 and small.weight_bytes == 6e9
    kept, why = P.fit_memory("parallel", [4, 8], [2], cpu, small)
    assert kept == [] and why.endswith("the host has 8 GiB (no GPU): left out (at most 2 slots fit, no level past the "
                                       "2 measured)"), why
    # unknown: a fact, the context, the target's memory
    assert P.fit_memory("parallel", [4], [2], cpu, P.need_of({}, [], [], None)) == (
        [4], "memory not checked for parallel 4: no weight_bytes or kv_bytes_per_token model fact on the runs "
             "(optlog reads them from the GGUF header or config.json of the server's model at launch)")
    nocontext = P.need_of({"weight_bytes": gib, "kv_bytes_per_token": 1024}, ["srv"], ["bench"], None)
    assert P.fit_memory("parallel", [4], [2], cpu, nocontext)[1].startswith(
        "memory not checked for parallel 4: the context per slot is unknown")
    assert P.fit_memory("parallel", [4], [2], P.Resources(gpus=1), mem)[1] == (
        "memory not checked for parallel 4: the GPUs' memory is unknown (no gpus[].memory_mib in the runs' "
        "environment)")
    # the largest need among the runs a candidate derives from
    assert P.combine([small, mem]).weight_bytes == 16 * gib and P.combine([]).unknown
