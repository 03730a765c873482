#!/usr/bin/env bash
# One device call: start the pipeline once (setsid: it outlives the call while the machine stays warm),
# wait up to $1 seconds for it, then bring back what it wrote (a tar in $OUT). Run from the repository
# root with .dev carried (tree/, whl/, llama.cpp.tar.xz, the vocabulary).
S=/root/diag; mkdir -p $S/out
if [ ! -f $S/started ]; then
  rm -rf /root/dev && cp -r "$PWD/.dev" /root/dev && touch $S/started
  setsid nohup bash /root/dev/tree/bench/diagnosis/pipeline.sh > $S/out/pipeline.stdout 2>&1 < /dev/null &
fi
end=$(( $(date +%s) + ${1:-540} ))
while [ ! -f $S/done ] && [ $(date +%s) -lt $end ]; do sleep 5; done
cd $S && tar czf $OUT/diag.tgz --exclude='ws/.git' --exclude='ws/.optlog/telemetry' out ws 2>/dev/null
cat $S/out/progress.log; tail -3 $S/out/build.log 2>/dev/null; tail -40 $S/out/results.md 2>/dev/null
nvidia-smi --query-gpu=memory.used,power.draw --format=csv 2>/dev/null
