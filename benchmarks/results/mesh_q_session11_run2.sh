#!/bin/bash
# carry: .carry-mq11/stores2 (pf3s1104-1106), .carry-mq11/models (call 1's fold models), .carry-r2/c (read only),
# .carry-msp10/{101.off,281.off,fast_simplification wheel} (read only).
# mesh-q, session 11, device call 2 (H100): the confirmation in the real pipeline (benchmarks/results/mesh_q_session11.md),
# the one-process A/B, and the GPU tests of tests/mesh/test_quality11_*.py.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; W=/tmp/mq11; mkdir -p $W
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $OUT/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $R/.carry-msp10/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
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
python3 - $R/.carry-mq11/stores2 $R/.carry-mq11/models <<'PY' | tee -a $OUT/device.txt
import sys, hashlib, pathlib, numpy as np
for d in sys.argv[1:]:
    for p in sorted(pathlib.Path(d).glob("*.npz")):
        print(p.stem, hashlib.sha1(p.read_bytes()).hexdigest())
PY
for s in 1104 1105 1106; do
  echo "== confirm s$s [$(( $(date +%s) - T0 )) s]"
  timeout 170 python3 benchmarks/mesh_session11_learned.py confirm --store $R/.carry-mq11/stores2/pf3s$s.npz --draw s$s \
    --models $R/.carry-mq11/models --out $OUT/rows.jsonl --data $W/psb.npz --device cuda --jobs 16 2>&1 | grep -v Warn | grep -c '"mesh"'
done
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session11_learned.py judge $OUT/rows.jsonl --json $OUT/judged.json 2>&1 | tee $OUT/judge.txt
echo "== A/B [$(( $(date +%s) - T0 )) s]"
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS
timeout 150 python3 benchmarks/mesh_session11_ab.py $R/.carry-msp10/101.off $R/.carry-msp10/281.off --device cuda \
  --k auto,6,12 --rounds 5 --json $OUT/ab.json 2>&1 | grep -v Warn
echo "== GPU tests [$(( $(date +%s) - T0 )) s] (the proposed segment hook applied to this copy of the tree only)"
patch -p0 --forward < $R/.carry-mq11/segment.diff && git diff --stat gpu_kernels/mesh/segment.py 2>/dev/null | tail -1
ls tests/mesh/test_quality11_*.py 2>/dev/null && timeout 90 python3 -m pytest -m gpu tests/mesh/test_quality11_*.py -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -4
echo "done after $(( $(date +%s) - T0 )) s"; date -u
