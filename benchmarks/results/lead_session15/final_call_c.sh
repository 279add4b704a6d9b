#!/bin/bash
# lead, session 15: final GPU call C (carry .carry-isp10: the cuCIM 26.10 cu13 wheel): region features against cuCIM's
# regionprops_table on the same 4K labels (issue 21: >= 1.2x), and the imseg live edit through the stage cache at 1080p
export PYTHONUNBUFFERED=1
L=$OUT/lead; mkdir -p $L
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-cc .carry-isp10/cucim*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/site-cc:$PWD
nvidia-smi -L | tee $L/deviceC.txt; date -u
echo "== pytest -m gpu tests/imseg (final code)"
timeout ${T_T:-150} python3 -m pytest -m gpu tests/imseg -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -3
echo "== imseg speed: contours (the default, final code)"
timeout ${T_IMS:-90} python3 benchmarks/imseg.py --speed --sizes 512x512,1920x1080 --cpu-max 64x64 --slic-max 64x64 --felz-max 1920x1080 --no-quickshift --out $L/imseg_contours_final 2>&1 | grep -v -i warn | grep -A8 "^## Speed\|^| size" | head -30
date -u
timeout ${T_F:-150} python3 benchmarks/imseg.py --features --live --out $L/imseg_features 2>&1 | grep -v -i warn | tee $L/imseg_features_log.txt | grep "^|\|cuCIM\|Error\|error" | head -40
date -u
