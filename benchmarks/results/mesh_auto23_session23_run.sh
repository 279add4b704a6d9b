#!/bin/bash
# the lead, session 23, round auto23 (ONE device call): the pre-registered round of
# benchmarks/results/mesh_auto23_session23.md: k = "auto" models of session 11's recipe (c2eb5bd's record-auto + train,
# run in a tree of that commit: the carry's old.tar.xz) on three training draws (C, as shipped) and on nine (P), each
# with its 19 leave-one-category-out folds, listed working meshes at 4,000 faces; judged in the real pipeline under each
# mesh's held-out fold on canonical working meshes of s2144-s2167, batches of 4 while the judging end is not reached.
# carry (.carry-ma23): hard links of .carry-mc22's files (mesh_round_carry.sh's, carry.sha1, old.tar.xz).
# LOCAL=1 IDS=21,101 JUDGE=9903,9904 DEV=cpu JOBS=2: a development-CPU smoke test (throw-away judging seeds).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=${M:-$PWD/.carry-ma23}; W=${W:-/tmp/ma23}; D=$OUT/ma23; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
source benchmarks/mesh_round_env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u; nproc --all
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults, segment, simplify; print(len(learned.FEATURES), 'AUTO_POLICY', learned.AUTO_POLICY, 'AUTO_STOP_P', learned.AUTO_STOP_P, 'WORKING_FACES', defaults.WORKING_FACES, 'K_STARTS', segment.K_STARTS, 'CANONICAL_ORDER', simplify.CANONICAL_ORDER)"
  sha1sum benchmarks/mesh_session23_auto.py benchmarks/mesh_session19_auto.py benchmarks/mesh_round.py
  echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
mkdir -p "$W/old" && tar -xJf "$M/old.tar.xz" -C "$W/old"
echo "== folds [$(( $(date +%s) - T0 )) s]"
timeout "${T_FOLDS:-300}" python3 benchmarks/mesh_session23_auto.py folds --old "$W/old" --data "$W/psb.npz" --work "$W/w" \
  --device "${DEV:-cuda}" --jobs "${JOBS:-16}" ${IDS:+--ids $IDS --n-meshes 2} 2>&1 | grep -v Warn
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-300}" python3 benchmarks/mesh_session23_auto.py round --data "$W/psb.npz" --work "$W/w" --out "$W/o" \
  --judge "${JUDGE:-2144,2145,2146,2147,2148,2149,2150,2151,2152,2153,2154,2155,2156,2157,2158,2159,2160,2161,2162,2163,2164,2165,2166,2167}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch 4 --judge-end "${JUDGE_END:-$(( 520 - ($(date +%s) - T0) ))}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session23_auto.py judge "$W/o/rows.jsonl" --folds "$W/w/auto_folds.json" --json "$D/judged.json" \
  ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
(cd "$W/w" && tar -cf - models_auto | xz -9 > "$D/models_auto.tar.xz")
(cd "$W" && tar -czf "$D/meta.tar.gz" --exclude=rec_auto o/stores.sha1.json o/round.json w/auto_folds.json w/auto_folds_C \
  w/auto_folds_P)
echo "done after $(( $(date +%s) - T0 )) s"; date -u
