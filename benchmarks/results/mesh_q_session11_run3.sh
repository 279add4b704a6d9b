#!/bin/bash
# carry: .carry-mq11/stores3 (pf3s1107-1109, made on the development CPU) and .carry-r2/c (read only).
# mesh-q, session 11, device call 3 (H100): round 2 of benchmarks/results/mesh_q_session11.md, k = "auto" with the
# learned score (record-auto, LOCO train, evaluate-auto replay, judge).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; W=/tmp/mq11a; mkdir -p $W
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $OUT/device.txt
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
python3 - $R/.carry-mq11/stores3 <<'PY' | tee -a $OUT/device.txt
import sys, hashlib, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.npz")):
    print(p.stem, hashlib.sha1(p.read_bytes()).hexdigest())
PY
for s in 1107 1108 1109; do
  echo "== record-auto s$s [$(( $(date +%s) - T0 )) s]"
  timeout 150 python3 benchmarks/mesh_session11_learned.py record-auto --store $R/.carry-mq11/stores3/pf3s$s.npz --draw s$s \
    --out $W/rec --data $W/psb.npz --device cuda --jobs 16 2>&1 | grep -v Warn >> $OUT/record.jsonl
  grep -c '"examples"' $OUT/record.jsonl; grep error $OUT/record.jsonl | head -3
done
echo "== train [$(( $(date +%s) - T0 )) s]"
timeout 120 python3 benchmarks/mesh_session11_learned.py train --rec $W/rec --models $W/models_auto --jobs 16 2>&1 | grep -v Warn > $OUT/train.jsonl
tar -cf $OUT/models_auto.tar -C $W models_auto
echo "== evaluate-auto [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 benchmarks/mesh_session11_learned.py evaluate-auto --rec $W/rec --models $W/models_auto --data $W/psb.npz \
  --out $OUT/rows.jsonl --jobs 16 2>&1 | grep -v Warn | wc -l
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session11_learned.py judge $OUT/rows.jsonl --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
python3 - $OUT/rows.jsonl <<'PY'
import json, sys, numpy as np
rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
rows = [r for r in rows if "error" not in r]
for dr in sorted({r["draw"] for r in rows}):
    rr = [r for r in rows if r["draw"] == dr]
    print(dr, "k equal to the defaults'", sum(r["learned_k"] == r["default_k"] for r in rr), "/", len(rr),
          "mean k", np.mean([r["default_k"] for r in rr]), "->", np.mean([r["learned_k"] for r in rr]))
PY
echo "done after $(( $(date +%s) - T0 )) s"; date -u
echo "== pytest -m gpu tests/mesh with DEFAULT_K_MERGE = learned [$(( $(date +%s) - T0 )) s]"
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $R/.carry-msp10/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} timeout 240 python3 -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tee $OUT/gpu_tests.txt | tail -8
echo "all done after $(( $(date +%s) - T0 )) s"; date -u
