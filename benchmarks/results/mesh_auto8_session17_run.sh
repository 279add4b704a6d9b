#!/bin/bash
# mesh-auto8, session 17, the ONE device call (H100): the pre-registered round of benchmarks/results/mesh_auto8_session17.md
# (candidate A35 = session 11's k = "auto" recipe retrained on 3,500-face working meshes, control A40 = the same recipe
# retrained on 4,000-face working meshes of the SAME training draws s1720-1722; both judged in the real pipeline at the
# shipped WORKING_FACES 3,500 on new judging draws s1724-s1739, queued in order, until the time limit).
# carry: .carry-ma17 (pml.tar.xz (libicudata.so.56 replaced by ICU's empty stub data: the 64 MiB limit) + fast_simplification
# wheel, psb_int.npz.xz (the PSB meshes, lossless, see below) + humans.npzx, models_k/ = session 16's W integer-k
# folds, models_s11/ = session 11's k = "auto" folds, lib.tar.gz = git archive of the rule's commit's gpu_kernels/mesh and
# scripts, restored over the device's copy of the tree so that nobody's uncommitted edit travels in). Writes $OUT/ma17/.
# T_TOTAL: the seconds this script may take in all (no judging row starts after T_TOTAL - END_PAD from the script's start).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; M=$R/.carry-ma17; W=/tmp/ma17; D=$OUT/ma17; mkdir -p $D $W
exec > >(tee $D/log.txt) 2>&1
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
if [ -z "$LOCAL" ]; then
  tar -xzf $M/lib.tar.gz -C $R && echo "lib.tar.gz restored: $(cat $M/lib.commit)"
fi
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; lscpu | grep -i "model name\|hypervisor"; cat /proc/uptime
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults; print(len(learned.FEATURES), learned.POLICY, learned.AUTO_POLICY, learned.AUTO_STOP_P, 'WORKING_FACES', defaults.WORKING_FACES, 'DEFAULT_AUTO_MERGE', defaults.DEFAULT_AUTO_MERGE)"
  sha1sum $M/models_k/ALL.npz $M/models_s11/ALL.npz; } 2>&1 | tee $D/device.txt
if [ -z "$LOCAL" ]; then
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-ma17 $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-ma17; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-ma17:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
python3 -c "import pymeshlab, fast_simplification; print('pymeshlab and fast_simplification import')" 2>&1 | tail -1
python3 benchmarks/mesh_simplify_session7_pack.py unpack $M/humans.npzx $W/humans.npz
xz -dc $M/psb_int.npz.xz > $W/psb_int.npz
python3 - $W <<'PY'
# the 76 PSB meshes: vertices as the OFF files' decimals x 1e6 (int32), v = vi / 1e6 is bit for bit what mesh_psb.load_off
# parses (checked for every mesh when the file was made); faces as in the OFF files
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
print("psb.npz assembled:", len(store), "arrays; meshes' sha1", sha.hexdigest())
PY
S=$(( $(date +%s) - T0 )); END=$(( ${T_TOTAL:-230} - ${END_PAD:-14} - S ))
echo "== round $(el): no judging row starts after $END s of the round"
python3 benchmarks/mesh_session17_auto.py round --data $W/psb.npz --work $W --out $D \
  --train ${TRAIN:-1720,1721,1722} --judge ${JUDGE:-1724,1725,1726,1727,1728,1729,1730,1731,1732,1733,1734,1735,1736,1737,1738,1739} \
  --models-k $M/models_k --models-s11 $M/models_s11 --jobs ${JOBS:-16} --device ${DEV:-cuda} --judge-end $END \
  ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge $(el)"
python3 benchmarks/mesh_session17_auto.py judge $D/rows.jsonl --json $D/judged.json ${IDS:+--n-meshes 2} 2>&1 | grep -v Warn
(cd $W && cp $D/models.sha1 models/ 2>/dev/null; tar -cf $D/models.tar models)
rm -f $D/models.sha1
echo "done after $(( $(date +%s) - T0 )) s"; date -u
