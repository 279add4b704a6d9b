#!/bin/bash
# lead, session 17, call 1 (carry .carry-l17a: slim offscreen PySide6 + setup.sh, PSB 101.off, 6 BSDS images):
#   1. the learned imseg merges' kernels at the new low coarseness (89d432c), on a GPU for the first time
#   2. pytest -m gpu tests/imseg tests/mesh (time-capped)
#   3. the live edits through the real tabs (mesh k at 17k, imseg coarseness at 1080p) on this host
export PYTHONUNBUFFERED=1
L=$OUT/lead; mkdir -p $L
nvidia-smi -L | tee $L/device.txt; date -u | tee -a $L/device.txt
export GPULAB_SHARED_DATA=$PWD/.carry-l17a/data
echo "== 1. learned / hybrid GPU tests"
timeout 240 python -m pytest -m gpu tests/imseg/test_quality12_learned_gpu.py tests/imseg/test_imseg_q16_hybrid.py -q -p no:cacheprovider -o addopts="" -rfEs > $L/gpu_learned.txt 2>&1
tail -8 $L/gpu_learned.txt; date -u
echo "== 2. pytest -m gpu tests/imseg tests/mesh (no pymeshlab)"
timeout ${T_TESTS:-200} python -m pytest -m gpu tests/imseg tests/mesh -q -p no:cacheprovider -o addopts="" -x --deselect tests/mesh/test_apsp.py -rfEs --durations=5 > $L/gpu_tests.txt 2>&1
tail -25 $L/gpu_tests.txt; date -u
echo "== 3. live"
source .carry-l17a/setup.sh
for t in mesh-seg imseg; do
  timeout 90 python3 benchmarks/live.py --device cuda --data .carry-l17a/data --tools $t --json $L/live_$t.json > $L/live_$t.txt 2>&1
  grep -E "target|driver|Error|error" $L/live_$t.txt | cut -c1-300
done
date -u
