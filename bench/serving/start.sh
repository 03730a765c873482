#!/usr/bin/env bash
# One device call: start the pipeline once (setsid: it outlives the call while the machine stays warm),
# wait up to $1 seconds for it, then bring back what it wrote (a tar in $OUT).
S=/root/serving; mkdir -p $S/out
GEN=${2:-1}   # a new generation re-copies .dev and re-runs the stages that are not done (the build stays)
if [ "$(cat $S/gen 2>/dev/null)" != "$GEN" ]; then
  [ -f $S/gen ] && [ ! -f $S/done ] && { echo "pipeline of generation $(cat $S/gen) still running"; exit 1; }
  rm -rf /root/dev $S/done $S/ws $S/out/launch-* && cp -r "$(cd "$(dirname "$0")"/../.. && pwd)" /root/dev && echo $GEN > $S/gen
  printf "MODELS='%s'\nSPECS='%s'\nHYPS='%s'\n" "${MODELS:-dense moe}" "${SPECS:-dense moe}" "${HYPS:-hypotheses.sh}" > $S/gen.env
  cd /root/dev
  setsid nohup bash /root/dev/bench/serving/pipeline.sh > $S/out/pipeline.stdout 2>&1 < /dev/null &
fi
end=$(( $(date +%s) + ${1:-540} ))
while [ ! -f $S/done ] && [ $(date +%s) -lt $end ]; do sleep 5; done
cd $S && tar czf $OUT/serving.tgz --exclude='ws/.git' out ws 2>/dev/null
[ -d $S/ws/.git ] && tar czf $OUT/ws-git.tgz -C $S/ws .git
cat $S/out/progress.log; tail -5 $S/out/build.log 2>/dev/null; nvidia-smi --query-gpu=memory.used,power.draw --format=csv
