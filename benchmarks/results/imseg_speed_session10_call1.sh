#!/bin/bash
# session 10 imseg-speed call 1: where the 4K time goes, why it jitters; candidate A/B (one process)
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
nvidia-smi -L; date +%s
timeout 300 python3 benchmarks/imseg_speed10.py --phases --timeline --rounds 5 --rep 30 --piece 2 \
   --json $OUT/isp10_call1.json 2>&1 | grep -v -i "warn" | tee $OUT/isp10_call1_log.txt
date +%s
