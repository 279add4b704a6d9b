#!/bin/bash
# session 10 imseg-speed call 3 (final code): the whole imseg GPU suite; 4K old/new A/B (5 rounds x 30, one process)
# with the CPU checks at 512^2, 1080p, 4K; k-means 512^2 and contours 512^2/1080p each round; labelling vs cupyx/cuCIM,
# features vs cuCIM (benchmarks/imseg.py)
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry-isp10/cucim*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L; git log --oneline -1 2>/dev/null | cut -c1-80; date +%s
echo "== tests"
timeout 240 python3 -m pytest -m gpu tests/imseg -q -p no:cacheprovider -o addopts="" 2>&1 | grep -v "Warning\|warnings.warn" > $OUT/isp10_call3_tests.txt
grep -E "passed|failed|FAILED|Error" $OUT/isp10_call3_tests.txt | tail -15
date +%s
timeout 200 python3 benchmarks/imseg_speed10.py --variants old,new --rounds 5 --rep 30 --cpu-check 512x512,1920x1080,3840x2160 \
   --also kmeans512,contours512,contours1080 --json $OUT/isp10_call3.json 2>&1 | grep -v -i "warn" | tee $OUT/isp10_call3_log.txt
date +%s
timeout 150 python3 benchmarks/imseg.py --labelling --features --out $OUT/peers 2>&1 | grep -v -i "warn" | tee $OUT/isp10_call3_peers_log.txt | grep -E "speedup|features:|cuCIM|Error|error" | cut -c1-400
date +%s
