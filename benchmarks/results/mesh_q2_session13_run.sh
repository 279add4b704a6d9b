#!/bin/bash
# mesh-q2, session 13, one H100 call per draw set: k = "auto" with learned.AUTO_POLICY "learned" (C, control) vs
# "gain" (G), the real pipeline, leave one category out (session 11/12's k = "auto" fold models), rule in
# benchmarks/results/mesh_q2_session13.md. carry: $M (= .carry-mq2a for the round s1361-1363, .carry-mq2b for the
# confirmation s1364-1366: stores/pf3n0s13xx.npz made on the development CPU, models_auto/ = the fold models,
# lib.tar = gpu_kernels/ and benchmarks/*.py of the rule's commit) and .carry-r2/c (PSB off.tar.xz + humans.npzx).
#   M=.carry-mq2a DRAWS="1361 1362 1363" bash benchmarks/results/mesh_q2_session13_run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/${M:?}; W=/tmp/mq2; mkdir -p $W
END=${END_S:-240}
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  echo "the rule commit's library and scripts over the copied tree: $(tar -tf $M/lib.tar | grep -c .) entries"
  tar -xf $M/lib.tar; cat $M/lib.commit; } 2>&1 | tee $OUT/device.txt
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
python3 - $M/stores $M/models_auto <<'PY' | tee -a $OUT/device.txt
import sys, hashlib, pathlib
for d in sys.argv[1:]:
    for p in sorted(pathlib.Path(d).glob("*.npz")):
        print(p.parent.name, p.stem, hashlib.sha1(p.read_bytes()).hexdigest()[:12])
PY
P="python3 benchmarks/mesh_session13_q2.py"
for s in $DRAWS; do
  left=$(( END - ($(date +%s) - T0) )); [ $left -lt 20 ] && { echo "== s$s NOT RUN: $left s left $(el)"; break; }
  echo "== s$s (limit $left s) $(el)"
  timeout $left $P run --store $M/stores/pf3n0s$s.npz --draw s$s --models-auto $M/models_auto --out $OUT/rows.jsonl \
    --data $W/psb.npz --jobs 16 --device cuda 2>&1 | grep -v Warn | head -3
done
echo "== judge $(el)"
$P judge $OUT/rows.jsonl --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
echo "done after $(( $(date +%s) - T0 )) s"; date -u
