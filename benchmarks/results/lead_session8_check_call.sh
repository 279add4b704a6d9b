#!/bin/bash
# lead, session 8: the check call after the reviews (imseg GPU tests + whole= step, MVS leftovers A/B, imseg live HEAD vs e8d27f4, tool vs library)
export PYTHONUNBUFFERED=1
L=$OUT/check; mkdir -p $L
nvidia-smi -L | tee $L/device.txt; date -u | tee -a $L/device.txt
echo "== pytest -m gpu tests/imseg + whole"
timeout 120 python -m pytest -m gpu tests/imseg tests/framework/test_stages_whole.py tests/framework/test_param_fast_validate.py -q -p no:cacheprovider -o addopts="" > $L/gpu_tests.txt 2>&1; tail -3 $L/gpu_tests.txt
echo "== leftovers request"
timeout 65 bash .carry-lo8/lead_req.sh 2>&1 | tail -25
echo "== imseg live, HEAD vs e8d27f4, alternating"
mkdir -p .carry-lo8/base/benchmarks && cp benchmarks/live.py .carry-lo8/base/benchmarks/ && ln -sfn $PWD/resources .carry-lo8/base/resources
for r in 1 2; do
  for v in head base; do
    if [ $v = head ]; then S=benchmarks/live.py; else S=.carry-lo8/base/benchmarks/live.py; fi
    ( source .carry-live/setup.sh && timeout 45 python3 $S --device cuda --tools imseg --data .carry-live/data --json $L/live_imseg_${v}_$r.json ) 2>&1 | grep -A1 "^imseg" | sed "s/^/$v $r: /" | cut -c1-400
  done
done
echo "== tool vs library (imseg 512²)"
timeout 60 python .carry-live/prof_tool8.py 2>&1 | grep -E "round|Error" | tail -12
