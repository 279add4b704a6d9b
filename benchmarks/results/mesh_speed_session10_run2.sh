#!/bin/bash
# mesh-speed session 10, device call 2: why pymeshlab's step is ~1.6x slower inside the pipeline than alone
# (beside what, which thread, switch interval, malloc arenas), and a one-process A/B of the simplification
# inline / the switch interval at 0.1 ms; the fixed GPU search test.
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp10
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== warm-up process"; timeout 60 python benchmarks/mesh_e2e_session10.py $C/101.off --rounds 1
echo "== pymeshlab beside"; timeout 90 python benchmarks/results/mesh_speed_session10_pmlside.py $C/101.off $C/281.off
echo "== pymeshlab beside, MALLOC_ARENA_MAX=1"; MALLOC_ARENA_MAX=1 timeout 90 python benchmarks/results/mesh_speed_session10_pmlside.py $C/101.off
echo "== A/B"; timeout 150 python benchmarks/mesh_e2e_session10.py $C/101.off $C/281.off --rounds 7 --configs base,inline,sw0.1ms
echo "== A/B, MALLOC_ARENA_MAX=1"; MALLOC_ARENA_MAX=1 timeout 60 python benchmarks/mesh_e2e_session10.py $C/101.off $C/281.off --rounds 5 --configs base,inline
echo "== GPU test"; timeout 60 python -m pytest -m gpu tests/mesh/test_speed9_thickness.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -3
date -u
