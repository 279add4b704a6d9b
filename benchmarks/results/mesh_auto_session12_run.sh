#!/bin/bash
# mesh-auto, session 12 (issue 22): the one H100 call. Carry: .carry-msp10 (22 MB: pymeshlab cp312, the
# fast-simplification wheel, PSB 101.off / 281.off) and .carry-mauto12 (60 KB: e44a05b/, the judged
# code's boundary.py and learned.py). Writes $OUT/ma/{log.txt,ab_h100.json,ab_cpu2.json,sha.json}.
# 1. the pre-registered A/B (benchmarks/results/mesh_auto_session12.md): k = auto end to end from the file with
#    pymeshlab, defaults (DEFAULT_AUTO_MERGE = "hand") against "learned", one process, 11 rounds alternated after a
#    warm-up of each; then the 2-core CPU 50k (taskset -c 0,1), best of 3;
# 2. SHA-1 of the labels, GPU, one process: this tree's merge loops against the judged code's (e44a05b), PSB 101 / 281,
#    k = auto (both switches), 6, 12;
# 3. the GPU tests of the learned merges (CPU = GPU labels, several meshes x k, and k = auto with the learned switch).
mkdir -p $OUT/ma; exec > >(tee $OUT/ma/log.txt) 2>&1
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp10
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L; date -u; git log --oneline -1; nproc
python3 -c "from gpu_kernels.mesh.simplify import available_simplifiers as a; print('simplifiers:', a())"
echo "== compile the merge loops once (numba cache)"
( time python3 -c "
import numpy as np
from gpu_kernels.mesh import _numba_merge, learned, boundary
print('numba merge:', boundary.compiled_merge() is not None)" ) 2>&1 | tail -4
echo "== 1. A/B, GPU, 17k + 50k, k = auto, 11 rounds"
timeout ${T_AB:-110} python3 benchmarks/mesh_session11_ab.py $C/101.off $C/281.off --device cuda --k auto --rounds 11 \
  --switch DEFAULT_AUTO_MERGE --json $OUT/ma/ab_h100.json 2>&1 | grep -v Warn
date -u
echo "== 1b. 2 cores (taskset 0,1), 50k, k = auto, CPU path, best of 3"
timeout ${T_CPU:-75} taskset -c 0,1 python3 benchmarks/mesh_session11_ab.py $C/281.off --device cpu --k auto --rounds 3 \
  --switch DEFAULT_AUTO_MERGE --json $OUT/ma/ab_cpu2.json 2>&1 | grep -v Warn
date -u
echo "== 2. SHA-1: judged code (e44a05b) vs this tree, GPU"
timeout 60 python3 benchmarks/mesh_session12_auto_sha.py $C/101.off $C/281.off --device cuda --k auto,6,12 \
  --old .carry-mauto12/e44a05b --json $OUT/ma/sha.json 2>&1 | grep -v Warn
date -u
echo "== 3. GPU tests"
timeout ${T_TEST:-150} python3 -m pytest -m gpu tests/mesh/test_quality12_auto.py tests/mesh/test_quality11_learned.py \
  tests/mesh/test_quality11_auto.py -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -6
date -u
