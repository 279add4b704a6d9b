#!/bin/bash
# mesh-q8, session 17, the ONE device call (H100): the pre-registered round of benchmarks/results/mesh_q8_session17.md
# (candidate K = recipe S with every training category weighing the same, against C = recipe S as shipped, both
# retrained on the records of s1421-1422 at 3,500 faces, leave one category out; the real pipeline on the judging draws
# s1700-s1711): stores -> record -> train -> confirm (batches of 4 draws) -> judge.
# carry: .carry-mq17 (= .carry-l16c's pml.tar.xz, fast_simplification wheel, off.tar.xz, humans.npzx, models_auto/;
# lib.sha1 + lib.commit of the rule's commit). Writes $OUT/mq17/ (at most 8 files come back: 6 here).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=$PWD/.carry-mq17; W=/tmp/mq17; D=$OUT/mq17; mkdir -p $D $W
exec > >(tee $D/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; cat $M/lib.commit
  sha1sum -c --quiet $M/lib.sha1 && echo "lib.sha1 OK"
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY, 'WORKING_FACES', defaults.WORKING_FACES, 'K', defaults.DEFAULT_K_MERGE, 'AUTO', defaults.DEFAULT_AUTO_MERGE)"; } 2>&1 | tee $D/device.txt
if [ -z "$LOCAL" ]; then  # (LOCAL=1, IDS, TRAIN, JUDGE, DEV, JOBS: a development-CPU smoke test on throw-away seeds)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-mq17 $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-mq17; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-mq17:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
python3 -c "import pymeshlab, fast_simplification; print('pymeshlab + fast_simplification import')" 2>&1 | tail -1
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
sha1sum $M/models_auto/ALL.npz | tee -a $D/device.txt
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout ${T_ROUND:-230} python3 benchmarks/mesh_session17_q.py round --data $W/psb.npz --work $W/w --out $W/o \
  --train ${TRAIN:-1421,1422} --judge ${JUDGE:-1700,1701,1702,1703,1704,1705,1706,1707,1708,1709,1710,1711} \
  --models-auto $M/models_auto --jobs ${JOBS:-16} --device ${DEV:-cuda} --batch 4 --judge-end ${JUDGE_END:-185} \
  ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session17_q.py judge $W/o/rows.jsonl --json $D/judged.json ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c $W/o/rows.jsonl > $D/rows.jsonl.gz
(cd $W/w && tar -cf $D/models.tar models)
(cd $W/o && tar -czf $D/meta.tar.gz record.jsonl train.jsonl stores.sha1.json models.sha1)
echo "done after $(( $(date +%s) - T0 )) s"; date -u
