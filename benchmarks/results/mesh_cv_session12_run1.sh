#!/bin/bash
# mesh-cv2, session 12, the one device call (H100): held-out (leave one category out) figures with today's defaults.
# carry: .carry-mcv2 (stores/pf3n0s1281-1283.npz made on the development CPU with today's default working mesh
# by benchmarks/mesh_simplify_session7_stores.py; models/ + models_auto/ = copies of session 11's fold models
# .carry-mq11/models, models_auto), .carry-r2/c (PSB off.tar.xz + humans.npzx; read only).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; M=$R/.carry-mcv2; W=/tmp/mcv2; mkdir -p $W
END=${END_S:-200}   # seconds after T0 by which the last draw must stop (the call's timeout_s is a little more)
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git log --oneline -1 2>/dev/null; } | tee $OUT/device.txt
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
python3 - $M/stores $M/models $M/models_auto <<'PY' | tee -a $OUT/device.txt
import sys, hashlib, pathlib
for d in sys.argv[1:]:
    for p in sorted(pathlib.Path(d).glob("*.npz")):
        print(p.parent.name, p.stem, hashlib.sha1(p.read_bytes()).hexdigest()[:12])
PY
for s in 1281 1282 1283; do
  left=$(( END - ($(date +%s) - T0) )); [ $left -lt 20 ] && { echo "== s$s skipped: $left s left $(el)"; break; }
  echo "== run s$s (limit $left s) $(el)"
  timeout $left python3 benchmarks/mesh_session12_cv.py run --store $M/stores/pf3n0s$s.npz --draw s$s --models $M/models \
    --models-auto $M/models_auto --out $OUT/rows.jsonl --data $W/psb.npz --device cuda --jobs 16 2>&1 | grep -v Warn > $OUT/log_s$s.txt
  head -1 $OUT/log_s$s.txt; grep -c '"mesh"' $OUT/log_s$s.txt; grep -m3 error $OUT/log_s$s.txt
  python3 benchmarks/mesh_session12_cv.py summary $OUT/rows.jsonl --json $OUT/summary.json > $OUT/summary.txt 2>&1
  head -8 $OUT/summary.txt
done
cat $OUT/summary.txt
echo "done after $(( $(date +%s) - T0 )) s"; date -u
