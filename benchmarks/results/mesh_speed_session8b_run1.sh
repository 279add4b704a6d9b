#!/bin/bash
# mesh-17k (session 8b), device call: one-process A/B head vs new (17k, 50k; pymeshlab carried), profile, GPU tests
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp8
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git log -1 --format=%h 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python -c "import pymeshlab, fast_simplification; from gpu_kernels.mesh import simplify; print('simplifiers', simplify.available_simplifiers())"
echo "== A/B"; timeout 200 python benchmarks/mesh_speed8b_ab.py $C/101.off $C/281.off --rounds 7
date -u
echo "== gpu tests"; timeout 240 python -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" 2>&1 | tail -15
date -u
