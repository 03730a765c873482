#!/usr/bin/env bash
# One device call: start the tune pipeline once (setsid: it outlives the call while the machine is
# warm), wait up to $1 seconds for it, then bring back what it wrote.
S=/root/serving; mkdir -p $S/out
if [ ! -f $S/started ]; then
  touch $S/started
  export TUNE_ARGS="--maximize output_throughput --constraint p99_ttft_ms<=4000 --trials 12 --seed 1 --hypothesis tuning-gain --remeasure 3"
  setsid nohup bash "$(cd "$(dirname "$0")" && pwd)/pipeline.sh" > $S/out/pipeline.stdout 2>&1 < /dev/null &
fi
end=$(( $(date +%s) + ${1:-540} ))
while ! grep -q "done\|failed" $S/out/progress.log 2>/dev/null && [ $(date +%s) -lt $end ]; do sleep 5; done
cd $S && tar czf $OUT/tune.tgz --exclude='ws/.git' out ws 2>/dev/null
[ -d $S/ws/.git ] && tar czf $OUT/ws-git.tgz -C $S/ws .git
cat $S/out/progress.log; tail -3 $S/out/tune.err 2>/dev/null; nvidia-smi --query-gpu=memory.used,power.draw --format=csv
