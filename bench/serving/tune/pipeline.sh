#!/usr/bin/env bash
# optlog tune on one H200, in one device call: build llama-server (CUDA), write a 1 B dense model,
# make a git-backed workspace, register the claim, run the study, bring back what it recorded.
set -uo pipefail
D=$(cd "$(dirname "$0")"/../../.. && pwd)   # the carried .dev folder (this script is .dev/bench/serving/tune/)
S=/root/serving; mkdir -p $S/out $S/models; P=$S/out/progress.log
say() { echo "$(date -u +%H:%M:%S) $*" | tee -a $P; }
export PYTHONPATH=/tmp/site:$D PYTHONUNBUFFERED=1 OPTLOG_ACTOR=gputune
source "$(dirname "$0")/../common.sh"
install_wheels
cd /root
build & B=$!
[ -s $S/models/dense1b.gguf ] || ( cd $D && python3 -m optlog.testing.gguf_model $S/models/dense1b.gguf --preset dense-1b --vocab $D/ggml-vocab-llama-spm.gguf \
    > $S/out/model.json 2> $S/out/model.err; say "model rc=$?" ) &
rm -rf $S/ws; mkdir -p $S/ws && cd $S/ws && git init -q && git config user.email gpu@proof && git config user.name gputune
python3 -m optlog init . > $S/out/init.txt 2>&1; say "init rc=$?"
mkdir -p runs && cp $D/bench/serving/tune/spec-tune.yaml runs/
bash $D/bench/serving/tune/claim.sh > $S/out/claim.txt 2>&1; say "claim rc=$?"
wait $B; brc=$?; wait
[ -x $S/llama/build/bin/llama-server ] || { say "build failed rc=$brc"; tail -20 $S/out/build.log >> $P; exit 1; }
$S/llama/build/bin/llama-server --version > $S/out/server-version.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv > $S/out/gpu.txt 2>&1
say "tune start"
python3 -m optlog tune runs/spec-tune.yaml $TUNE_ARGS --json > $S/out/tune.json 2> $S/out/tune.err; say "tune rc=$?"
python3 -m optlog tune show tune-dense > $S/out/tune-show.txt 2>&1
python3 -m optlog verdict --all > $S/out/verdict.txt 2>&1; say "verdict rc=$?"
python3 -m optlog run list > $S/out/runs.txt 2>&1
python3 -m optlog report --out reports/tune.md > $S/out/report.txt 2>&1; cp reports/tune.md $S/out/ 2>/dev/null
git log --format='%h %ad %s' --date=format:%H:%M:%S > $S/out/git-log.txt
say "done"
