#!/bin/bash
# session 9 imseg-speed call 1: GPU tests + A/B of the block-table kernels (features, codes) + kernel profile + features vs cuCIM
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry-isp9/cucim*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L; date +%s
echo "== tests"
timeout 150 python3 -m pytest -m gpu tests/imseg -q -p no:cacheprovider -o addopts="" 2>&1 | grep -v "Warning\|warn" | tail -25
date +%s
timeout 240 python3 benchmarks/imseg_speed9.py --rounds 3 --rep 30 --profile --features --json $OUT/speed9_call1.json
date +%s
