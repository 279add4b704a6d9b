#!/bin/bash
# mesh-q6, session 15, device call 1 (H100): record the training examples of the working-mesh draws s1501-s1504
# (mesh_session15_q.py record, 21 columns, as round 2's S) and train, per held-out category and ALL:
#   P  (the candidate) recipe S on the examples of s1501-s1504, the seeded 400,000-example subsample;
#   Sx (check, reported) recipe S on s1503-s1504, 200,000: must equal the shipped S's fold models (SHA-1s in S.sha1);
#   T  (reported only) recipe S on s1501-s1502, 200,000: a second 2-draw model, to see the training draws' spread.
# carry: .carry-mq6a (stores.tar.xz = pf3n0s1501-1504.npz re-saved uncompressed, lib.tar = `git archive` of the
# rule's commit: gpu_kernels/mesh and the scripts, restored over the device's copy of the tree; S.sha1) and
# .carry-r2/c (PSB off.tar.xz + humans.npzx; read only).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/.carry-mq6a; W=/tmp/mq6a; mkdir -p $W
H="python3 benchmarks/mesh_session15_q.py"; H6="python3 benchmarks/mesh_session15_q6.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  python3 -c "import sklearn, numpy, scipy, numba; print('sklearn', sklearn.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__)"
  echo "the library and scripts of the rule's commit, over the copied tree:"; tar -tf $M/lib.tar | grep -c . ; tar -xf $M/lib.tar
  cat $M/lib.commit; python3 -c "from gpu_kernels.mesh import learned; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY)"; } 2>&1 | tee $OUT/device.txt
tar -xJf $M/stores.tar.xz -C $W
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
sha1sum $W/stores/*.npz | tee -a $OUT/device.txt
D="--data $W/psb.npz --jobs 16"
for s in 1501 1502 1503 1504; do
  echo "== record s$s $(el)"
  timeout 100 $H record --store $W/stores/pf3n0s$s.npz --draw s$s --out $W/rec $D --device cuda 2>&1 | grep -v Warn >> $OUT/record.jsonl
  grep -c '"examples"' $OUT/record.jsonl; grep error $OUT/record.jsonl | head -3
done
echo "== train $(el)"
timeout 120 $H6 train --rec $W/rec --models $W/models/P --draws s1501,s1502,s1503,s1504 --cap 400000 --jobs 16 2>&1 | grep -v Warn | sed 's/^/P /' >> $OUT/train.txt
timeout 90 $H6 train --rec $W/rec --models $W/models/Sx --draws s1503,s1504 --cap 200000 --jobs 16 2>&1 | grep -v Warn | sed 's/^/Sx /' >> $OUT/train.txt
timeout 90 $H6 train --rec $W/rec --models $W/models/T --draws s1501,s1502 --cap 200000 --jobs 16 2>&1 | grep -v Warn | sed 's/^/T /' >> $OUT/train.txt
grep -c error $OUT/train.txt
echo "== Sx against the shipped S's fold models (SHA-1) $(el)"
(cd $W/models/Sx && sha1sum -c $M/S.sha1) 2>&1 | tee $OUT/sx_check.txt | tail -3
(cd $W/models && sha1sum P/*.npz T/*.npz Sx/*.npz) > $OUT/models.sha1
tar -cf $OUT/models.tar -C $W/models P T
echo "done after $(( $(date +%s) - T0 )) s"; date -u
