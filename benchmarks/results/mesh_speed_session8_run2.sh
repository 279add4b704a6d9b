#!/bin/bash
# mesh-speed session 8, device call 2 (final): GPU tests, stress, end-to-end before/after (e8d27f4 vs this tree),
# default fast+pymeshlab (pymeshlab carried, cp312 slim, checked identical) and fast, 2-core 50k
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp8
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git -C $R log --oneline -1 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p /tmp/base && tar -xzf $C/base.tar.gz -C /tmp/base && ln -sfn $R/resources /tmp/base/resources
python $C/pml_cmp.py $C/pml12k.npz   # dev CPU cp311: 86be5f1ba9e6be96083c754c9f90dd8b7202f0c7
echo "== gpu tests (tests/mesh, pymeshlab present)"
timeout 200 python -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" 2>&1 | tail -4
echo "== my CPU tests here (numba, py3.12)"
timeout 60 python -m pytest tests/mesh/test_speed8_read.py tests/mesh/test_speed8_cut.py tests/mesh/test_speed8_simplify.py tests/mesh/test_speed8_tool.py tests/mesh/test_cut_speed.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -2
echo "== end to end, defaults (fast+pymeshlab), best of 5, base/new alternating"
for round in 1 2; do for root in /tmp/base $R; do
  w=""; [ $round = 2 ] && w="--no-wrap"
  timeout 60 python benchmarks/mesh_speed8.py $C/101.off,$C/281.off --device cuda --repeat 5 --simplifier fast+pymeshlab --root $root $w --json $OUT/speed8_r${round}_$(basename $root).json 2>&1 | grep -A24 speed8 | head -48
done; done
echo "== the tool's path (load + run, as the CLI and the window), defaults"
for root in /tmp/base $R; do timeout 60 python benchmarks/mesh_speed8.py $C/101.off,$C/281.off --device cuda --repeat 5 --simplifier fast+pymeshlab --root $root --tool --no-wrap --json $OUT/speed8_tool_$(basename $root).json 2>&1 | grep speed8; done
echo "== end to end, fast only"
for root in /tmp/base $R; do timeout 60 python benchmarks/mesh_speed8.py $C/101.off,$C/281.off --device cuda --repeat 5 --simplifier fast --root $root --no-wrap --json $OUT/speed8_fast_$(basename $root).json 2>&1 | grep speed8; done
echo "== benchmarks/mesh.py --speed (new)"; timeout 60 python benchmarks/mesh.py --speed $C/101.off,$C/281.off --repeat 5 --out $OUT/mesh_speed.json 2>&1 | grep speed
echo "== 2 cores, 50k, defaults"
for root in $R /tmp/base; do OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 NUMBA_NUM_THREADS=2 timeout 60 taskset -c 0,1 python benchmarks/mesh_speed8.py $C/281.off --device cpu --repeat 2 --simplifier fast+pymeshlab --root $root --no-wrap --json $OUT/speed8_cpu2_$(basename $root).json 2>&1 | grep speed8; done
echo "== stress + micro"
timeout 60 python $C/stress.py $C/101.off 150
timeout 30 python $C/gil_dev.py $C/pml12k.npz
timeout 40 python $C/micro1.py $C/101.off $C/281.off
date -u
