#!/bin/bash
# echo-gap, session 11, call 1: where the echo tab's α edit spends its compute (probe, one process)
export PYTHONUNBUFFERED=1
mkdir -p $OUT/eg
nvidia-smi -L | tee $OUT/eg/device.txt; date -u | tee -a $OUT/eg/device.txt; nproc | tee -a $OUT/eg/device.txt
source .carry-live/setup.sh > /dev/null
timeout ${T_PROBE:-150} python3 benchmarks/echo_gap11_probe.py --device cuda --json $OUT/eg/probe1.json 2>&1 \
  | grep -v propagateSizeHints | tee $OUT/eg/probe1.txt | tail -12
date -u
