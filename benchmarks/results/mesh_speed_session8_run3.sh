#!/bin/bash
# mesh-speed session 8, device call 3: one-process A/B of the changes (early thread, fast on a thread, per-component cut)
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp8
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p /tmp/base && tar -xzf $C/base.tar.gz -C /tmp/base && ln -sfn $R/resources /tmp/base/resources
timeout 100 python $C/ab3.py $C/101.off $C/281.off
echo "== 2 cores"; OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 NUMBA_NUM_THREADS=2 timeout 60 taskset -c 0,1 python $C/ab3.py $C/101.off $C/281.off cpu 3
date -u
