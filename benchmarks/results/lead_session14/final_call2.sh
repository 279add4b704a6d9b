#!/bin/bash
# lead, session 14: GPU run after the review's mends (carry .carry-live/data .carry-lead10 .carry-lead14b)
export PYTHONUNBUFFERED=1
L=$OUT/lead; mkdir -p $L
nvidia-smi -L | tee $L/device.txt; date -u | tee -a $L/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs .carry-lead10/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
export PYTHONPATH=/tmp/site-fs
echo "== contour merge A/B"
timeout 120 python3 benchmarks/results/lead_session14/contour_ab.py .carry-lead14b/imseg_contours_s13.cu 30 2>&1 | grep -v Warn | tee $L/contour_ab.txt
date -u
echo "== pytest -m gpu tests/imseg tests/mesh"
GPULAB_SHARED_DATA=$PWD/.carry-live/data timeout 330 python -m pytest -m gpu tests/imseg tests/mesh -q -p no:cacheprovider -o addopts="" -rfE > $L/gpu_tests.txt 2>&1
tail -8 $L/gpu_tests.txt
date -u
