#!/bin/bash
# mesh-speed session 10, device call 1: where the time goes end to end (pymeshlab carried, cp312 slim,
# so auto = fast+pymeshlab, the default install's path): plain rounds, traced runs, cProfile, 17k and 50k.
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp10
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done; echo "private libs: $(ls $P/lib | tr '\n' ' ')"
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python -c "from gpu_kernels.mesh import simplify as s; print('simplifiers', s.available_simplifiers())"
echo "== warm-up process"; timeout 60 python benchmarks/mesh_e2e_session10.py $C/101.off $C/281.off --rounds 1
echo "== profile"; timeout 200 python benchmarks/mesh_e2e_session10.py $C/101.off $C/281.off --rounds 7 --profile 3 --cprofile --top 60 --json $OUT/e2e10_call1.json
echo "== pieces alone"; timeout 60 python benchmarks/results/mesh_speed_session10_pieces.py $C/101.off $C/281.off
echo "== GPU tests of the touched files"; timeout 150 python -m pytest -m gpu tests/mesh/test_speed9_thickness.py tests/mesh/test_mesh_thickness.py tests/mesh/test_speed10_device.py tests/mesh/test_mesh_cluster.py tests/mesh/test_review_s9_thickness.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -8
date -u
