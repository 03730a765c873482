#!/usr/bin/env bash
# Issue 43, the quantized decode: what limits llama.cpp's decode mat-vec kernels, F16 against Q8_0, read
# by Nsight Compute from the kernels' own hardware counters (issue slots, pipes, warp stall reasons, DRAM),
# the cross-check an engineer makes before trusting a bound called from GPM's whole-GPU counters.
# Then pipeline43.sh launches the same two decodes through `optlog run launch` on this GPU.
# Started by start43.sh (`bash .dev/tree/bench/diagnosis/start43.sh 560 ncu43.sh`) with .dev carried.
set -uo pipefail
D=${D:-/root/dev}
S=${S:-/root/diag43}
mkdir -p $S/out $S/models
P=$S/out/progress.log
say() { echo "$(date -u +%H:%M:%S) $*" >> $P; }
export PYTHONPATH=/tmp/site:$D/tree PYTHONUNBUFFERED=1 OPTLOG_ACTOR=gpudiag
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=${PY:-python3}
cd $D/tree
source $D/tree/bench/serving/common.sh
say "ncu43 start"
{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv; nproc; } > $S/out/env.txt 2>&1
install_wheels
MODELS="dense8b:dense-8b:f16: dense8b-q8:dense-8b:q8_0:"
for m in $MODELS; do
  IFS=: read -r n p t extra <<< "$m"
  [ -s $S/models/$n.json ] && continue
  $PY -m optlog.testing.gguf_model $S/models/$n.gguf --preset $p --type $t --vocab $D/ggml-vocab-llama-spm.gguf \
    > $S/models/$n.json 2> $S/out/model-$n.err; say "model $n rc=$?"
done &
MP=$!
build || { say "build failed"; touch $S/done; exit 1; }
(cd $S/llama && cmake --build build --target llama-bench -j 16 >> $S/out/build.log 2>&1); say "llama-bench rc=$?"
wait $MP
B=$S/llama/build/bin/llama-bench
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__issue_active.avg.pct_of_peak_sustained_active,\
sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,\
sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,\
sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,\
sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,\
smsp__sass_thread_inst_executed_op_integer_pred_on.sum,smsp__sass_thread_inst_executed_op_fp32_pred_on.sum,\
smsp__sass_thread_inst_executed_op_fp16_pred_on.sum,\
smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio
for n in dense8b dense8b-q8; do
  [ -s $S/out/bench-$n.json ] || $B -m $S/models/$n.gguf -ngl 99 -p 0 -n 128 -r 3 -o json > $S/out/bench-$n.json 2> $S/out/bench-$n.err
  say "llama-bench $n rc=$? $(grep -o '"avg_ts": [0-9.]*' $S/out/bench-$n.json | head -1)"
  [ -s $S/out/ncu-$n.csv ] && continue
  GGML_CUDA_DISABLE_GRAPHS=1 timeout 150 $NCU --clock-control none -k regex:mul_mat_vec --launch-skip 300 --launch-count 24 \
    --metrics $METRICS --csv --page raw $B -m $S/models/$n.gguf -ngl 99 -p 0 -n 8 -r 1 \
    > $S/out/ncu-$n.csv 2> $S/out/ncu-$n.err
  say "ncu $n rc=$? $(wc -l < $S/out/ncu-$n.csv) lines"
done
DIAG_MODELS="$MODELS" DIAG_ONLY="dense8b-q8-c1 dense8b-c1" bash $D/tree/bench/diagnosis/pipeline43.sh
