#!/usr/bin/env bash
# The pivot, registered before its runs: the first sweep showed the GPU idle (sm_active 2-16 %) at
# concurrency >= 64 while the server batched 45-166 sequences per decode call and ITL grew to 150 ms.
set -euo pipefail
o() { ${PY:-python3} -m optlog "$@"; }
o hypothesis add "llama-server is host-bound above concurrency 16" --id dense-host-bound \
  --statement "at concurrency 64 the GPU idles between decode steps (sm_active < 25 %): the server's single host loop, not HBM or the tensor cores, sets the step time" \
  --rationale "sweep 1: 388 decode calls took 15-33 s at c=64 (39-85 ms a step) where the weights need 3.8 ms per read; sm_active 9-16 %, dram_bw_util 6-10 %"
o prediction add dense-host-bound --expect "a.sm_active < 25" --a cache_ram=8192 --per concurrency --where "concurrency >= 64"
o hypothesis add "The RAM prompt cache costs the host loop its time" --id dense-cache-ram --parent dense-host-bound \
  --statement "with --cache-ram 0 (no host prompt cache) output throughput at c=64 is >= 1.3x the default (8192 MiB)" \
  --rationale "repeat 1 was 2x slower than repeat 0 at c=64 and 256 (dense, 147 KB of KV a token) but not for the MoE at 256 (25 KB): a cache that grows across requests"
o prediction add dense-cache-ram --metric output_throughput --expect "a >= b * 1.3" --a cache_ram=0 --b cache_ram=8192 --per concurrency
