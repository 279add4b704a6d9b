#!/bin/bash
# mesh-q4, session 15, device call 5 (H100): the pre-registered confirmation of round 3 of benchmarks/results/mesh_q_session15.md
# (the real pipeline on s1509-1510, S and U at every human k and at k = "auto"), only if call 4's round passed.
# carry: .carry-mq15e (stores/pf3n0s1509-1510.npz made on the development CPU with today's working mesh; models_auto/
# = session 11's k = "auto" fold models; lib.tar = the rule's commit's library and scripts; round/ = call 1's
# models.tar and judged.json as they came back) and .carry-r2/c (PSB off.tar.xz + humans.npzx; read only).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/.carry-mq15e; W=/tmp/mq15r3c; mkdir -p $W
END=${END_S:-150}   # seconds after T0 by which the last confirmation draw must stop
P="python3 benchmarks/mesh_session13_q.py"; Q="python3 benchmarks/mesh_session14_q.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  echo "the library and scripts of the rule's commit, over the copied tree:"; tar -tf $M/lib.tar | grep -c . ; tar -xf $M/lib.tar
  cat $M/lib.commit; python3 -c "from gpu_kernels.mesh import learned; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY)"; } 2>&1 | tee $OUT/device.txt
tar -xf $M/round/models.tar -C $W
cp $M/round/judged.json $OUT/round_judged.json
python3 -c "import json,sys; j=json.load(open('$M/round/judged.json')); print('round pass:', j['pass']); sys.exit(0 if j['pass'] else 3)" || exit 3
if [ -s /tmp/mq15r3/psb.npz ]; then cp /tmp/mq15r3/psb.npz $W/psb.npz; echo "psb.npz from call 1 (warm machine)"; else
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
sha1sum $M/stores/*.npz $W/models/S/ALL.npz $W/models/U/ALL.npz $M/models_auto/ALL.npz | tee -a $OUT/device.txt
D="--data $W/psb.npz --jobs 16"
for s in 1509 1510; do
  left=$(( END - ($(date +%s) - T0) )); [ $left -lt 20 ] && { echo "== s$s skipped: $left s left $(el)"; break; }
  echo "== confirm s$s (limit $left s) $(el)"
  timeout $left $P confirm --store $M/stores/pf3n0s$s.npz --draw s$s --sets "S=$W/models/S:gain,U=$W/models/U:gain" \
    --models-auto $M/models_auto --out $OUT/confirm_rows.jsonl $D --device cuda 2>&1 | grep -v Warn | head -2
done
echo "== judge the confirmation $(el)"
$Q judge $OUT/confirm_rows.jsonl --base S --cand U --n-draws 2 --json $OUT/confirm_judged.json 2>&1 | tee $OUT/confirm_judge.txt
echo "done after $(( $(date +%s) - T0 )) s"; date -u
