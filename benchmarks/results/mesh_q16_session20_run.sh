#!/bin/bash
# the lead, session 20, round q16 (ONE device call, H100): the pre-registered round of
# benchmarks/results/mesh_q16_session20.md (control C = as shipped, segment.K_STARTS None (24/30/36); F = K_STARTS
# (20, 24, 30, 36, 42); each arm its own switch set: recipe S retrained per fold on ITS OWN records of s1421-1422 at
# 3,500 faces; leave one category out; the real pipeline on the judging draws s2024-s2047 in order, batches of 4 while
# the judging end (220 s) is not reached, one prepare_mesh per arm per mesh-draw, >= 12 complete): stores -> record
# (two switch sets) -> train -> confirm -> judge (1), (2), (3), (5); (4) report-only. The fold models are kept.
# carry (.carry-mq16: mesh_round_carry.sh's files copied from .carry-mq15, plus): lib.tar.xz = git archive of the
# rule's commit (gpu_kernels/mesh, app/io, the top-level benchmarks/*.py, mesh_round_env.sh), unpacked over the device
# copy so that other helpers' uncommitted edits do not leak in; lib.commit.
# LOCAL=1 IDS=21,101 TRAIN=9901 JUDGE=9903,9904 DEV=cpu JOBS=1: a development-CPU smoke test on throw-away seeds.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=${M:-$PWD/.carry-mq16}; W=${W:-/tmp/mq16}; D=$OUT/mq16; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
if [ -f "$M/lib.tar.xz" ] && [ -z "$NO_LIB" ]; then tar -xJf "$M/lib.tar.xz" && echo "the rule commit's library unpacked: $(cat "$M/lib.commit")"; fi
source benchmarks/mesh_round_env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults, segment; print(len(learned.FEATURES), learned.POLICY, 'GAIN_POWER', learned.GAIN_POWER, 'AUTO_POLICY', learned.AUTO_POLICY, 'WORKING_FACES', defaults.WORKING_FACES, 'K', defaults.DEFAULT_K_MERGE, 'AUTO', defaults.DEFAULT_AUTO_MERGE, 'K_FROM_AUTO_STARTS', segment.K_FROM_AUTO_STARTS, 'K_SDF_MERGE', segment.K_SDF_MERGE, 'K_STARTS_ONLY', segment.K_STARTS_ONLY, 'K_STARTS', segment.K_STARTS)"
  echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-330}" python3 benchmarks/mesh_session20_q16.py round --data "$W/psb.npz" --work "$W/w" --out "$W/o" \
  --train "${TRAIN:-1421,1422}" --judge "${JUDGE:-2024,2025,2026,2027,2028,2029,2030,2031,2032,2033,2034,2035,2036,2037,2038,2039,2040,2041,2042,2043,2044,2045,2046,2047}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch 4 --judge-end "${JUDGE_END:-220}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session20_q16.py judge "$W/o/rows.jsonl" --json "$D/judged.json" ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
(cd "$W/w" && tar -cf "$D/models.tar" models)
(cd "$W/o" && tar -czf "$D/meta.tar.gz" record.jsonl train.jsonl stores.sha1.json models.sha1 round.json)
echo "done after $(( $(date +%s) - T0 )) s"; date -u
