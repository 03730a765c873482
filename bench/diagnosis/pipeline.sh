#!/usr/bin/env bash
# Issue 30's canonical cases on the H200, through `optlog run launch` with no hand-entered work counts.
# Stages skip what is done, so a second device call on a warm machine picks up where the first stopped.
# Started under setsid by start.sh; progress in $S/out/progress.log.
#   D: the carried folder (tree/ = this optlog checkout, whl/, llama.cpp.tar.xz, ggml-vocab-llama-spm.gguf)
#   DIAG_CPU=1: the same pipeline on a CPU machine (dry run): tiny models, $OPTLOG_LLAMA_SERVER, no build.
set -uo pipefail
D=${D:-/root/dev}
S=${S:-/root/diag}
CPU=${DIAG_CPU:-0}
mkdir -p $S/out $S/models
P=$S/out/progress.log
say() { echo "$(date -u +%H:%M:%S) $*" >> $P; }
export PYTHONPATH=/tmp/site:$D/tree PYTHONUNBUFFERED=1 OPTLOG_ACTOR=gpudiag
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=${PY:-python3}
cd $D/tree
source $D/tree/bench/serving/common.sh   # install_wheels, build (CUDA llama-server)
if [ "$CPU" = 1 ]; then
  BIN=${OPTLOG_LLAMA_SERVER:?set OPTLOG_LLAMA_SERVER}; NGL=""; DEV=cpu; THREADS=1; GEMM="--m {{ m }} --k 256 --n 256 --dtype fp32"
  PRESETS="dense8b:tiny dense1b:tiny moe:tiny-moe"; OUTLEN=16; NP=3; BATCH=4; CAL="--quick --device cpu --max-spread 100"
else
  install_wheels; BIN=$S/llama/build/bin/llama-server; NGL="-ngl 99"; DEV=cuda; THREADS=8
  GEMM="--m {{ m }} --k 8192 --n 8192 --dtype bf16 --min-time-s 2"
  PRESETS="dense8b:dense-8b dense1b:dense-1b moe:moe-128x512"; OUTLEN=256; NP=8; BATCH=64; CAL=""
fi
models() {
  for m in $PRESETS; do
    n=${m%%:*}; p=${m#*:}
    [ -s $S/models/$n.json ] && continue
    $PY -m optlog.testing.gguf_model $S/models/$n.gguf --preset $p --vocab $D/ggml-vocab-llama-spm.gguf \
      > $S/models/$n.json 2> $S/out/model-$n.err; say "model $n rc=$? $(grep -E '"(bytes|seconds)"' $S/models/$n.json | tr -d ' \n')"
  done
  cp $S/models/*.json $S/out/ 2>/dev/null
}
spec() {  # name model concurrency parallel repeats extra-server-flags
  local name=$1 model=$2 conc=$3 par=$4 rep=$5 extra=${6:-}
  local np=$(( conc > NP ? conc * 2 : NP ))
  cat > $S/ws/runs/$name.yaml <<SPEC
# issue 30: no active_params / param_bytes / kv_bytes_per_token labels: optlog reads them at launch
name: $name
params: {server: $BIN, model_path: $S/models/$model.gguf, port: 8090}
matrix: {concurrency: [$conc]}
repeats: $rep
server:
  cmd: "{{ server }} -m {{ model_path }} $NGL --host 127.0.0.1 --port {{ port }} -c $(( par * 1024 )) --parallel $par -b 2048 -ub 512 --metrics -t $THREADS $extra"
  ready: {url: "http://127.0.0.1:{{ port }}/health", timeout_s: 600}
bench:
  cmd: "$PY -m optlog.loadgen http://127.0.0.1:{{ port }} --concurrency {{ concurrency }} --num-prompts $np --input-len 128 --output-len $OUTLEN --ignore-eos --warmup {{ min(concurrency, 4) }} --seed {{ repeat }} --output-file {{ out }}/result.jsonl"
  parser: optlog
  timeout_s: 600
telemetry: {interval_s: 0.2, gpm_interval_s: 1, scrape: "http://127.0.0.1:{{ port }}/metrics"}
labels: {model: $model, server: llama.cpp}
SPEC
}
workspace() {
  [ -f $S/ws/optlog.yaml ] && return 0
  mkdir -p $S/ws && cd $S/ws
  git init -q 2>/dev/null && git config user.email gpu@proof && git config user.name gpudiag
  $PY -m optlog init . > $S/out/init.txt 2>&1 || say "init failed: $(tail -2 $S/out/init.txt)"
  mkdir -p runs
  $PY -m optlog calibrate $CAL > $S/out/calibrate.txt 2>&1; say "calibrate rc=$? $(grep -iE 'bandwidth|dram|bf16' $S/out/calibrate.txt | tr -s ' ' | tr '\n' ';')"
  cp optlog.yaml $S/out/optlog.yaml
  spec dense8b-c1 dense8b 1 1 3
  spec dense1b-c1 dense1b 1 1 3
  spec moe-c1 moe 1 1 2
  spec dense8b-batch dense8b $BATCH $BATCH 2 "--cache-ram 0"
  cat > runs/gemm.yaml <<SPEC
name: gemm
params: {python: $PY}
matrix: {m: [16, 8192]}
bench:
  cmd: "{{ python }} -m optlog.probes.gemm $GEMM --device $DEV --output {{ out }}/result.json"
  parser: probe
labels: {bench: gemm-probe}
SPEC
  cp runs/*.yaml $S/out/
}
say "pipeline start (cpu=$CPU)"
{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv; df -h /root; nproc; free -g; } > $S/out/env.txt 2>&1
if [ "$CPU" = 1 ]; then B=""; else build & B=$!; fi
models & M=$!
workspace & W=$!
wait $W; wait $M
if [ -n "$B" ]; then wait $B || { say "build failed"; tail -30 $S/out/build.log >> $P; touch $S/done; exit 1; }; fi
$BIN --version > $S/out/server-version.txt 2>&1
cd $S/ws
for name in gemm dense8b-c1 dense1b-c1 moe-c1 dense8b-batch; do
  [ -f $S/out/launch-$name.txt ] && continue
  say "launch $name"
  $PY -m optlog run launch runs/$name.yaml > $S/out/launch-$name.tmp 2>&1; rc=$?
  mv $S/out/launch-$name.tmp $S/out/launch-$name.txt; say "launch $name rc=$rc $(tail -1 $S/out/launch-$name.txt)"
done
$PY -m optlog run list --json > $S/out/runs.json 2>&1
: > $S/out/run-show.txt
for id in $($PY -c "import json,sys; print(' '.join(str(r['id']) for r in json.load(open(sys.argv[1]))['runs']))" $S/out/runs.json); do
  $PY -m optlog run show $id >> $S/out/run-show.txt 2>&1; echo >> $S/out/run-show.txt
  $PY -m optlog --json run show $id > $S/out/run-$id.json 2>&1
done
$PY $D/tree/bench/diagnosis/results.py $S/out > $S/out/results.md 2>&1; say "results rc=$?"
say "done"
touch $S/done
