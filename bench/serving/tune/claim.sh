set -euo pipefail
o() { python3 -m optlog "$@"; }
o hypothesis add "llama-server's settings leave throughput on the table at concurrency 64" --id tuning-gain \
  --statement "on one H200, a 1 B dense model at concurrency 64: the best of --parallel, -ub and --cache-ram found by optlog tune gives >= 10 % more output throughput than the worst configuration the study measured, re-measured" \
  --rationale "the serving session on this GPU found llama-server host-bound from concurrency 64 and its host prompt cache costing 2.4x there"
