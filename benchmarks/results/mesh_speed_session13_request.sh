#!/bin/bash
# mesh-speed (session 13) request, <= 60 s. Carry (22 MB, read only): .carry-msp10 (pymeshlab cp312 slim, the
# fast-simplification wheel, PSB 101.off / 281.off). Writes $OUT/mesh-speed/{log.txt,ab.json,ab_cpu2.json}.
# 1. The mesh merge loop's warm-up (gpu_kernels/mesh/warm.py) on an empty numba cache: its time (also pre-warms the A/B).
# 2. The pre-registered A/B of segment.SIMPLIFY_ON_CALLER (benchmarks/results/mesh_speed_session13.md, "Rule for the
#    swap"): 'swap' (pymeshlab's decimation on the calling thread, the full dual graph on a thread started after the
#    hand-over) against 'noswap' (today's default), one process, interleaved; 17k 11 rounds, 50k 7 rounds; SHA-1s
#    per configuration (must be equal); then 2 host cores (CPU path) 50k, 1 round each after a warm-up.
set -o pipefail
mkdir -p $OUT/mesh-speed; exec > >(tee $OUT/mesh-speed/log.txt) 2>&1
export PYTHONUNBUFFERED=1
T0=$(date +%s); M=$PWD/.carry-msp10
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; git log --oneline -1 2>/dev/null; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-msp $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-msp; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-msp:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== warm-up [$(( $(date +%s) - T0 )) s]"
timeout 20 python3 -c "import time; t = time.perf_counter(); from gpu_kernels.mesh import warm; warm.warm_up(); print(f'warm13 warm_up {time.perf_counter() - t:.2f} s (imports + compile or cache load)')"
echo "== A/B [$(( $(date +%s) - T0 )) s]"
timeout 25 python3 benchmarks/mesh_speed13_ab.py $M/101.off --device cuda --rounds 11 --configs noswap,swap \
  --json $OUT/mesh-speed/ab17.json 2>&1 | grep -v Warn
timeout 15 python3 benchmarks/mesh_speed13_ab.py $M/281.off --device cuda --rounds 7 --configs noswap,swap \
  --json $OUT/mesh-speed/ab50.json 2>&1 | grep -v Warn
echo "== 2 host cores [$(( $(date +%s) - T0 )) s]"
timeout $(( 58 - ($(date +%s) - T0) )) taskset -c 0,1 python3 benchmarks/mesh_speed13_ab.py $M/281.off --device cpu \
  --rounds 1 --configs noswap,swap --json $OUT/mesh-speed/ab_cpu2.json 2>&1 | grep -v Warn
echo "done after $(( $(date +%s) - T0 )) s"; date -u
