#!/bin/bash
# carry: .carry-mq11/stores (pf3s1101-1103, made on the development CPU) and .carry-r2/c (session 10's off.tar.xz +
# humans.npzx; read only). scikit-learn is the device image's own.
# mesh-q, session 11, device call 1 (H100): the pre-registered round of benchmarks/results/mesh_q_session11.md
# (record, LOCO train, replay evaluate, judge).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; W=/tmp/mq11; mkdir -p $W
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git log --oneline -1 2>/dev/null;
  python3 -c "import sklearn, numpy, scipy; print('sklearn', sklearn.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__)"; } | tee $OUT/device.txt
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
python3 - $R/.carry-mq11/stores <<'PY' | tee -a $OUT/device.txt
import sys, hashlib, pathlib, numpy as np
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.npz")):
    z = np.load(p); h = hashlib.sha1()
    for k in sorted(z.files):
        h.update(k.encode()); h.update(np.ascontiguousarray(z[k]).tobytes())
    print("store", p.stem, len(z.files), h.hexdigest())
PY
for s in 1101 1102 1103; do
  echo "== record s$s [$(( $(date +%s) - T0 )) s]"
  timeout 150 python3 benchmarks/mesh_session11_learned.py record --store $R/.carry-mq11/stores/pf3s$s.npz --draw s$s \
    --out $W/rec --data $W/psb.npz --device cuda --jobs 16 2>&1 | grep -v Warn >> $OUT/record.jsonl
  grep -c '"examples"' $OUT/record.jsonl; grep error $OUT/record.jsonl | head -3
done
echo "== train [$(( $(date +%s) - T0 )) s]"
timeout 120 python3 benchmarks/mesh_session11_learned.py train --rec $W/rec --models $W/models --jobs 16 2>&1 | grep -v Warn | tee $OUT/train.jsonl
tar -cf $OUT/models.tar -C $W models
echo "== evaluate [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 benchmarks/mesh_session11_learned.py evaluate --rec $W/rec --models $W/models --data $W/psb.npz \
  --out $OUT/rows.jsonl --jobs 16 2>&1 | grep -v Warn | wc -l
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session11_learned.py judge $OUT/rows.jsonl --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
echo "done after $(( $(date +%s) - T0 )) s"; date -u
