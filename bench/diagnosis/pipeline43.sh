#!/usr/bin/env bash
# Issue 43's cases on the H200 (the bounds an expert calls differently), through `optlog run launch` with
# no hand-entered work counts. Like pipeline.sh (issue 30): stages skip what is done, progress in
# $S/out/progress.log, started under setsid by start43.sh.
#   memory:      F16 decode, concurrency 1, 8 B and 4 B
#   tensor:      prefill-heavy load of the 8 B (2,048-token prompts, 4 output tokens, 8 slots), -ub 2048 and -ub 512
#   non-tensor:  Q8_0 decode, concurrency 1, 8 B and 4 B (dequantisation on the CUDA cores)
#   latency:     small models at concurrency 1 (1 B, 0.5 B)
#   GEMM probe:  fp16 square 256 → 8192 (latency → compute), decode-shaped M=16 and 64 (memory)
#   D: the carried folder (tree/, whl/, llama.cpp.tar.xz, ggml-vocab-llama-spm.gguf)
#   DIAG_CPU=1: the same pipeline on a CPU (dry run): tiny models, $OPTLOG_LLAMA_SERVER, no build.
#   DIAG_MODELS / DIAG_ONLY: only these models (name:preset:type:extra …) / only these specs (names).
set -uo pipefail
D=${D:-/root/dev}
S=${S:-/root/diag43}
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
  BIN=${OPTLOG_LLAMA_SERVER:?set OPTLOG_LLAMA_SERVER}; NGL=""; DEV=cpu; THREADS=1
  GEMMSQ="--m {{ size }} --k {{ size }} --n {{ size }} --dtype fp32"; GEMMSK="--m {{ m }} --k 256 --n 256 --dtype fp32"
  SIZES="64, 256"; SKINNY="16"
  MODELS="dense8b:tiny:f16: dense8b-q8:tiny:q8_0: dense4b:tiny:f16: dense4b-q8:tiny:q8_0: dense1b:tiny:f16: dense05b:tiny:f16:"
  OUTLEN=16; NP=3; PLEN=256; PNP=4; PPAR=2; CAL="--quick --device cpu --max-spread 100"
else
  install_wheels; BIN=$S/llama/build/bin/llama-server; NGL="-ngl 99"; DEV=cuda; THREADS=8
  GEMMSQ="--m {{ size }} --k {{ size }} --n {{ size }} --dtype fp16 --min-time-s 1"
  GEMMSK="--m {{ m }} --k 8192 --n 8192 --dtype fp16 --min-time-s 1"
  SIZES="256, 1024, 4096, 8192"; SKINNY="16, 64"
  MODELS="dense8b:dense-8b:f16: dense8b-q8:dense-8b:q8_0: dense4b:dense-8b:f16:--n-layer=18 dense4b-q8:dense-8b:q8_0:--n-layer=18 dense1b:dense-1b:f16: dense05b:dense-1b:f16:--n-layer=8"
  OUTLEN=256; NP=8; PLEN=2048; PNP=48; PPAR=8; CAL=""
