#!/bin/bash
# carry: .carry-mq12/stores2 (pf3s1224-1226, made on the development CPU), .carry-mq12/call1 (call 1's judged.json and
# models.tar, as they came back), .carry-mq11/models (session 11's fold models), .carry-r2/c (read only).
# mesh-q, session 12, device call 2 (H100): the confirmation of benchmarks/results/mesh_q_session12.md: the real pipeline
# (full-resolution re-cut, GPU) on s1224-1226 with S11 and the round's pick (call 1's fold models, unchanged), judge.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; W=/tmp/mq12c; mkdir -p $W
P="python3 benchmarks/mesh_session12_q.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git log --oneline -1 2>/dev/null
  PIN=$(git log -1 --format=%H -- benchmarks/results/mesh_q_session12_run2.sh 2>/dev/null); echo "pin $PIN"
  git diff --stat $PIN -- gpu_kernels/mesh benchmarks/mesh_psb.py benchmarks/mesh_session11_learned.py benchmarks/mesh_session12_q.py 2>&1 | tail -3
  git checkout $PIN -- gpu_kernels/mesh benchmarks/mesh_psb.py benchmarks/mesh_session11_learned.py benchmarks/mesh_session12_q.py 2>&1 \
    && echo "pinned to $PIN" || echo "NOT pinned (the tree as copied)"; } 2>&1 | tee $OUT/device.txt
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
tar -xf $R/.carry-mq12/call1/models.tar -C $W
python3 - $R/.carry-mq12/stores2 $R/.carry-mq11/models $W/models/R $W/models/W $W/models/E $W/models/EW <<'PY' | tee -a $OUT/device.txt
import sys, hashlib, pathlib
for d in sys.argv[1:]:
    for p in sorted(pathlib.Path(d).glob("*.npz")):
        print(p.parent.name, p.stem, hashlib.sha1(p.read_bytes()).hexdigest())
PY
D="--data $W/psb.npz --jobs 16"
J=$R/.carry-mq12/call1/judged.json
PICK=$(python3 -c "import json; j=json.load(open('$J')); print(j['pick'] or max(['W','E','EW'], key=lambda c: j[c]['gain']))")
PASSED=$(python3 -c "import json; print(json.load(open('$J'))['pick'] is not None)")
echo "== confirm (real pipeline) S11 vs $PICK (round passed: $PASSED) $(el)"
CS="S11=$R/.carry-mq11/models,$PICK=$W/models/$PICK"
for s in 1224 1225 1226; do
  timeout 100 $P confirm --store $R/.carry-mq12/stores2/pf3s$s.npz --draw s$s --sets $CS --out $OUT/conf_rows.jsonl $D --device cuda 2>&1 | grep -v Warn | tail -2
  echo "   s$s $(el): $(wc -l < $OUT/conf_rows.jsonl) rows"
done
$P judge $OUT/conf_rows.jsonl --base S11 --cands $PICK --control "" --json $OUT/conf_judged.json 2>&1 | tee $OUT/conf_judge.txt
echo "done after $(( $(date +%s) - T0 )) s"; date -u
