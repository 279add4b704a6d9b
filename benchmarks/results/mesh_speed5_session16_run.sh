#!/bin/bash
# mesh-speed5, session 16, the ONE device call (H100): the pre-registered round of benchmarks/results/mesh_speed5_session16.md
# (candidate W = WORKING_FACES 3,500 with recipe S retrained on its working meshes, against C = recipe S retrained on the
# 4,000-face working meshes of the same training draws): stores (both arms, s1421-1422 + s1431-1434) -> record -> train
# -> the real pipeline on the judging draws -> the speed (17k 41 + 50k 21 rounds, one process) -> 2 host cores, 50k.
# carry: .carry-ms16w (pml.tar.xz (the Qt libraries stripped of their static symbols, xz -9e) + fast_simplification wheel,
# off.tar.xz + humans.npzx, models_auto/, lib.sha1 + lib.commit). Writes $OUT/ms16w/.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); R=$PWD; M=$R/.carry-ms16w; W=/tmp/ms16w; D=$OUT/ms16w; mkdir -p $D $W
exec > >(tee $D/log.txt) 2>&1
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; lscpu | grep -i "model name\|hypervisor"
  echo "the library and scripts as committed (lib.sha1 of gpu_kernels/mesh and benchmarks/mesh_*.py at lib.commit; no lib.tar: the 64 MiB limit):"
  cat $M/lib.commit; sha1sum -c --quiet $M/lib.sha1 && echo "lib.sha1 OK"; python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY, 'WORKING_FACES', defaults.WORKING_FACES)"; } 2>&1 | tee $D/device.txt
# (LOCAL=1, IDS, TRAIN, JUDGE, DEV, R17, R50: a development-CPU smoke test of this script on throw-away seeds only;
#  the device call uses the defaults = the rule's)
if [ -z "$LOCAL" ]; then
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-ms16w $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-ms16w; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-ms16w:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
python3 -c "import pymeshlab, fast_simplification; print('pymeshlab', pymeshlab.__version__ if hasattr(pymeshlab, '__version__') else '?')" 2>&1 | tail -1
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
sha1sum $W/psbdir/off/101.off $W/psbdir/off/281.off $M/models_auto/ALL.npz | tee -a $D/device.txt
echo "== round $(el)"
timeout ${T_ROUND:-170} python3 benchmarks/mesh_speed16w.py round --data $W/psb.npz --work $W --out $D \
  --train ${TRAIN:-1421,1422} --judge ${JUDGE:-1431,1432,1433,1434} --models-auto $M/models_auto --jobs ${JOBS:-16} \
  --device ${DEV:-cuda} --judge-end ${JUDGE_END:-155} ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge (1)-(3) $(el)"
python3 benchmarks/mesh_speed16w.py judge $D/rows.jsonl --json $D/judged.json ${IDS:+--n-meshes 2} 2>&1 | grep -v Warn
gzip -k $D/rows.jsonl
(cd $W && tar -cf $D/models.tar models)
if [ -s $W/models/W/ALL.npz ]; then
  echo "== speed: 17k 41 + 50k 21 rounds, base / W, one process $(el)"
  timeout ${T_AB:-50} python3 benchmarks/mesh_speed16w.py speed $W/psbdir/off/101.off $W/psbdir/off/281.off \
    --model-w $W/models/W/ALL.npz --rounds ${R17:-41} --rounds-rest ${R50:-21} --configs base,W --device ${DEV:-cuda} --json $D/ab.json 2>&1 \
    | grep -v Warn | grep -v " runs \| steps "
  echo "== 2 host cores, CPU path, 50k, W $(el)"
  timeout ${T_CPU:-20} taskset -c 0,1 python3 benchmarks/mesh_speed16w.py speed $W/psbdir/off/281.off \
    --model-w $W/models/W/ALL.npz --rounds 1 --configs W --device cpu --json $D/ab_cpu2.json 2>&1 | grep -v Warn | grep -v " runs \| steps "
  python3 benchmarks/mesh_speed16w.py speed-judge $D/ab.json --cpu2 $D/ab_cpu2.json --json $D/speed_judged.json
fi
echo "done after $(( $(date +%s) - T0 )) s"; date -u
