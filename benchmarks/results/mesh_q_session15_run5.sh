#!/bin/bash
# mesh-q4, session 15, device call 4 (H100): the pre-registered round 3 of benchmarks/results/mesh_q_session15.md
# (a new feature, log_union_spread_over_parts: recipe U on 22 columns against today's recipe S on 21, both
# retrained per held-out category, the "gain" order). carry: .carry-mq15d (stores/pf3n0s1507-1508.npz
# made on the development CPU with today's working mesh; lib.tar = `git archive` of the rule's commit: gpu_kernels/mesh
# and the scripts, restored over the device's copy of the tree) and .carry-r2/c (PSB off.tar.xz + humans.npzx).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/.carry-mq15d; W=/tmp/mq15r3; mkdir -p $W
P="python3 benchmarks/mesh_session13_q.py"; Q="python3 benchmarks/mesh_session14_q.py"; H="python3 benchmarks/mesh_session15_q.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  python3 -c "import sklearn, numpy, scipy, numba; print('sklearn', sklearn.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__)"
  echo "the library and scripts of the rule's commit, over the copied tree:"; tar -tf $M/lib.tar | grep -c . ; tar -xf $M/lib.tar
  cat $M/lib.commit; python3 -c "from gpu_kernels.mesh import learned; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY)"; } 2>&1 | tee $OUT/device.txt
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
sha1sum $M/stores/*.npz | tee -a $OUT/device.txt
D="--data $W/psb.npz --jobs 16"
for s in 1507 1508; do
  echo "== record s$s $(el)"
  timeout 100 $H record --store $M/stores/pf3n0s$s.npz --draw s$s --out $W/rec $D --device cuda 2>&1 | grep -v Warn >> $OUT/record.jsonl
  grep -c '"examples"' $OUT/record.jsonl; grep error $OUT/record.jsonl | head -3
done
for r in S U; do
  echo "== train $r $(el)"
  timeout 90 $H train --rec $W/rec --models $W/models/$r --recipe $r $D 2>&1 | grep -v Warn >> $OUT/train.jsonl
done
grep -c error $OUT/train.jsonl
tar -cf $OUT/models.tar -C $W models
echo "== evaluate (replay) $(el)"
timeout 120 $P evaluate --rec $W/rec --sets "S=$W/models/S:gain,U=$W/models/U:gain" --out $OUT/rows.jsonl $D 2>&1 | grep -v Warn | tail -3
echo "== judge the round $(el)"
$Q judge $OUT/rows.jsonl --base S --cand U --n-draws 2 --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
if [ $(( $(date +%s) - T0 )) -lt 150 ]; then
  echo "== diagnose (descriptive: bust 303, hand 185, chair 104 and every mesh over 0.30 under S or U) $(el)"
  mkdir -p $W/dg && python3 - $OUT/rows.jsonl $W/rec $W/dg <<'PY'
import json, sys, pathlib
rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip() and "error" not in x]
rec, dg = pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
ids = {303, 185, 104} | {r["mesh"] for r in rows if max(r["S"], r["U"]) > 0.30}
for r in rows:
    if r["mesh"] in ids:
        (dg / r["draw"]).mkdir(exist_ok=True)
        (dg / r["draw"] / f"{r['mesh']}.pkl").symlink_to(rec / r["draw"] / f"{r['mesh']}.pkl")
PY
  for r in S U; do timeout 45 $Q diagnose --rec $W/dg --models $W/models/$r --out $OUT/diag_$r.jsonl $D 2>&1 | grep -v Warn | tail -2; done
fi
echo "done after $(( $(date +%s) - T0 )) s"; date -u
