#!/bin/bash
# session 9 imseg-speed call 2: the new GPU tests + single-kernel times (chunks, diagnostic builds)
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
nvidia-smi -L
timeout 100 python3 -m pytest -m gpu tests/imseg/test_imseg_speed9.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -4
timeout 150 python3 benchmarks/imseg_speed9_kernels.py --rep 30 --json $OUT/kernels_call2.json 2>&1 | grep -v -i warn
