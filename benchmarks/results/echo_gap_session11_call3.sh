#!/bin/bash
# echo-gap, session 11, call 3: the echo GPU tests (gap11 test mended: 48^3); the probe with the
# one-line stage label and the progress grace period at reference 1 and 0, one process; the GUI micro
export PYTHONUNBUFFERED=1
mkdir -p $OUT/eg
nvidia-smi -L | tee $OUT/eg/device3.txt; date -u | tee -a $OUT/eg/device3.txt
echo "== gpu tests"
timeout 60 python -m pytest -m gpu tests/echo/test_echo_gap11.py tests/echo/test_echo_live10.py -q -p no:cacheprovider \
  -o addopts="" -rfEs > $OUT/eg/gpu_tests3.txt 2>&1; tail -3 $OUT/eg/gpu_tests3.txt
source .carry-live/setup.sh > /dev/null
echo "== probe"
timeout 100 python3 benchmarks/echo_gap11_probe.py --device cuda --json $OUT/eg/probe3.json --warm 2 \
  --plan "1:base,oneline,grace;0:base,oneline,grace" 2>&1 \
  | grep -v propagateSizeHints > $OUT/eg/probe3.txt; grep -E "^[a-z_]+@[01] +n " $OUT/eg/probe3.txt | cut -c1-200
echo "== gui micro"
timeout 40 python3 benchmarks/echo_gap11_gui.py --reps 30 --json $OUT/eg/gui3.json 2>&1 | grep -v propagateSizeHints | tail -2
date -u
