#!/bin/bash
# imseg-speed (session 10): confirmation on the lead's final tree, <= 60 s, no carry.
# The early copies / sorted 4K features and the removed old-kernel switches: their GPU tests, then a 3-round
# one-process A/B at 4K (old = one download at the end + raster features, new = the defaults), outputs checked
# equal first. Expected (imseg-speed call 3): new round medians 4.5-5.2 ms, old 6.3-6.7.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
mkdir -p $OUT/imseg-speed
timeout 28 python3 -m pytest -m gpu tests/imseg/test_imseg_speed10.py tests/imseg/test_imseg_speed9.py -q \
   -p no:cacheprovider -o addopts="" > $OUT/imseg-speed/tests.txt 2>&1; tail -2 $OUT/imseg-speed/tests.txt
timeout 30 python3 benchmarks/imseg_speed10.py --variants old,new --rounds 3 --rep 30 --cpu-check "" \
   --json $OUT/imseg-speed/ab.json 2>&1 | grep -v -i warn | tee $OUT/imseg-speed/ab_log.txt | grep -E "check|summary|   (old|new)"
