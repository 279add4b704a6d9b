#!/bin/bash
# lead, session 17, call 4 (carry .carry-l17b: PSB 101.off, the fast-simplification wheel): the slow full-resolution
# mesh k edit without a simplifier, without Qt: cache_exp.py through the stage cache on the GPU, arms alternated.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs .carry-l17b/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
for a in "block pre" "keep pre" "block nopre" "keep nopre" "block pre" "keep pre" "block nopre" "keep nopre"; do
  PYTHONPATH=$PWD:/tmp/site-fs timeout 60 python3 benchmarks/results/lead_session17/cache_exp.py $a .carry-l17b/101.off cuda 2>&1 | tail -1
done
date -u
