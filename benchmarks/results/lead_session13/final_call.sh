#!/bin/bash
# lead, session 13: the final GPU run, in two calls on the warm machine (tree + carry must stay under 64 MiB):
#   PART=tests (carry .carry-lead10 .carry-lead13 .carry-imseg-gpu): all GPU tests + the requests in REQS
#   PART=live  (carry .carry-live .carry-lead10): the live benchmark through the real tabs
export PYTHONUNBUFFERED=1
L=$OUT/lead; mkdir -p $L
nvidia-smi -L | tee $L/device.txt; date -u | tee -a $L/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs .carry-lead10/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
export PYTHONPATH=/tmp/site-fs
if [ "${PART:-tests}" = tests ]; then
  echo "== pytest -m gpu"
  GPULAB_SHARED_DATA=${DATA:-/nonexistent} timeout ${T_TESTS:-400} python -m pytest -m gpu tests/imseg tests/echo tests/flow tests/mvs tests/mesh tests/framework tests/batch -q -p no:cacheprovider -o addopts="" --deselect tests/framework/test_live_tabs.py -rfEs > $L/gpu_tests.txt 2>&1
  tail -40 $L/gpu_tests.txt
  for r in ${REQS:-}; do echo "== request $r"; timeout ${T_REQ:-62} bash .carry-lead13/req-$r.sh 2>&1 | tail -30; done
else
  echo "== live"
  ( source .carry-live/setup.sh && PYTHONPATH=$PYTHONPATH:/tmp/site-fs timeout ${T_LIVE:-140} python3 benchmarks/live.py --device cuda --data .carry-live/data --mvs-views 0 --json $L/live.json ) 2>&1 | grep -v propagateSizeHints > $L/live.txt
  grep -E "^[a-z-]+ +driver|target|Error|error" $L/live.txt | cut -c1-330
fi
date -u
