#!/bin/bash
# mesh-q5, session 15, its one device call (H100): the lead's second confirmation of round 3's model
# (benchmarks/results/lead_session15_judge_mesh_u.md, 049ae26): mesh-q4's confirmation script
# (benchmarks/results/mesh_q_session15_run6.sh) on the NEW draws s1511-s1514, with call 4's fold models S and U,
# session 11's k = "auto" fold models, the real pipeline, every human k and k = "auto", then the judge.
# carry: .carry-mq15f (stores.tar.xz = pf3n0s1511-1514.npz made on the development CPU with today's working mesh
# (mesh_simplify_session7_stores.py, 09:32-09:33 UTC), re-saved uncompressed (the same arrays) and xz'd to fit the carry;
# models_auto/, lib.tar (+ lib.commit c0cdd5c) and round/ (call 4's models.tar, judged.json) copied from .carry-mq15e)
# and .carry-r2/c (PSB off.tar.xz + humans.npzx; read only).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/.carry-mq15f; W=/tmp/mq5c; mkdir -p $W
END=${END_S:-125}   # seconds after T0 by which the last confirmation draw must stop
P="python3 benchmarks/mesh_session13_q.py"; Q="python3 benchmarks/mesh_session14_q.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  echo "the library and scripts of the rule's commit, over the copied tree:"; tar -tf $M/lib.tar | grep -c . ; tar -xf $M/lib.tar
  cat $M/lib.commit; python3 -c "from gpu_kernels.mesh import learned; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY)"; } 2>&1 | tee $OUT/device.txt
tar -xJf $M/stores.tar.xz -C $W
tar -xf $M/round/models.tar -C $W
cp $M/round/judged.json $OUT/round_judged.json
[ -s $W/psb.npz ] || for d in /tmp/mq15r3c /tmp/mq15r3; do [ -s $d/psb.npz ] && { cp $d/psb.npz $W/psb.npz; echo "psb.npz from $d (warm machine)"; break; }; done
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
fi
echo "psb ready $(el)"
sha1sum $W/stores/*.npz $W/models/S/ALL.npz $W/models/U/ALL.npz $M/models_auto/ALL.npz | tee -a $OUT/device.txt
D="--data $W/psb.npz --jobs 16"
for s in 1511 1512 1513 1514; do
  left=$(( END - ($(date +%s) - T0) )); [ $left -lt 15 ] && { echo "== s$s skipped: $left s left $(el)"; break; }
  echo "== confirm s$s (limit $left s) $(el)"
  timeout $left $P confirm --store $W/stores/pf3n0s$s.npz --draw s$s --sets "S=$W/models/S:gain,U=$W/models/U:gain" \
    --models-auto $M/models_auto --out $OUT/confirm_rows.jsonl $D --device cuda 2>&1 | grep -v Warn | head -2
done
echo "== judge the confirmation $(el)"
$Q judge $OUT/confirm_rows.jsonl --base S --cand U --n-draws 4 --json $OUT/confirm_judged.json 2>&1 | tee $OUT/confirm_judge.txt
gzip -k $OUT/confirm_rows.jsonl
echo "done after $(( $(date +%s) - T0 )) s"; date -u
