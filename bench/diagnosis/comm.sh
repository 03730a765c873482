#!/usr/bin/env bash
# Issue 43, multi-GPU: do the communication-bound and compute-bound calls come out right on hardware?
# On a device kind with 2 or more GPUs (nvidia-h100-x2 … -x8), from the repository root:
#     bash bench/diagnosis/comm.sh            # OUT (the device call's folder) gets everything
# With `.dev/whl` carried (optlog's dependencies as wheels, as bench/diagnosis/start43.sh uses) where the
# device's Python lacks them. Steps, through optlog as a user runs it:
#   1. `optlog calibrate --quick`: matmul peaks, the device copy, and with several GPUs the peer-to-peer
#      copy of every directed pair (measured.p2p_gbps → measured.link_gbps, the link ceiling) and NCCL's
#      all-reduce bus bandwidth (measured.allreduce_busbw_gbps);
#   2. `optlog run launch runs/allreduce.yaml`: bench/diagnosis/comm_loop.py under torch.distributed.run on
#      every GPU, an NCCL all-reduce loop (64 and 512 MiB messages) → expected: communication-bound,
#      NVLink near the calibrated link bandwidth, the SMs waiting;
#   3. `optlog run launch runs/gemm-all.yaml`: the same GPUs each multiplying bf16 matrices (4096³,
#      8192³), no communication → expected: compute-bound on the tensor cores, the links idle among the
#      others;
#   4. `optlog run show` of each run (text and JSON) and the diagnosis lines in comm-summary.txt.
# NVLink multicast (NVLS) is never used: the three variables below stay set for every process.
# COMM_DRY=1 (a CPU machine, a stand-in nvidia-smi on PATH): no calibrate, `run launch --dry-run` (the specs plan).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD
OUT=${OUT:-$ROOT/comm-out}
S=${S:-/root/comm}
PY=${PY:-python3}
mkdir -p "$OUT" "$S"
say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$OUT/progress.log"; }
N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$N" -lt 2 ]; then say "comm.sh needs 2 or more GPUs (nvidia-smi lists $N)"; exit 2; fi
if [ -d "$ROOT/.dev/whl" ] && [ ! -f /tmp/site/.ok ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$ROOT"/.dev/whl/*.whl \
    > "$OUT/pip.log" 2>&1 && touch /tmp/site/.ok; say "wheels installed rc=$?"
fi
export PYTHONPATH=/tmp/site:$ROOT PYTHONUNBUFFERED=1 OPTLOG_ACTOR=gpucomm
{ nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink -s 2>&1 | head -40; $PY -c "import torch; print(torch.__version__, torch.cuda.nccl.version())"; } \
  > "$OUT/env.txt" 2>&1
say "GPUs: $N"
rm -rf "$S/ws" && mkdir -p "$S/ws/runs" && cd "$S/ws" || exit 1
git init -q && git config user.email gpu@proof && git config user.name gpucomm
$PY -m optlog init . > "$OUT/init.txt" 2>&1; say "init rc=$?"
DRY=${COMM_DRY:-0}
if [ "$DRY" = 1 ]; then LAUNCH="--dry-run"; else
  LAUNCH=""
  $PY -m optlog calibrate --quick > "$OUT/calibrate.txt" 2>&1; say "calibrate rc=$? (1: a figure refused, the rest written)"
fi
cp optlog.yaml "$OUT/optlog.yaml"
LOOP="{{ python }} -m torch.distributed.run --standalone --nproc-per-node {{ gpus }} $ROOT/bench/diagnosis/comm_loop.py"
cat > runs/allreduce.yaml <<SPEC
# issue 43: an NCCL all-reduce loop on every GPU: the links busy, the SMs waiting
name: allreduce
params: {python: $PY, gpus: $N}
matrix: {mib: [64, 512]}
bench:
  cmd: "$LOOP --mode allreduce --mib {{ mib }} --seconds 15 --out {{ out }}"
  parser: json
  env: {NCCL_NVLS_ENABLE: "0", TORCH_SYMM_MEM_DISABLE_MULTICAST: "1", NVSHMEM_DISABLE_NVLS: "1"}
telemetry: {interval_s: 0.2, gpm_interval_s: 1}
labels: {bench: nccl-allreduce, workload: comm}
SPEC
cat > runs/gemm-all.yaml <<SPEC
# issue 43: the same GPUs each multiplying bf16 matrices, no communication: the tensor cores busy
name: gemm-all
params: {python: $PY, gpus: $N}
matrix: {size: [4096, 8192]}
bench:
  cmd: "$LOOP --mode gemm --size {{ size }} --seconds 15 --out {{ out }}"
  parser: probe
  env: {NCCL_NVLS_ENABLE: "0", TORCH_SYMM_MEM_DISABLE_MULTICAST: "1", NVSHMEM_DISABLE_NVLS: "1"}
telemetry: {interval_s: 0.2, gpm_interval_s: 1}
labels: {bench: gemm-all-gpus, workload: compute}
SPEC
cp runs/*.yaml "$OUT/"
for s in allreduce gemm-all; do
  $PY -m optlog run launch runs/$s.yaml $LAUNCH > "$OUT/launch-$s.txt" 2>&1; say "launch $s rc=$?"
done
[ "$DRY" = 1 ] && { cat "$OUT"/launch-*.txt; exit 0; }
ids=$($PY -m optlog --json run list | $PY -c "import json,sys; print(' '.join(str(r['id']) for r in json.load(sys.stdin)['runs']))")
for id in $ids; do
  $PY -m optlog run show "$id" > "$OUT/run-$id.txt" 2>&1
  $PY -m optlog --json run show "$id" > "$OUT/run-$id.json" 2>&1
  { echo "run $id: $(grep -m1 -E '^(labels|bench)' "$OUT/run-$id.txt")"; grep -A8 "^diagnosis" "$OUT/run-$id.txt"; echo; } \
    >> "$OUT/comm-summary.txt"
done
grep -E "link_gbps|link_method|allreduce_busbw|p2p" "$OUT/optlog.yaml"
cat "$OUT/comm-summary.txt"
