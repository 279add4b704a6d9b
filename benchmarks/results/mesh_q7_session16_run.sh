#!/bin/bash
# mesh-q7, session 16, device calls 1 and 2 (H100): the pre-registered judgement of B (a bag of 3 models of recipe S,
# trained on s1501-1502 / s1503-1504 / s1507-1508) against S (the shipped recipe's fold models, s1503-1504)
# (benchmarks/results/mesh_q7_session16.md): the real pipeline (mesh_session13_q.py confirm: prepare_mesh +
# segment_prepared, the full-resolution re-cut, GPU, 16 processes), every human k and k = "auto", each mesh under its
# own category's fold model (leave one category out), on NEW working-mesh draws; k = "auto" fold models of session 11;
# the "gain" order. Call 1 (COST=1) also times the integer-k merge on the 17k mesh (PSB 101) under S and B.
#   call 1: MQ=.carry-mq16a DRAWS="1601 1602 1603 1604" COST=1 bash benchmarks/results/mesh_q7_session16_run.sh
#   call 2: MQ=.carry-mq16b DRAWS="1605 1606 1607 1608" COST=0 bash benchmarks/results/mesh_q7_session16_run.sh
# carry: $MQ (stores.tar.xz = the draws' stores made on the development CPU, re-saved uncompressed; stores.sha1;
# models/S, models/B, models_auto/, lib.tar + lib.commit = `git archive` of the rule's commit: gpu_kernels/mesh and the
# scripts, restored over the device's copy of the tree) and .carry-r2/c (PSB off.tar.xz + humans.npzx; read only).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/${MQ:?}; W=/tmp/mq16; mkdir -p $W
END=${END_S:-170}   # seconds after T0 by which the last judging draw must stop
P="python3 benchmarks/mesh_session13_q.py"; Q="python3 benchmarks/mesh_session16_q.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc
  python3 -c "import numpy, scipy, numba; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__)"
  echo "the library and scripts of the rule's commit, over the copied tree:"; tar -tf $M/lib.tar | grep -c . ; tar -xf $M/lib.tar
  cat $M/lib.commit; python3 -c "from gpu_kernels.mesh import learned; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY)"; } 2>&1 | tee $OUT/device.txt
rm -rf $W/stores $W/models && mkdir -p $W/models
tar -xJf $M/stores.tar.xz -C $W && (cd $W && sha1sum -c $M/stores.sha1) 2>&1 | tee -a $OUT/device.txt
cp -r $M/models/S $M/models/B $W/models/
if [ ! -s $W/psb.npz ]; then
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
print("psb.npz assembled:", len(store), "arrays")
PY
else echo "psb.npz from the previous call (warm machine)"; fi
echo "psb ready $(el)"
(cd $W/models && sha1sum S/*.npz B/*.npz) > $OUT/models.sha1
sha1sum $W/models/S/ALL.npz $W/models/B/ALL.npz $M/models_auto/ALL.npz | tee -a $OUT/device.txt
D="--data $W/psb.npz --jobs 16"
for s in $DRAWS; do
  left=$(( END - ($(date +%s) - T0) )); [ $left -lt 15 ] && { echo "== s$s skipped: $left s left $(el)"; break; }
  echo "== confirm s$s (limit $left s) $(el)"
  timeout $left $P confirm --store $W/stores/pf3n0s$s.npz --draw s$s --sets "S=$W/models/S:gain,B=$W/models/B:gain" \
    --models-auto $M/models_auto --out $OUT/confirm_rows.jsonl $D --device cuda 2>&1 | grep -v Warn | head -2
done
echo "== judge (this call's draws) $(el)"
$Q judge $OUT/confirm_rows.jsonl --base S --cand B --min-draws 1 --json $OUT/judged_call.json 2>&1 | tee $OUT/judge_call.txt
gzip -k $OUT/confirm_rows.jsonl
if [ "${COST:-0}" = 1 ]; then
  first=$(echo $DRAWS | awk '{print $1}')
  echo "== cost: the integer-k merge on the 17k mesh (PSB 101), S against B, one process $(el)"
  timeout 90 $Q cost --data $W/psb.npz --store $W/stores/pf3n0s$first.npz --mesh 101 --ks 4,6,10,auto \
    --base $W/models/S/ALL.npz --cand $W/models/B/ALL.npz --rounds 15 --device cuda --json $OUT/cost.json 2>&1 \
    | grep -v Warn | tee $OUT/cost.txt
fi
echo "done after $(( $(date +%s) - T0 )) s"; date -u
