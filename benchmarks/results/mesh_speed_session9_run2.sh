#!/bin/bash
# mesh-17k (session 9), device call 2 (the ball-loop kernel): the one-process A/B at 17k / 50k
# (pymeshlab carried, so auto = fast+pymeshlab, the default install's path), the fused thickness
# search and the ball loop checked bit for bit on the 76 PSB meshes, the GPU tests of tests/mesh.
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-m17k
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $R/.carry-msp8/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p /tmp/psb && tar -xJf $C/psboff.tar.xz -C /tmp/psb
echo "== A/B warm-up process"; timeout 40 python benchmarks/mesh_speed9_ab.py $C/101.off --rounds 1 --configs head,new --profile ''
echo "== A/B"; timeout 150 python benchmarks/mesh_speed9_ab.py $C/101.off $C/281.off --rounds 7 --configs head,nearoff,fused,new,new_nearoff --profile head,fused,new
date -u
echo "== thickness kernels on the 76 PSB meshes"; timeout 150 python benchmarks/mesh_speed9_thick.py /tmp/psb/off/*.off --repeats 2
date -u
echo "== pytest -m gpu tests/mesh"; timeout 120 python -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" 2>&1 | tail -15
date -u
# (2 host cores: call 1, the CPU path has not changed since)
date -u
