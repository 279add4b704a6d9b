#!/bin/bash
# mesh-speed session 8, device call 1: where the time goes on the H100 with pymeshlab (carried, cp312 slim)
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp8
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done; echo "private libs: $(ls $P/lib | tr '\n' ' ')"
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p /tmp/base && tar -xzf $C/base.tar.gz -C /tmp/base && ln -sfn $R/resources /tmp/base/resources
python $C/pml_cmp.py $C/pml12k.npz   # expect 86be5f1ba9e6be96083c754c9f90dd8b7202f0c7 (dev CPU, cp311)
python -c "from gpu_kernels.mesh import simplify as s; print('simplifiers', s.available_simplifiers())"
for sim in fast+pymeshlab fast; do for root in /tmp/base $R; do
  timeout 90 python benchmarks/mesh_speed8.py $C/101.off,$C/281.off --device cuda --repeat 5 --simplifier $sim --root $root --json $OUT/speed8_$(basename $root)_${sim/+/_}.json
done; done
timeout 60 python $C/micro1.py $C/101.off $C/281.off
date -u