fi
MODELS=${DIAG_MODELS:-$MODELS}
models() {
  for m in $MODELS; do
    IFS=: read -r n p t extra <<< "$m"
    [ -s $S/models/$n.json ] && continue
    $PY -m optlog.testing.gguf_model $S/models/$n.gguf --preset $p --type $t ${extra/=/ } --vocab $D/ggml-vocab-llama-spm.gguf \
      > $S/models/$n.json 2> $S/out/model-$n.err; say "model $n rc=$? $(grep -E '"(bytes|seconds)"' $S/models/$n.json | tr -d ' \n')"
  done
  cp $S/models/*.json $S/out/ 2>/dev/null
}
spec() {  # name model concurrency parallel input-len output-len num-prompts extra-server-flags
  local name=$1 model=$2 conc=$3 par=$4 inlen=$5 outlen=$6 np=$7 extra=${8:-}
  cat > $S/ws/runs/$name.yaml <<SPEC
# issue 43: no active_params / param_bytes / kv_bytes_per_token labels: optlog reads them at launch
name: $name
params: {server: $BIN, model_path: $S/models/$model.gguf, port: 8090}
matrix: {concurrency: [$conc]}
repeats: 1
server:
  cmd: "{{ server }} -m {{ model_path }} $NGL --host 127.0.0.1 --port {{ port }} -c $(( par * (inlen + outlen + 256) )) --parallel $par --metrics -t $THREADS $extra"
  ready: {url: "http://127.0.0.1:{{ port }}/health", timeout_s: 600}
bench:
  cmd: "$PY -m optlog.loadgen http://127.0.0.1:{{ port }} --concurrency {{ concurrency }} --num-prompts $np --input-len $inlen --output-len $outlen --ignore-eos --warmup {{ min(concurrency, 4) }} --seed {{ repeat }} --output-file {{ out }}/result.jsonl"
  parser: optlog
  timeout_s: 600
telemetry: {interval_s: 0.2, gpm_interval_s: 0.5, scrape: "http://127.0.0.1:{{ port }}/metrics"}
labels: {model: $model, server: llama.cpp}
SPEC
}
workspace() {
  [ -f $S/ws/runs/gemm-square.yaml ] && return 0
  mkdir -p $S/ws && cd $S/ws
  git init -q 2>/dev/null && git config user.email gpu@proof && git config user.name gpudiag
  $PY -m optlog init . > $S/out/init.txt 2>&1 || say "init failed: $(tail -2 $S/out/init.txt)"
  mkdir -p runs
  spec dense8b-c1 dense8b 1 1 128 $OUTLEN $NP "-b 2048 -ub 512"
  spec dense4b-c1 dense4b 1 1 128 $OUTLEN $NP "-b 2048 -ub 512"
  spec dense8b-prefill-ub2048 dense8b $PPAR $PPAR $PLEN 4 $PNP "-b 4096 -ub 2048 --cache-ram 0"
  spec dense8b-prefill-ub512 dense8b $PPAR $PPAR $PLEN 4 $PNP "-b 2048 -ub 512 --cache-ram 0"
  spec dense8b-q8-c1 dense8b-q8 1 1 128 $OUTLEN $NP "-b 2048 -ub 512"
  spec dense4b-q8-c1 dense4b-q8 1 1 128 $OUTLEN $NP "-b 2048 -ub 512"
  spec dense1b-c1 dense1b 1 1 128 $OUTLEN $NP "-b 2048 -ub 512"
  spec dense05b-c1 dense05b 1 1 128 $OUTLEN $NP "-b 2048 -ub 512"
  for g in square skinny; do
    if [ $g = square ]; then mat="size: [$SIZES]"; args=$GEMMSQ; else mat="m: [$SKINNY]"; args=$GEMMSK; fi
    cat > runs/gemm-$g.yaml <<SPEC
name: gemm-$g
params: {python: $PY}
matrix: {$mat}
bench:
  cmd: "{{ python }} -m optlog.probes.gemm $args --device $DEV --output {{ out }}/result.json"
  parser: probe
telemetry: {interval_s: 0.1, gpm_interval_s: 0.25}
labels: {bench: gemm-probe}
SPEC
  done
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
if [ ! -s $S/out/calibrate.txt ]; then  # after the build: nothing else on the CPUs
  $PY -m optlog calibrate $CAL > $S/out/calibrate.txt 2>&1; say "calibrate rc=$? $(grep -iE 'peak|bandwidth|REFUSED' $S/out/calibrate.txt | tr -s ' ' | tr '\n' ';')"
  cp optlog.yaml $S/out/optlog.yaml
fi
for name in ${DIAG_ONLY:-gemm-square gemm-skinny dense8b-c1 dense8b-prefill-ub2048 dense8b-q8-c1 dense1b-c1 dense4b-c1 dense8b-prefill-ub512 dense4b-q8-c1 dense05b-c1}; do
  [ -f $S/out/launch-$name.txt ] && continue
  [ -f $S/stop ] && break
  say "launch $name"
  $PY -m optlog run launch runs/$name.yaml > $S/out/launch-$name.tmp 2>&1; rc=$?
  mv $S/out/launch-$name.tmp $S/out/launch-$name.txt; say "launch $name rc=$rc $(tail -1 $S/out/launch-$name.txt | cut -c1-200)"
done
$PY -m optlog run list --json > $S/out/runs.json 2>&1
: > $S/out/run-show.txt
for id in $($PY -c "import json,sys; print(' '.join(str(r['id']) for r in json.load(open(sys.argv[1]))['runs']))" $S/out/runs.json); do
  $PY -m optlog run show $id >> $S/out/run-show.txt 2>&1; echo >> $S/out/run-show.txt
  $PY -m optlog --json run show $id > $S/out/run-$id.json 2>&1
done
$PY -m optlog report > $S/out/report.md 2>&1; say "report rc=$?"
say "done"
touch $S/done
