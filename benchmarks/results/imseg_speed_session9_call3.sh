#!/bin/bash
# session 9 imseg-speed call 3 (final code): the GPU tests of the changed kernels (speed9, gpu, session6, speed_session8; the whole imseg GPU suite goes in the lead final call), one-process A/B of every switch (5 rounds), kernel profiles, features vs cuCIM
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry-isp9/cucim*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L; git log --oneline -1 2>/dev/null; date +%s
echo "== tests"
timeout 120 python3 -m pytest -m gpu tests/imseg/test_imseg_speed9.py tests/imseg/test_imseg_gpu.py tests/imseg/test_imseg_session6.py tests/imseg/test_imseg_speed_session8.py -q -p no:cacheprovider -o addopts="" 2>&1 | grep -v "Warning\|warnings.warn" | tail -8
date +%s
timeout 200 python3 benchmarks/imseg_speed9.py --variants old,new,no_kmeans32,no_digits,no_init --round-variants old,new --rounds 5 --rep 30 --profile --features --json $OUT/speed9_call3.json 2>&1 | grep -v -i "warn"
date +%s
