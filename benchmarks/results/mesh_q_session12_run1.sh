#!/bin/bash
# carry: .carry-mq12/stores (pf3s1221-1223, made on the development CPU), .carry-mq11/models
# (session 11's fold models: the shipped recipe held out, the base) and .carry-r2/c (off.tar.xz + humans.npzx; read only).
# mesh-q, session 12, device call 1 (H100): the pre-registered round and confirmation of
# benchmarks/results/mesh_q_session12.md (record, train R/W, active epoch, train E/EW, replay evaluate + oracle, judge);
# the confirmation is run2.sh (the carry limit: the tracked tree + both store sets + the PSB data is over 64 MiB).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; W=/tmp/mq12; mkdir -p $W
P="python3 benchmarks/mesh_session12_q.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git log --oneline -1 2>/dev/null
  python3 -c "import sklearn, numpy, scipy; print('sklearn', sklearn.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__)"
  # the library as of the rule's commit (others edit the shared tree during the session): what differs, then pinned
  PIN=$(git log -1 --format=%H -- benchmarks/results/mesh_q_session12_run1.sh 2>/dev/null); echo "pin $PIN"
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
python3 - $R/.carry-mq12/stores $R/.carry-mq11/models <<'PY' | tee -a $OUT/device.txt
import sys, hashlib, pathlib
for d in sys.argv[1:]:
    for p in sorted(pathlib.Path(d).glob("*.npz")):
        print(p.parent.name, p.stem, hashlib.sha1(p.read_bytes()).hexdigest())
PY
D="--data $W/psb.npz --jobs 16"
for s in 1221 1222 1223; do
  echo "== record s$s $(el)"
  timeout 100 $P record --store $R/.carry-mq12/stores/pf3s$s.npz --draw s$s --out $W/rec $D --device cuda 2>&1 | grep -v Warn >> $OUT/record.jsonl
  grep -c '"examples"' $OUT/record.jsonl; grep error $OUT/record.jsonl | head -3
done
for r in R W; do
  echo "== train $r $(el)"
  timeout 90 $P train --rec $W/rec --models $W/models/$r --recipe $r $D 2>&1 | grep -v Warn >> $OUT/train.jsonl
done
for r in R W; do
  echo "== active from $r (draw s1221) $(el)"
  timeout 120 $P active --rec $W/rec --draws s1221 --models $W/models/$r --out $W/active/$r $D 2>&1 | grep -v Warn > $W/active_$r.jsonl
  wc -l < $W/active_$r.jsonl; grep -c error $W/active_$r.jsonl; grep error $W/active_$r.jsonl | head -2
done
echo "== train E EW $(el)"
timeout 90 $P train --rec $W/rec --models $W/models/E --recipe E --active $W/active/R $D 2>&1 | grep -v Warn >> $OUT/train.jsonl
timeout 90 $P train --rec $W/rec --models $W/models/EW --recipe EW --active $W/active/W $D 2>&1 | grep -v Warn >> $OUT/train.jsonl
grep -c error $OUT/train.jsonl
tar -cf $OUT/models.tar -C $W models
SETS="S11=$R/.carry-mq11/models,R=$W/models/R,W=$W/models/W,E=$W/models/E,EW=$W/models/EW"
echo "== evaluate (replay) $(el)"
timeout 120 $P evaluate --rec $W/rec --sets $SETS --out $OUT/rows.jsonl $D 2>&1 | grep -v Warn | tail -3
echo "== judge $(el)"
$P judge $OUT/rows.jsonl --base S11 --cands W,E,EW --control R --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
# the worst meshes' records (draw s1221) for the failure analysis on the development CPU
python3 - $OUT/rows.jsonl $W/rec/s1221 $OUT <<'PY'
import sys, json, tarfile, pathlib
rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
rows = [r for r in rows if "error" not in r and r["draw"] == "s1221"]
ids = sorted({r["mesh"] for r in rows if r["category"] == "fish" or r["S11"] > 0.28})[:10]
with tarfile.open(pathlib.Path(sys.argv[3]) / "worst_s1221.tar.gz", "w:gz") as t:
    for i in ids:
        t.add(pathlib.Path(sys.argv[2]) / f"{i}.pkl", arcname=f"{i}.pkl")
print("records kept:", ids)
PY
echo "done after $(( $(date +%s) - T0 )) s"; date -u
