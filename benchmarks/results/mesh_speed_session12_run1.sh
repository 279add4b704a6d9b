#!/bin/bash
# mesh-speed, session 12, device call 1 (H100): the pre-registered working-mesh round (results/mesh_speed_session12.md).
# carry: .carry-r2/c (PSB off.tar.xz + humans.npzx, 13.4 MB, read only), .carry-msp10 (pymeshlab cp312 slim,
# the fast-simplification wheel: .carry-msp10/pml.tar.xz and its wheel only, 19.9 MB, read only); 101.off / 281.off from the PSB pack.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/.carry-msp10; W=/tmp/msp12; mkdir -p $W
exec > >(tee $OUT/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git log --oneline -1; } | tee $OUT/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -c "from gpu_kernels.mesh.simplify import available_simplifiers as a; print('simplifiers:', a())"
mkdir -p $W/psbdir && tar -xJf $C/off.tar.xz -C $W/psbdir
python3 benchmarks/mesh_simplify_session7_pack.py unpack $C/humans.npzx $W/humans.npz
python3 - $W <<'PY'
import sys, pathlib, numpy as np
sys.path.insert(0, "benchmarks")
import mesh_psb as mp
W = pathlib.Path(sys.argv[1])
h = np.load(W / "humans.npz")
store = {k: h[k] for k in h.files}
for p in sorted((W / "psbdir" / "off").glob("*.off")):
    v, f = mp.load_off(p)
    store[f"v_{p.stem}"] = v
    store[f"f_{p.stem}"] = f.astype(np.int32)
np.savez(W / "psb.npz", **store)
PY
echo "== quality round [$(( $(date +%s) - T0 )) s]"
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout ${QT:-260} python3 benchmarks/mesh_speed12_quality.py run \
  --draws 1241,1242,1243,1244 --cands pf3,pf3n0 --data $W/psb.npz --device cuda --jobs 16 --out $OUT/rows.jsonl 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_speed12_quality.py judge $OUT/rows.jsonl --base pf3 --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
echo "== A/B H100 [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 benchmarks/mesh_speed12_ab.py $W/psbdir/off/101.off $W/psbdir/off/281.off --device cuda --rounds 9 \
  --configs pf3,pf3n0 --json $OUT/ab.json 2>&1 | grep -v Warn
echo "== 2 cores, 50k, CPU [$(( $(date +%s) - T0 )) s]"
timeout 80 taskset -c 0,1 python3 benchmarks/mesh_speed12_ab.py $W/psbdir/off/281.off --device cpu --rounds 3 \
  --configs pf3,pf3n0 --json $OUT/ab_cpu2.json 2>&1 | grep -v Warn
echo "done after $(( $(date +%s) - T0 )) s"; date -u
