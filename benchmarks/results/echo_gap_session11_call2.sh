#!/bin/bash
# echo-gap, session 11, call 2: the echo GPU tests; the probe at reference 1 and 0 (old/new trajectory
# code, the progress grace period, the GUI thread quiet, outside the tab) in ONE process; live.py echo
export PYTHONUNBUFFERED=1
mkdir -p $OUT/eg
nvidia-smi -L | tee $OUT/eg/device2.txt; date -u | tee -a $OUT/eg/device2.txt
echo "== gpu tests"
timeout 90 python -m pytest -m gpu tests/echo/test_echo_gap11.py tests/echo/test_echo_live10.py -q -p no:cacheprovider \
  -o addopts="" -rfEs > $OUT/eg/gpu_tests2.txt 2>&1; tail -4 $OUT/eg/gpu_tests2.txt
source .carry-live/setup.sh > /dev/null
echo "== probe"
timeout ${T_PROBE:-150} python3 benchmarks/echo_gap11_probe.py --device cuda --json $OUT/eg/probe2.json \
  --plan "1:base,old,grace,quiet,outside,outside_old;0:base,grace,quiet,outside" 2>&1 \
  | grep -v propagateSizeHints > $OUT/eg/probe2.txt; grep -E "^[a-z_]+@[01] +n " $OUT/eg/probe2.txt | cut -c1-260
echo "== live echo"
timeout 90 python3 benchmarks/live.py --device cuda --tools echo --json $OUT/eg/live_echo.json 2>&1 \
  | grep -v propagateSizeHints | tee $OUT/eg/live_echo.txt | cut -c1-400
date -u
