#!/bin/bash
# mesh-17k (session 8b), device call 2: the A/B in a later process (call 1's first process ran ~1.5x slow throughout)
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp8
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== warm-up process"; timeout 40 python benchmarks/mesh_speed8b_ab.py $C/101.off $C/281.off --rounds 1 --configs head,new --profiles 0
# (the thickness profile, benchmarks/mesh_speed8b_thick.py, left out: no device share left for it)
echo "== A/B"; timeout 90 python benchmarks/mesh_speed8b_ab.py $C/101.off $C/281.off --rounds 7 --configs head,new --profiles 1
date -u
