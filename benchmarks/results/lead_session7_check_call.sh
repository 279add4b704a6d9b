#!/bin/bash
# lead, session 7: check call after the reviews (MVS memo mends, pinned hook, imseg deferred cache counting)
export PYTHONUNBUFFERED=1 GPULAB_SHARED_DATA=$PWD/.carry-mvs5/data
mkdir -p $OUT/lead
nvidia-smi -L; date -u
echo "== pytest -m gpu tests/mvs tests/imseg"
timeout 180 python -m pytest -m gpu tests/mvs tests/imseg -q -p no:cacheprovider -o addopts="" -rfEs > $OUT/lead/gpu_tests_mvs_imseg.txt 2>&1; tail -6 $OUT/lead/gpu_tests_mvs_imseg.txt
echo "== reviewer A request"
timeout 50 bash .carry-lead7/req-reviewerA.sh 2>&1 | tail -8
echo "== mvs new"
timeout 90 python3 benchmarks/mvs_session7.py --label new --no-annotate --repeat 9 --json $OUT/lead/mvs_new.json > $OUT/lead/mvs_new.txt 2>&1; tail -8 $OUT/lead/mvs_new.txt
echo "== mvs base (93de1ac)"
MVS5_CODE_ROOT=.carry-mvs7/base timeout 90 python3 benchmarks/mvs_session7.py --label base --no-annotate --repeat 9 --json $OUT/lead/mvs_base.json > $OUT/lead/mvs_base.txt 2>&1; tail -3 $OUT/lead/mvs_base.txt
python3 benchmarks/mvs_session7.py --compare $OUT/lead/mvs_base.json $OUT/lead/mvs_new.json 2>&1 | tail -20
