#!/bin/bash
# lead, session 8: the last check call (mesh GPU tests after mesh-17k, live through the tabs after imseg-live, requests)
export PYTHONUNBUFFERED=1
L=$OUT/lead; mkdir -p $L
nvidia-smi -L | tee $L/device.txt; date -u | tee -a $L/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs .carry-m17k/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
export PYTHONPATH=/tmp/site-fs
echo "== pytest -m gpu tests/mesh tests/framework"
GPULAB_SHARED_DATA=$PWD/.carry-live/data timeout 200 python -m pytest -m gpu tests/mesh tests/framework -q -p no:cacheprovider -o addopts="" --deselect tests/framework/test_live_tabs.py -rfE > $L/gpu_tests.txt 2>&1
tail -4 $L/gpu_tests.txt
echo "== live"
( source .carry-live/setup.sh && PYTHONPATH=$PYTHONPATH:/tmp/site-fs timeout 130 python3 benchmarks/live.py --device cuda --data .carry-live/data --mvs-views 0 --json $L/live.json ) 2>&1 | grep -v propagateSizeHints > $L/live.txt
grep -E "^[a-z-]+ +driver|target" $L/live.txt | cut -c1-330
echo "== imseg live paint, old vs new drawing in one process"
( source .carry-live/setup.sh && QT_QPA_PLATFORM=offscreen timeout 60 python3 benchmarks/results/imseg_live_session8_paint.py --device cuda --rounds 8 --json $L/imseg_live_paint_h100.json ) 2>&1 | grep -v propagateSizeHints | tail -12
for r in ${REQS:-}; do echo "== request $r"; timeout 60 bash .carry-live/req-$r.sh 2>&1 | tail -30; done
