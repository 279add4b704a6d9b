#!/bin/bash
# mesh-speed session 10, device call 3: one-process A/B of this session's changes against the session's
# start (s9: NumPy's text passes and the np.partition certainty; s9read: NumPy's text passes only), end to
# end from the file, pymeshlab carried (auto = fast+pymeshlab), auto_layout 'auto' (the committed default)
# and 'concave' (mesh-r2's candidate); 2 host cores at 50k (CPU backend); pytest -m gpu tests/mesh.
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp10
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git log --oneline -1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
E=benchmarks/mesh_e2e_session10.py
echo "== warm-up process (compiles the numba caches)"; timeout 90 python $E $C/101.off --rounds 1 --configs base,s9
echo "== A/B, auto_layout auto"; timeout 150 python $E $C/101.off $C/281.off --rounds 9 --configs base,s9,s9read --auto-layout auto --json $OUT/ab_auto.json
echo "== A/B, auto_layout concave"; timeout 120 python $E $C/101.off $C/281.off --rounds 7 --configs base,s9 --auto-layout concave --json $OUT/ab_concave.json
echo "== 2 host cores, CPU backend, 50k"; timeout 120 taskset -c 0,1 python $E $C/281.off --device cpu --rounds 2 --configs base,s9 --auto-layout auto
echo "== pytest -m gpu tests/mesh"; timeout 240 python -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" 2>&1 | tail -6
echo "== CPU tests of the session's files"; timeout 90 python -m pytest tests/mesh/test_speed10_read.py tests/mesh/test_speed10_colors.py tests/mesh/test_speed8_read.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -3
date -u
