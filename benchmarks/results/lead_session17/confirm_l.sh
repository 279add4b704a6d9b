#!/bin/bash
# lead, session 17: the confirmation of L (confirm_l_rule.md): mesh-q9's run script (mesh_q9_session17_run.sh) without its timing part, judging draws s1750-s1765 (JUDGE below); the lines after this header are mesh-q9's.
# (candidate L = recipe S + the 22nd column largest_share, against C = recipe S as shipped; records of s1421-1422 at
# 3,500 faces, leave one category out; the real pipeline on the judging draws s1712-s1719): stores -> record -> train
# -> confirm (batches of 4 draws) -> judge (1)-(3); then (4) the 17k end-to-end timing, one process, old loop against
# new. carry: .carry-mq17q9 (mesh-auto8's pml.tar.xz (ICU stub data) and psb_int.npz.xz (the 76 PSB meshes, lossless),
# PSB 101.off (the 17k timing mesh), mesh-q8's fast_simplification wheel, humans.npzx, models_auto/;
# cfolds/ = mesh-q8's C fold models; lib.tar.xz = gpu_kernels/mesh as committed at the rule's commit, unpacked over the
# device copy so that other helpers' uncommitted edits do not leak in; old_numba_merge.py = the 21-column loop as
# shipped before; lib.sha1 of the rule's scripts). Writes $OUT/mq9/.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=$PWD/.carry-mq17q9; W=/tmp/mq9; D=$OUT/confirm_l; mkdir -p $D $W
exec > >(tee $D/log.txt) 2>&1
if [ -f $M/lib.tar.xz ]; then tar -xJf $M/lib.tar.xz && echo "gpu_kernels/mesh of the rule's commit unpacked"; fi
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; cat $M/lib.commit
  sha1sum -c --quiet $M/lib.sha1 && echo "lib.sha1 OK"
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY, 'WORKING_FACES', defaults.WORKING_FACES, 'K', defaults.DEFAULT_K_MERGE, 'AUTO', defaults.DEFAULT_AUTO_MERGE)"; } 2>&1 | tee $D/device.txt
if [ -z "$LOCAL" ]; then  # (LOCAL=1, IDS, TRAIN, JUDGE, DEV, JOBS: a development-CPU smoke test on throw-away seeds)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-mq9 $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-mq9; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-mq9:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
unset GPULAB_PYMESHLAB_CLOCK
python3 -c "import pymeshlab, fast_simplification; print('pymeshlab + fast_simplification import')" 2>&1 | tail -1
python3 benchmarks/mesh_simplify_session7_pack.py unpack $M/humans.npzx $W/humans.npz
xz -dc $M/psb_int.npz.xz > $W/psb_int.npz
python3 - $W <<'PY'
# (mesh-auto8's lossless packing) the 76 PSB meshes: vertices as the OFF files' decimals x 1e6 (int32), v = vi / 1e6 is
# bit for bit what mesh_psb.load_off parses; faces as in the OFF files; the meshes' SHA-1 must be b3f72461...
import sys, pathlib, hashlib, numpy as np
W = pathlib.Path(sys.argv[1])
h = np.load(W / "humans.npz")
store = {k: h[k] for k in h.files}
z = np.load(W / "psb_int.npz")
sha = hashlib.sha1()
for k in sorted(z.files):
    if k.startswith("vi_"):
        store["v_" + k[3:]] = z[k].astype(np.float64) / 1e6
    else:
        store[k] = z[k].astype(np.int32)
for k in sorted(store):
    if k.startswith(("v_", "f_")):
        sha.update(np.ascontiguousarray(store[k]).tobytes())
np.savez(W / "psb.npz", **store)
print("psb.npz assembled:", len(store), "arrays; meshes' sha1", sha.hexdigest(),
      "OK" if sha.hexdigest() == "b3f72461791bc2b154ad8ee90acfce6f2f4851cc" else "DIFFERENT")
PY
sha1sum $M/models_auto/ALL.npz $M/cfolds/ALL.npz | tee -a $D/device.txt
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout ${T_ROUND:-280} python3 benchmarks/mesh_session17_q9.py round --data $W/psb.npz --work $W/w --out $W/o \
  --train ${TRAIN:-1421,1422} --judge ${JUDGE:-1750,1751,1752,1753,1754,1755,1756,1757,1758,1759,1760,1761,1762,1763,1764,1765} \
  --models-auto $M/models_auto --c-folds $M/cfolds --jobs ${JOBS:-16} --device ${DEV:-cuda} --batch 4 \
  --judge-end ${JUDGE_END:-235} ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session17_q9.py judge $W/o/rows.jsonl --json $D/judged.json ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c $W/o/rows.jsonl > $D/rows.jsonl.gz
(cd $W/w && tar -cf $D/models.tar models)
(cd $W/o && tar -czf $D/meta.tar.gz record.jsonl train.jsonl stores.sha1.json models.sha1)
echo "done after $(( $(date +%s) - T0 )) s"; date -u
