#!/bin/bash
# session 9 imseg-speed call 4: where the 4K k-means call lost 0.1-0.3 ms (kernel profile old/new at 4K) and the chunk sizes at 4K and 512^2 (single kernels)
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
nvidia-smi -L
timeout 100 python3 benchmarks/imseg_speed9.py --variants old,new --rounds 0 --no-checks --profile --profile-calls lib4k --json $OUT/speed9_call4_profile4k.json 2>&1 | grep -v -i "warn"
timeout 100 python3 benchmarks/imseg_speed9_kernels.py --size 3840x2160 --rep 10 --json $OUT/kernels_call4_4k.json 2>&1 | grep -v -i warn
timeout 60 python3 benchmarks/imseg_speed9_kernels.py --size 512x512 --rep 30 --json $OUT/kernels_call4_512.json 2>&1 | grep -v -i warn | grep "moments\|codes"
