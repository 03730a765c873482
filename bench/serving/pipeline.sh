#!/usr/bin/env bash
# The whole serving session on the H200 machine, as stages that skip what is already done, so a call
# that finds a warm machine picks up where the last one stopped. Started under setsid by start.sh;
# progress in $S/out/progress.log. D = a copy of .dev (optlog tree, wheels, llama.cpp source, vocab).
set -uo pipefail
D=/root/dev
S=/root/serving
mkdir -p $S/out $S/models
P=$S/out/progress.log
cd $D   # never the call's cwd: the checkout there has its own (other) optlog package
say() { echo "$(date -u +%H:%M:%S) $*" >> $P; }
export PYTHONPATH=/tmp/site:$D PYTHONUNBUFFERED=1 OPTLOG_ACTOR=gpuserving
PY=python3
# what this generation does (start.sh passes them): models to write, specs to launch, hypotheses script
source $S/gen.env 2>/dev/null
MODELS=${MODELS:-dense moe}; SPECS=${SPECS:-dense moe}; HYPS=${HYPS:-hypotheses.sh}
source "$(dirname "$0")/common.sh"
install_wheels
models() {
  for m in dense:dense-8b moe:moe-128x512; do
    n=${m%%:*}; p=${m#*:}
    [[ " $MODELS " == *" $n "* ]] || continue
    [ -s $S/models/$n.json ] && continue
    $PY -m optlog.testing.gguf_model $S/models/$n.gguf --preset $p --vocab $D/ggml-vocab-llama-spm.gguf \
      > $S/models/$n.json 2> $S/out/model-$n.err; say "model $n rc=$? $(grep -E '"(bytes|seconds)"' $S/models/$n.json | tr -d ' \n')"
  done
  cp $S/models/*.json $S/out/ 2>/dev/null
}
workspace() {
  [ -f $S/ws/optlog.yaml ] && return 0
  mkdir -p $S/ws && cd $S/ws
  if command -v git >/dev/null; then git init -q && git config user.email gpu@proof && git config user.name gpuserving; fi
  $PY -m optlog init . > $S/out/init.txt 2>&1 || say "init failed: $(tail -2 $S/out/init.txt)"
  mkdir -p runs && cp $D/bench/serving/spec-*.yaml runs/
  ( uptime; nproc ) > $S/out/calibrate-load.txt
  $PY -m optlog calibrate > $S/out/calibrate.txt 2>&1; say "calibrate rc=$? $(grep -E 'peak bf16|peak fp16|memory bandwidth' $S/out/calibrate.txt | tr -s ' ' | tr '\n' ';')"
  cp optlog.yaml $S/out/optlog.yaml
  PY=$PY bash $D/bench/serving/$HYPS > $S/out/hypotheses.txt 2>&1; say "hypotheses rc=$?"
}
say "pipeline start"
{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv; df -h /root; nproc; free -g; command -v git; } > $S/out/env.txt 2>&1
build & B=$!
models & M=$!
workspace & W=$!
wait $W; wait $M; wait $B || { say "build failed"; tail -30 $S/out/build.log >> $P; touch $S/done; exit 1; }
$S/llama/build/bin/llama-server --version > $S/out/server-version.txt 2>&1
cd $S/ws
for spec in $SPECS; do
  [ -f $S/out/launch-$spec.txt ] && continue
  say "launch $spec"
  $PY -m optlog run launch runs/spec-$spec.yaml > $S/out/launch-$spec.tmp 2>&1; rc=$?
  mv $S/out/launch-$spec.tmp $S/out/launch-$spec.txt; say "launch $spec rc=$rc $(tail -1 $S/out/launch-$spec.txt)"
done
$PY -m optlog verdict --all > $S/out/verdict.txt 2>&1; say "verdict rc=$?"
$PY -m optlog run list --json > $S/out/runs.json 2>&1
: > $S/out/run-show.txt
for id in $($PY -c "import json,sys; print(' '.join(str(r['id']) for r in json.load(open(sys.argv[1]))['runs']))" $S/out/runs.json); do
  $PY -m optlog run show $id >> $S/out/run-show.txt 2>&1; echo >> $S/out/run-show.txt
  $PY -m optlog --json run show $id > $S/out/run-$id.json 2>&1
done
$PY -m optlog compare --metric output_throughput --by model --per concurrency > $S/out/compare.txt 2>&1
say "done"
touch $S/done
