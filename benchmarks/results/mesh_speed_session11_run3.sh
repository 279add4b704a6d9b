#!/bin/bash
# mesh-speed session 11, device call 3: one-process A/B of this session's code (base: compiled merge loop,
# nearest representatives, part memberships' searches on threads, fast-simplification's step on the calling
# thread) against session 10's end (s10) and without the split alone (nosplit), end to end from the file,
# pymeshlab carried (auto = fast+pymeshlab), auto_layout 'auto' (the default) and 'concave'; GPU tests.
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp10
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
E=benchmarks/mesh_speed11_ab.py
echo "== warm-up process (compiles the numba caches)"; timeout 120 python $E $C/101.off --rounds 1 --configs base,s10
echo "== A/B, auto_layout auto"; timeout 150 python $E $C/101.off $C/281.off --rounds 9 --configs base,s10,nosplit --auto-layout auto --json $OUT/ab_auto.json
echo "== A/B, auto_layout concave"; timeout 150 python $E $C/101.off $C/281.off --rounds 9 --configs base,s10,nosplit --auto-layout concave --json $OUT/ab_concave.json
echo "== CPU tests of the session's files"; timeout 90 python -m pytest tests/mesh/test_speed11_merge.py tests/mesh/test_speed11_simplify.py tests/mesh/test_speed8_simplify.py tests/mesh/test_speed11_read.py tests/mesh/test_speed10_read.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -3
echo "== GPU tests"; timeout 100 python -m pytest -m gpu tests/mesh/test_quality10_layout.py tests/mesh/test_speed10_device.py tests/mesh/test_mesh_segment.py tests/mesh/test_mesh_live_speed.py tests/mesh/test_speed8_simplify.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -4
date -u
