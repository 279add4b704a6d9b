#!/bin/bash
# mesh-auto19, session 19, the ONE device call (H100): the measurement of benchmarks/results/mesh_auto19_session19.md.
# k = "auto" in the real pipeline of the plan's commit's library (prepare_mesh + segment_prepared, the full-resolution
# re-cut, GPU) under each mesh's HELD-OUT category fold of session 11's k = "auto" recipe (arm H) and, from the same
# prepared mesh, under the shipped k = "auto" model (arm S), on new draws from s1948-s1971 in order (batches of 4
# while the judging end is not reached; >= 12 complete), then the judge.
# The folds: .carry-ma19/models_auto (rebuilt on the development CPU with c2eb5bd's record-auto + train; its ALL
# checked == 618bddc1 there; their SHA-1s are printed here again). FOLDS_GPU=1 instead rebuilds them here on the GPU
# (c2eb5bd's tree from old.tar.xz, its stores pf3s1107-1109 made here and checked against session 11's SHA-1s).
# carry (.carry-ma19): mesh_round_carry.sh's pml.tar.xz, fast_simplification wheel, psb_int.npz.xz, humans.npzx
# (copied from .carry-mq14, carry.sha1), lib.tar.xz = git archive of the plan's commit (gpu_kernels/mesh, app/io,
# the top-level benchmarks/*.py, mesh_round_env.sh), unpacked over the device copy; lib.commit; old.tar.xz = git
# archive of c2eb5bd (gpu_kernels, app, benchmarks/*.py); models_auto/ (20 folds).
# LOCAL=1 IDS=21,101 JUDGE=9903,9904 DEV=cpu JOBS=1: a development-CPU smoke test on throw-away seeds.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=${M:-$PWD/.carry-ma19}; W=${W:-/tmp/ma19}; D=$OUT/ma19; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
if [ -f "$M/lib.tar.xz" ] && [ -z "$NO_LIB" ]; then tar -xJf "$M/lib.tar.xz" && echo "the plan commit's library unpacked: $(cat "$M/lib.commit")"; fi
source benchmarks/mesh_round_env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u; nproc
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults; print(len(learned.FEATURES), 'AUTO_POLICY', learned.AUTO_POLICY, 'AUTO_STOP_P', learned.AUTO_STOP_P, 'WORKING_FACES', defaults.WORKING_FACES, 'AUTO', defaults.DEFAULT_AUTO_MERGE)"
  echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
MA=$M/models_auto
if [ -n "${FOLDS_GPU:-}" ]; then
  echo "== folds on the device [$(( $(date +%s) - T0 )) s]"
  mkdir -p "$W/old" "$W/st" && tar -xJf "$M/old.tar.xz" -C "$W/old"
  (cd "$W/old" && python3 - "$W/psb.npz" "$W/st" "${JOBS:-16}" <<'PY'
# session 11's stores pf3s1107-1109 (c2eb5bd's mesh_simplify_session7_stores.py, the meshes in parallel, same order)
import os, sys, pathlib
sys.path[:0] = [".", "benchmarks"]
from concurrent.futures import ProcessPoolExecutor
import numpy as np, mesh_psb as mp
from mesh_simplify_session7_stores import store_entries
from gpu_kernels.mesh.segment import WORKING_FACES
data, out, jobs = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
def job(a):
    name, v, f = a
    return store_entries(name, v, f, int(WORKING_FACES))
ids = [int(x) for x in os.environ["IDS"].split(",")] if os.environ.get("IDS") else mp.mesh_ids(data)
meshes = [mp.load_mesh(data, i) for i in ids]  # (read here: forked workers must not share the open npz)
for s in (1107, 1108, 1109):
    store = {}
    with ProcessPoolExecutor(jobs) as ex:
        for e in ex.map(job, [(f"pf3s{s}", v, f) for v, f in meshes]):
            store.update(e)
    np.savez_compressed(out / f"pf3s{s}.npz", **store)
    print(f"pf3s{s}: {len(store) // 2} meshes at {WORKING_FACES}", flush=True)
PY
  ) 2>&1 | grep -v Warn
  MA=$W/models_auto
  timeout "${T_FOLDS:-120}" python3 benchmarks/mesh_session19_auto.py folds --old "$W/old" --stores "$W/st" --data "$W/psb.npz" \
    --work "$W" --models "$MA" --device "${DEV:-cuda}" --jobs "${JOBS:-16}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
  cp "$W/folds.json" "$W/record_auto.jsonl" "$W/train_auto.jsonl" "$D/" 2>/dev/null
  FOLDS_JSON=$W/folds.json
else
  FOLDS_JSON=$M/folds.json
fi
(cd "$MA" && sha1sum *.npz) > "$D/models_auto.sha1"; grep ALL.npz "$D/models_auto.sha1"
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-300}" python3 benchmarks/mesh_session19_auto.py round --data "$W/psb.npz" --work "$W/w" --out "$W/o" \
  --models-auto "$MA" --judge "${JUDGE:-1948,1949,1950,1951,1952,1953,1954,1955,1956,1957,1958,1959,1960,1961,1962,1963,1964,1965,1966,1967,1968,1969,1970,1971}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch 4 --judge-end "${JUDGE_END:-95}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session19_auto.py judge "$W/o/rows.jsonl" --folds "$FOLDS_JSON" --json "$D/judged.json" \
  ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
cp "$W/o/round.json" "$W/o/stores.sha1.json" "$D/" 2>/dev/null
echo "done after $(( $(date +%s) - T0 )) s"; date -u
