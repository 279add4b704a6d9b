#!/bin/bash
# lead, session 16: final GPU call A (carry .carry-live16 .carry-lead10 — .carry-live without 19 of 20 BSDS ground truths, to fit the 64 MiB with a 32 MB tree):
#   1. pytest -m gpu over the tools changed this session (imseg, mesh) + framework + batch
#   2. imseg speed through benchmarks/imseg.py (the issue-21 limits: contours 512^2 / 1080p with felzenszwalb at
#      1080p; the paper's k-means pipeline 512^2 / 4K; labelling vs cupyx)
#   3. the live benchmark through the real tabs
export PYTHONUNBUFFERED=1
L=$OUT/lead; mkdir -p $L
nvidia-smi -L | tee $L/device.txt; date -u | tee -a $L/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs .carry-lead10/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
export PYTHONPATH=/tmp/site-fs
if [ "${TESTS:-1}" = 1 ]; then
  echo "== pytest -m gpu ${TDIRS:=tests/imseg tests/mesh tests/framework tests/batch}"
  GPULAB_SHARED_DATA=$PWD/${DATA:-.carry-live16}/data timeout ${T_TESTS:-300} python -m pytest -m gpu $TDIRS -q -p no:cacheprovider -o addopts="" --deselect tests/framework/test_live_tabs.py -rfEs > $L/gpu_tests.txt 2>&1
  tail -30 $L/gpu_tests.txt; date -u
fi
if [ "${IMSEG:-1}" = 1 ]; then
  echo "== imseg speed: contours (default)"
  timeout ${T_IMS:-90} python3 benchmarks/imseg.py --speed --sizes 512x512,1920x1080 --cpu-max 512x512 --slic-max 512x512 --felz-max 1920x1080 --no-quickshift --out $L/imseg_contours 2>&1 | grep -v -i warn | grep -A8 "^## Speed\|^| size" | head -30
  echo "== imseg speed: merge=hybrid (selectable)"
  timeout ${T_IMH:-90} python3 benchmarks/imseg.py --speed --params '{"merge": "hybrid"}' --sizes 512x512,1920x1080 --cpu-max 64x64 --slic-max 64x64 --felz-max 64x64 --no-quickshift --out $L/imseg_hybrid 2>&1 | grep -v -i warn | grep -A8 "^## Speed\|^| size" | head -30
  date -u
fi
if [ "${IMK:-1}" = 1 ]; then
  echo "== imseg speed: kmeans (the paper's pipeline) + labelling"
  timeout ${T_IMK:-120} python3 benchmarks/imseg.py --speed --labelling --params '{"method": "kmeans"}' --sizes 512x512,3840x2160 --cpu-max 64x64 --slic-max 64x64 --felz-max 64x64 --no-quickshift --out $L/imseg_kmeans 2>&1 | grep -v -i warn | grep "^|" | head -40
  date -u
fi
for r in ${REQS:-}; do echo "== request $r"; timeout ${T_REQ:-62} bash .carry-lead16/req-$r.sh 2>&1 | tail -30; cp -r $OUT/$r $L/ 2>/dev/null; date -u; done
if [ "${LIVE:-1}" = 1 ]; then
  echo "== live"
  ( source .carry-live16/setup.sh && PYTHONPATH=$PYTHONPATH:/tmp/site-fs timeout ${T_LIVE:-140} python3 benchmarks/live.py --device cuda --data .carry-live16/data --mvs-views 0 --json $L/live.json ) 2>&1 | grep -v propagateSizeHints > $L/live.txt
  grep -E "^[a-z-]+ +driver|target|Error|error" $L/live.txt | cut -c1-330
fi
date -u
