#!/usr/bin/env bash
# The real path on a GPU machine, through the CLI: `optlog calibrate`, then `optlog run launch` of two
# specs — the GEMM probe (bf16, M = 16 … 8192, K = N = 8192) and a 4 GiB device copy — with NVML/GPM
# telemetry at 10 Hz, then `optlog run show` of every point (metrics, telemetry sparklines, diagnosis).
#
#   bash bench/gpu_launch_proof.sh OUTDIR      (optlog importable: installed, or PYTHONPATH set)
set -euo pipefail
OUT=${1:-/tmp/gpu-launch-proof}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
W=$(mktemp -d /tmp/optlog-gpu-XXXX)
optlog() { "$PY" -m optlog "$@"; }
if command -v git >/dev/null; then
  git -C "$W" init -q && git -C "$W" config user.email gpu@proof && git -C "$W" config user.name proof
fi
optlog init "$W" > "$OUT/init.txt" 2>&1 || {
  # no git on the machine: a workspace without history (optlog works; it commits nothing)
  "$PY" -c "import sys; from optlog.config import default_config_text; open(sys.argv[1] + '/optlog.yaml','w').write(default_config_text('gpu', 'glb5improvement'))" "$W"
  mkdir -p "$W/runs" "$W/hypotheses"; }
cd "$W"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv > "$OUT/gpus.csv" 2>&1 || true
optlog calibrate > "$OUT/calibrate.txt" 2>&1 || echo "calibrate failed: $?" >> "$OUT/calibrate.txt"
cp optlog.yaml "$OUT/optlog.yaml"
cat > runs/gemm.yaml <<SPEC
name: gemm-probe
params: {python: "$PY"}
matrix: {m: [16, 64, 256, 1024, 8192]}
bench:
  cmd: "{{ python }} -m optlog.probes.gemm --m {{ m }} --k 8192 --n 8192 --dtype bf16 --device cuda --min-time-s 3 --output {{ out }}/result.json"
  parser: probe
  env: {CUDA_VISIBLE_DEVICES: "0"}
telemetry: {interval_s: 0.1, gpm_interval_s: 0.2}
labels: {bench: gemm-probe}
SPEC
cat > runs/copy.yaml <<SPEC
name: device-copy
params: {python: "$PY"}
include: [{size_gib: 4}]
bench:
  cmd: "{{ python }} -m optlog.probes.gemm --copy-bytes {{ size_gib * 1073741824 }} --dtype bf16 --device cuda --min-time-s 3 --output {{ out }}/result.json"
  parser: probe
  env: {CUDA_VISIBLE_DEVICES: "0"}
telemetry: {interval_s: 0.1, gpm_interval_s: 0.2}
labels: {bench: device-copy}
SPEC
optlog run launch runs/gemm.yaml > "$OUT/launch-gemm.txt" 2>&1 || true
optlog run launch runs/copy.yaml > "$OUT/launch-copy.txt" 2>&1 || true
optlog run list --json > "$OUT/runs.json"
: > "$OUT/run-show.txt"
for id in $("$PY" -c "import json,sys; print(' '.join(str(r['id']) for r in json.load(open(sys.argv[1]))['runs']))" "$OUT/runs.json"); do
  optlog run show "$id" >> "$OUT/run-show.txt" 2>&1; echo >> "$OUT/run-show.txt"
done
optlog compare --metric tflops --by bench --per m > "$OUT/compare.txt" 2>&1 || true
cat "$OUT/calibrate.txt" "$OUT/launch-gemm.txt" "$OUT/launch-copy.txt" "$OUT/run-show.txt"
