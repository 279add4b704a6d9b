#!/bin/bash
# mesh-q6, session 15, device call 2 (H100): the pre-registered judgement of P against S
# (benchmarks/results/mesh_q6_session15.md): the real pipeline (mesh_session13_q.py confirm: prepare_mesh +
# segment_prepared, the full-resolution re-cut, GPU, 16 processes), every human k and k = "auto", each mesh under its own
# category's fold model (leave one category out), on the NEW working-mesh draws s1521-s1524; sets S (the shipped
# recipe's fold models: mesh-q4's call 2, s1503-1504), P (call 1: s1501-1504, 400,000) and T (call 1: s1501-1502,
# reported only); k = "auto" fold models of session 11; the "gain" order. Then mesh_session15_q6.py judge.
# carry: .carry-mq6b (stores.tar.xz = pf3n0s1521-1524.npz made on the development CPU, re-saved uncompressed;
# models/S, models.tar (call 1's P and T), models_auto/, lib.tar + lib.commit) and .carry-r2/c (read only).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/.carry-mq6b; W=/tmp/mq6b; mkdir -p $W/models
END=${END_S:-240}   # seconds after T0 by which the last judging draw must stop
P="python3 benchmarks/mesh_session13_q.py"; H6="python3 benchmarks/mesh_session15_q6.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  echo "the library and scripts of the rule's commit, over the copied tree:"; tar -tf $M/lib.tar | grep -c . ; tar -xf $M/lib.tar
  cat $M/lib.commit; python3 -c "from gpu_kernels.mesh import learned; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY)"; } 2>&1 | tee $OUT/device.txt
tar -xJf $M/stores.tar.xz -C $W
cp -r $M/models/S $W/models/S && tar -xf $M/models.tar -C $W/models
[ -s $W/psb.npz ] || { [ -s /tmp/mq6a/psb.npz ] && cp /tmp/mq6a/psb.npz $W/psb.npz && echo "psb.npz from call 1 (warm machine)"; }
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
sha1sum $W/stores/*.npz $W/models/S/ALL.npz $W/models/P/ALL.npz $W/models/T/ALL.npz $M/models_auto/ALL.npz | tee -a $OUT/device.txt
D="--data $W/psb.npz --jobs 16"
for s in 1521 1522 1523 1524; do
  left=$(( END - ($(date +%s) - T0) )); [ $left -lt 15 ] && { echo "== s$s skipped: $left s left $(el)"; break; }
  echo "== confirm s$s (limit $left s) $(el)"
  timeout $left $P confirm --store $W/stores/pf3n0s$s.npz --draw s$s --sets "S=$W/models/S:gain,P=$W/models/P:gain,T=$W/models/T:gain" \
    --models-auto $M/models_auto --out $OUT/confirm_rows.jsonl $D --device cuda 2>&1 | grep -v Warn | head -2
done
echo "== judge $(el)"
$H6 judge $OUT/confirm_rows.jsonl --base S --cand P --report T --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
gzip -k $OUT/confirm_rows.jsonl
echo "done after $(( $(date +%s) - T0 )) s"; date -u
