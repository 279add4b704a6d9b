#!/bin/bash
# carry: .carry-mq12/c3 (call 1's rows.jsonl and models.tar as they came back; lib.tar: git archive 0e6f3ad of the code; the store pf3s1223 and the entries of
# pf3s1222 for the 9 meshes call 1 did not reach), .carry-mq11/models (session 11's fold models), .carry-r2/c (read only).
# mesh-q, session 12, device call 3 (H100): the rest of the pre-registered round of benchmarks/results/mesh_q_session12.md,
# unchanged: call 1 ran past its own time limit in the replay evaluate (143 of 228 mesh-draws). Records (GPU, the
# hand-made merges) of the 9 missing s1222 meshes and of s1223, the same replay evaluate with call 1's fold models
# (R, W, E, EW; S11), then the judge over all 228 mesh-draws.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; K=$R/.carry-mq12/c3; W=/tmp/mq12r3; mkdir -p $W
P="python3 benchmarks/mesh_session12_q.py"
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  # the library as of the rule (commit 0e6f3ad, carried as lib.tar: others edit the shared tree): what differs, then restored
  mkdir -p $W/lib && tar -xf $K/lib.tar -C $W/lib && diff -rq $W/lib/gpu_kernels/mesh gpu_kernels/mesh | grep -v pycache | head -5
  tar -xf $K/lib.tar -C $R && echo "library restored to 0e6f3ad"; } 2>&1 | tee $OUT/device.txt
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
PY
tar -xf $K/models.tar -C $W
python3 - $K $W/models/R $W/models/W $W/models/E $W/models/EW <<'PY' | tee -a $OUT/device.txt
import sys, hashlib, pathlib
for d in sys.argv[1:]:
    for p in sorted(pathlib.Path(d).glob("*.npz")):
        print(p.parent.name, p.stem, hashlib.sha1(p.read_bytes()).hexdigest())
PY
D="--data $W/psb.npz --jobs 16"
echo "== record s1222 (the 9 missing) and s1223, side by side $(el)"
timeout 80 $P record --store $K/pf3s1222_missing.npz --draw s1222 --ids $(cat $K/s1222_missing_ids.txt) --out $W/rec \
  --data $W/psb.npz --jobs 9 --device cuda 2>&1 | grep -v Warn > $OUT/record_s1222.jsonl &
timeout 80 $P record --store $K/pf3s1223.npz --draw s1223 --out $W/rec $D --device cuda 2>&1 | grep -v Warn > $OUT/record_s1223.jsonl
wait
cat $OUT/record_s1222.jsonl $OUT/record_s1223.jsonl > $OUT/record.jsonl
grep -c '"examples"' $OUT/record.jsonl; grep error $OUT/record.jsonl | head -3
SETS="S11=$R/.carry-mq11/models,R=$W/models/R,W=$W/models/W,E=$W/models/E,EW=$W/models/EW"
echo "== evaluate (replay) $(el)"
timeout 80 $P evaluate --rec $W/rec --sets $SETS --out $OUT/rows3.jsonl $D 2>&1 | grep -v Warn | tail -3
cat $K/rows.jsonl $OUT/rows3.jsonl > $OUT/rows.jsonl
echo "== judge $(el)"
$P judge $OUT/rows.jsonl --base S11 --cands W,E,EW --control R --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
python3 - $OUT/rows.jsonl $W/rec/s1223 $OUT <<'PY'
import sys, json, tarfile, pathlib
rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
rows = [r for r in rows if "error" not in r and r["draw"] == "s1223"]
ids = sorted({r["mesh"] for r in rows if r["category"] == "fish" or r["S11"] > 0.30})[:8]
with tarfile.open(pathlib.Path(sys.argv[3]) / "worst_s1223.tar.gz", "w:gz") as t:
    for i in ids:
        t.add(pathlib.Path(sys.argv[2]) / f"{i}.pkl", arcname=f"{i}.pkl")
print("records kept:", ids)
PY
echo "done after $(( $(date +%s) - T0 )) s"; date -u
