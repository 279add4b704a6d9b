#!/bin/bash
# lead s16: the confirmation of W (confirm_w_rule.md): mesh-speed5's round on new judging draws s1435-1440, no speed part.
# carry: .carry-l16c (= .carry-ms16w without models_call1.tar: pml.tar.xz, fast_simplification wheel, off.tar.xz,
# humans.npzx, models_auto/, lib.sha1 + lib.commit of this commit). Writes $OUT/cw/.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=$PWD/.carry-l16c; W=/tmp/cw; D=$OUT/cw; mkdir -p $D $W
exec > >(tee $D/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; cat $M/lib.commit; sha1sum -c --quiet $M/lib.sha1 && echo "lib.sha1 OK"
  python3 -c "from gpu_kernels.mesh import learned, defaults; print(len(learned.FEATURES), 'WORKING_FACES', defaults.WORKING_FACES)"; } 2>&1 | tee $D/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-cw $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-cw; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-cw:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p $W/psbdir && tar -xJf $M/off.tar.xz -C $W/psbdir
python3 benchmarks/mesh_simplify_session7_pack.py unpack $M/humans.npzx $W/humans.npz
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
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout ${T_ROUND:-400} python3 benchmarks/mesh_speed16w.py round --data $W/psb.npz --work $W --out $D \
  --train 1421,1422 --judge 1435,1436,1437,1438,1439,1440 --models-auto $M/models_auto --jobs 16 \
  --device cuda --judge-end ${JUDGE_END:-330} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_speed16w.py judge $D/rows.jsonl --json $D/judged.json 2>&1 | grep -v Warn
gzip -f $D/rows.jsonl
echo "done after $(( $(date +%s) - T0 )) s"; date -u
