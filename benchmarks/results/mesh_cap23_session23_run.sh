#!/bin/bash
# the lead, session 23, round cap23 (ONE device call): the pre-registered round of
# benchmarks/results/mesh_cap23_session23.md: control C (recipe S retrained; its ALL must equal the shipped integer-k
# model) against T (recipe S with 128 trees, benchmarks/mesh_session23_cap.py), leave one category
# out, every fold trained on the same records of s1421-1422 (3,500 faces, shuffled listings, CANONICAL_ORDER off in
# every arm: the shipped model's training meshes), the real pipeline on the judging draws in order, batches of 4 while
# the judging end is not reached, k = "auto" under the shipped model (a harness check); then the judge.
# carry (.carry-mm23, round mono23's): mesh_round_carry.sh's files (hard links of .carry-mc22's; carry.sha1).
# LOCAL=1 IDS=21,101 TRAIN=9901 JUDGE=9903,9904 DEV=cpu JOBS=1: a development-CPU smoke test on throw-away seeds.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=${M:-$PWD/.carry-mm23}; W=${W:-/tmp/mc23}; D=$OUT/mc23; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
source benchmarks/mesh_round_env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u; nproc --all
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults, segment, simplify; print(len(learned.FEATURES), learned.POLICY, 'GAIN_POWER', learned.GAIN_POWER, 'AUTO_POLICY', learned.AUTO_POLICY, 'WORKING_FACES', defaults.WORKING_FACES, 'K_STARTS', segment.K_STARTS, 'CANONICAL_ORDER', simplify.CANONICAL_ORDER)"
  git rev-parse --short HEAD 2>/dev/null; sha1sum benchmarks/mesh_session23_cap.py benchmarks/mesh_session23_mono.py benchmarks/mesh_round.py
  echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
DATA="$W/psb.npz"
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-420}" python3 benchmarks/mesh_session23_cap.py round --data "$DATA" --work "$W/w" --out "$W/o" \
  --train "${TRAIN:-1421,1422}" --judge "${JUDGE:-2168,2169,2170,2171,2172,2173,2174,2175,2176,2177,2178,2179,2180,2181,2182,2183,2184,2185,2186,2187,2188,2189,2190,2191}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch 4 --judge-end "${JUDGE_END:-360}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session23_cap.py judge "$W/o/rows.jsonl" --json "$D/judged.json" ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
(cd "$W/w" && tar -cf - models | xz -9 > "$D/models.tar.xz")
(cd "$W" && tar -czf "$D/meta.tar.gz" o/record.jsonl o/train.jsonl o/stores.sha1.json o/models.sha1 o/round.json)
echo "done after $(( $(date +%s) - T0 )) s"; date -u
