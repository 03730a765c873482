#!/usr/bin/env bash
# One device call for issue 43: start pipeline43.sh once (setsid: it outlives the call while the machine
# stays warm), wait up to $1 seconds for it, then bring back what it wrote (one tar in $OUT: the progress,
# logs, specs, run documents and the workspace with its database; telemetry chunks left out).
# Run from the repository root with .dev carried (tree/, whl/, llama.cpp.tar.xz, the vocabulary).
# $2: the pipeline to start (default pipeline43.sh; ncu43.sh for the kernels' own counters).
S=/root/diag43; mkdir -p $S/out
if [ ! -f $S/started ]; then
  rm -rf /root/dev && cp -r "$PWD/.dev" /root/dev && touch $S/started
  setsid nohup bash /root/dev/tree/bench/diagnosis/${2:-pipeline43.sh} > $S/out/pipeline.stdout 2>&1 < /dev/null &
fi
end=$(( $(date +%s) + ${1:-540} ))
while [ ! -f $S/done ] && [ $(date +%s) -lt $end ]; do sleep 5; done
cd $S && tar czf $OUT/diag43.tgz --exclude='ws/.git' out ws 2>/dev/null
cat $S/out/progress.log; tail -3 $S/out/build.log 2>/dev/null
nvidia-smi --query-gpu=memory.used,power.draw --format=csv 2>/dev/null
