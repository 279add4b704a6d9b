#!/bin/bash
# session 10 imseg-speed call 2: the old-kernel switches removed (GPU tests of the changed kernels, new = CPU),
# and the 4K candidates A/B in one process (EarlyDownload on/off, + sort features, + 8 upload threads)
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
nvidia-smi -L; date +%s
timeout 150 python3 -m pytest -m gpu tests/imseg/test_imseg_speed9.py tests/imseg/test_imseg_speed10.py tests/imseg/test_imseg_gpu.py tests/imseg/test_imseg_moments.py \
   -q -p no:cacheprovider -o addopts="" 2>&1 | grep -v "Warning\|warnings.warn" | tail -8 | tee $OUT/isp10_call2_tests.txt
date +%s
timeout 300 python3 benchmarks/imseg_speed10.py --variants base,ovl,ovlsort,ovlt8 --phases --rounds 5 --rep 30 \
   --json $OUT/isp10_call2.json 2>&1 | grep -v -i "warn" | tee $OUT/isp10_call2_log.txt
date +%s
