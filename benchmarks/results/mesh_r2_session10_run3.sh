#!/bin/bash
# carry: .carry-msp10/pml.tar.xz and the fast-simplification wheel (mesh-speed's, read only), .carry-msp10/101.off,
# .carry-msp10/281.off
# mesh-r2, session 10, device call 3 (H100): the final code (40b08ed: + the settle of equal rows once) with auto_layout "concave" (decided on the working mesh)
# on by default: pytest -m gpu tests/mesh; the one-process A/B again (pymeshlab; 17k, 50k; 7 rounds); the 2-core
# CPU 50k (taskset -c 0,1), default against auto_layout "auto".
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; M=$R/.carry-msp10
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee $OUT/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -c "from gpu_kernels.mesh.simplify import available_simplifiers as a; from gpu_kernels.mesh import defaults as d, autok; print('simplifiers:', a(), d.DEFAULT_AUTO_LAYOUT, autok.LAYOUT_DECIDE)"
echo "== A/B [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 benchmarks/results/mesh_r2_session10_ab.py $M/101.off $M/281.off --device cuda --rounds 11 --configs auto,full,working \
  --json $OUT/ab.json 2>&1 | grep -v Warn
echo "== 2 cores, CPU [$(( $(date +%s) - T0 )) s]"
timeout 100 taskset -c 0,1 python3 benchmarks/results/mesh_r2_session10_ab.py $M/281.off --device cpu --rounds 3 \
  --configs auto,working --json $OUT/ab_cpu2.json 2>&1 | grep -v Warn
echo "== mesh GPU tests [$(( $(date +%s) - T0 )) s]"
timeout $(( 560 - $(date +%s) + T0 )) python3 -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -6
echo "done after $(( $(date +%s) - T0 )) s"; date -u
