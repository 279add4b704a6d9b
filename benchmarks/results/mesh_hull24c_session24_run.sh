#!/bin/bash
# the lead, session 24, round hull24c (ONE device call): the pre-registered round of
# benchmarks/results/mesh_hull24c_session24.md: control C (recipe S retrained; its ALL must equal the shipped integer-k
# model) against HX (recipe S on 22 columns, the union's depth under its exact convex hull: learned.HULL_FEATURE and
# learned.HULL_EXACT, records and merges with both on; benchmarks/mesh_session24_hull_c.py), leave one category out,
# every fold trained on its own switch set's records of s1421-1422 (3,500 faces, shuffled listings, CANONICAL_ORDER
# off), the real pipeline on the judging draws s2240-s2263 in order, batches of 4 while the judging end (440 s) is not
# reached, k = "auto" under the shipped model; then the judge. carry (.carry-mm23): mesh_round_carry.sh's files.
# LOCAL=1 IDS=21,101 TRAIN=9901 JUDGE=9903,9904 DEV=cpu JOBS=1: a development-CPU smoke test on throw-away seeds.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=${M:-$PWD/.carry-mm23}; W=${W:-/tmp/mh24c}; D=$OUT/mh24c; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
source benchmarks/mesh_round_env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u; nproc --all
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults, segment, simplify; print(len(learned.FEATURES), 'HULL_FEATURE', learned.HULL_FEATURE, 'HULL_EXACT', learned.HULL_EXACT, learned.HULL_POINTS, learned.POLICY, 'GAIN_POWER', learned.GAIN_POWER, 'AUTO_POLICY', learned.AUTO_POLICY, 'WORKING_FACES', defaults.WORKING_FACES, 'K_STARTS', segment.K_STARTS, 'CANONICAL_ORDER', simplify.CANONICAL_ORDER)"
  git rev-parse --short HEAD 2>/dev/null; sha1sum benchmarks/mesh_session24_hull_c.py benchmarks/mesh_session24_hull.py benchmarks/mesh_session23_mono.py benchmarks/mesh_round.py gpu_kernels/mesh/learned.py gpu_kernels/mesh/_numba_merge.py
  echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
DATA="$W/psb.npz"
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-520}" python3 benchmarks/mesh_session24_hull_c.py round --data "$DATA" --work "$W/w" --out "$W/o" \
  --train "${TRAIN:-1421,1422}" --judge "${JUDGE:-2240,2241,2242,2243,2244,2245,2246,2247,2248,2249,2250,2251,2252,2253,2254,2255,2256,2257,2258,2259,2260,2261,2262,2263}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch 4 --judge-end "${JUDGE_END:-440}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session24_hull_c.py judge "$W/o/rows.jsonl" --json "$D/judged.json" ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
(cd "$W/w" && tar -cf - models | xz -9 > "$D/models.tar.xz")
(cd "$W" && tar -czf "$D/meta.tar.gz" o/record.jsonl o/train.jsonl o/stores.sha1.json o/models.sha1 o/round.json)
echo "done after $(( $(date +%s) - T0 )) s"; date -u
