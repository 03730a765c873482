#!/usr/bin/env bash
# Hypotheses and predictions, registered BEFORE any serving run exists (run in the workspace).
set -euo pipefail
o() { ${PY:-python3} -m optlog "$@"; }
o hypothesis add "Dense decode at concurrency 1 is memory-bound" --id dense-c1-memory \
  --statement "8.1 B F16 dense llama on llama.cpp CUDA, concurrency 1: each token reads all 16 GB of weights, so decode runs at >= 60 % of the calibrated device bandwidth" \
  --rationale "intensity of a batch-1 decode is ~1 FLOP/byte, far below the H200 ridge (~160 FLOP/B)"
o prediction add dense-c1-memory --expect "a.roofline_mem_frac >= 0.6" --a model=dense --where "concurrency <= 1"
o prediction add dense-c1-memory --expect "a.dram_bw_util >= 60" --a model=dense --where "concurrency <= 1"
o hypothesis add "Dense decode at low concurrency is launch/latency-bound" --id dense-low-latency --rival dense-c1-memory \
  --statement "at concurrency <= 4 neither ceiling is near: llama.cpp's per-token kernel launches and synchronisation dominate" \
  --rationale "rival: one stream of small kernels may leave HBM idle between launches"
o prediction add dense-low-latency --expect "a.dram_bw_util < 40 and a.tensor_active < 25" --a model=dense --where "concurrency <= 4"
o hypothesis add "Dense serving turns compute-bound by concurrency 64" --id dense-c64-compute \
  --statement "weights are read once per decode step for the whole batch, so by 64 sequences per step the tensor cores, not HBM, limit" \
  --rationale "64 tokens per weight read = 64 FLOP/B of weights: still under the ridge on paper, but KV and launch costs are not counted; the claim is the naive one"
o prediction add dense-c64-compute --expect "a.bound_compute > 0.5" --a model=dense --where "concurrency >= 64"
o prediction add dense-c64-compute --expect "a.tensor_active > a.dram_bw_util" --a model=dense --where "concurrency >= 64"
o hypothesis add "MoE throughput scales with concurrency while per-expert batches stay small" --id moe-scaling \
  --statement "128 experts, 8 used: at concurrency 64 each expert sees ~4 tokens per step, so output throughput at 64 is >= 10x that at 1 and the point stays memory-bound" \
  --rationale "expert weights are re-read per step for few tokens each; active params per token understate the bytes"
o prediction add moe-scaling --metric output_throughput --expect "a >= b * 10" --a concurrency=64 --b concurrency=1 --where "model == moe"
o prediction add moe-scaling --expect "a.bound_memory > 0.5" --a model=moe --where "concurrency >= 16"
o hypothesis add "Throughput per watt rises with concurrency" --id perf-per-watt \
  --statement "tokens per joule at concurrency 256 are >= 5x those at concurrency 1 for both models" \
  --rationale "board power grows far less than throughput as the batch grows"
o prediction add perf-per-watt --metric tokens_per_joule --expect "a >= b * 5" --a concurrency=256 --b concurrency=1 --per model
