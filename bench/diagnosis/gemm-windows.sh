#!/usr/bin/env bash
# Issue 30, a second device call: the GEMM probe's counters over its timed loop (the probe writes that
# window in its result). Reuses the first call's calibrated optlog.yaml and gemm spec (docs/gpu-proof/diagnosis).
D=$PWD/.dev
export PYTHONPATH=/tmp/site:$D/tree PYTHONUNBUFFERED=1 OPTLOG_ACTOR=gpudiag
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $D/whl/*.whl || exit 1
mkdir -p /root/g && cd /root/g && git init -q && git config user.email gpu@proof && git config user.name gpudiag
python3 -m optlog init . > /dev/null 2>&1
cp $D/tree/docs/gpu-proof/diagnosis/optlog.yaml optlog.yaml && mkdir -p runs && cp $D/tree/docs/gpu-proof/diagnosis/gemm.yaml runs/
python3 -m optlog run launch runs/gemm.yaml > $OUT/launch-gemm-windows.txt 2>&1
for id in 1 2; do python3 -m optlog run show $id; echo; done > $OUT/gemm-windows-show.txt 2>&1
for id in 1 2; do python3 -m optlog --json run show $id > $OUT/gemm-windows-run-$id.json 2>&1; done
cat $OUT/launch-gemm-windows.txt; grep -A6 "^diagnosis" $OUT/gemm-windows-show.txt
