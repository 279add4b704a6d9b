#!/bin/bash
# mesh-q, session 13, device call 1 (H100): the pre-registered round of benchmarks/results/mesh_q_session13.md
# (the confirmation is run2.sh: the carry limit). carry: .carry-mq13 (stores/pf3n0s1321-1323.npz made on the development CPU
# with today's working mesh; models_s11/ + models_auto/ = session 11's fold models; lib.tar = `git archive` of the
# rule's commit: the library and the scripts, restored over the device's copy of the tree) and .carry-r2/c (PSB
# off.tar.xz + humans.npzx; read only).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/.carry-mq13; W=/tmp/mq13; mkdir -p $W
P="python3 benchmarks/mesh_session13_q.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  python3 -c "import sklearn, numpy, scipy, numba; print('sklearn', sklearn.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__)"
  echo "the library and scripts of the rule's commit, over the copied tree:"; tar -tf $M/lib.tar | grep -c . ; tar -xf $M/lib.tar
  cat $M/lib.commit; } 2>&1 | tee $OUT/device.txt
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
python3 - $M/stores $M/models_s11 $M/models_auto <<'PY' | tee -a $OUT/device.txt
import sys, hashlib, pathlib
for d in sys.argv[1:]:
    for p in sorted(pathlib.Path(d).glob("*.npz")):
        print(p.parent.name, p.stem, hashlib.sha1(p.read_bytes()).hexdigest()[:12])
PY
D="--data $W/psb.npz --jobs 16"
for s in 1321 1322 1323; do
  echo "== record s$s $(el)"
  timeout 100 $P record --store $M/stores/pf3n0s$s.npz --draw s$s --out $W/rec $D --device cuda 2>&1 | grep -v Warn >> $OUT/record.jsonl
  grep -c '"examples"' $OUT/record.jsonl; grep error $OUT/record.jsonl | head -3
done
for r in R T; do
  echo "== train $r $(el)"
  timeout 90 $P train --rec $W/rec --models $W/models/$r --recipe $r $D 2>&1 | grep -v Warn >> $OUT/train.jsonl
done
grep -c error $OUT/train.jsonl
tar -cf $OUT/models.tar -C $W models
SETS="S11=$M/models_s11:learned,R=$W/models/R:learned,G=$W/models/R:gain,T=$W/models/T:learned"
echo "== evaluate (replay) $(el)"
timeout 120 $P evaluate --rec $W/rec --sets $SETS --out $OUT/rows.jsonl $D 2>&1 | grep -v Warn | tail -3
echo "== judge the round $(el)"
$P judge $OUT/rows.jsonl --base R --cands G,T --report S11 --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
echo "done after $(( $(date +%s) - T0 )) s"; date -u
