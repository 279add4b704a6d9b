#!/bin/bash
# mesh-q11, session 18, the ONE device call (H100): the pre-registered round of benchmarks/results/mesh_q11_session18.md
# (candidate X = segment.CREASE_STARTS on: the starts' boundaries re-cut along the concave creases, against C = the
# switch off; both recipe S, each retrained per fold on ITS OWN records of s1421-1422 at 3,500 faces; leave one
# category out; the real pipeline on the judging draws s1840-s1855, one prepare_mesh per arm per mesh-draw, >= 12
# complete): stores -> record (both switch sets) -> train -> confirm (batches of 4 draws) -> judge (1)-(3), (5); then
# (4) the 17k and 50k end-to-end timing, one process, switch off against on.
# carry (.carry-mq11: mesh_round_carry.sh's files copied from .carry-mq10, plus): lib.tar.xz = git archive of the
# rule's commit (gpu_kernels/mesh, app/io and the round's scripts), unpacked over the device copy so that other
# helpers' uncommitted edits do not leak in; lib.commit; 281.off.xz (PSB 281, 50,542 faces, from ../shared).
# LOCAL=1 IDS=21,101 TRAIN=9901 JUDGE=9903,9904 DEV=cpu JOBS=2: a development-CPU smoke test on throw-away seeds.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=${M:-$PWD/.carry-mq11}; W=${W:-/tmp/mq11}; D=$OUT/mq11; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
if [ -f "$M/lib.tar.xz" ] && [ -z "$NO_LIB" ]; then tar -xJf "$M/lib.tar.xz" && echo "the rule commit's library unpacked: $(cat "$M/lib.commit")"; fi
source benchmarks/mesh_round_env.sh
xz -dc "$M/281.off.xz" > "$W/281.off"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults, segment; print(len(learned.FEATURES), learned.POLICY, 'WORKING_FACES', defaults.WORKING_FACES, 'K', defaults.DEFAULT_K_MERGE, 'AUTO', defaults.DEFAULT_AUTO_MERGE, 'CREASE_STARTS', segment.CREASE_STARTS)"
  sha1sum "$W/281.off"; echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-400}" python3 benchmarks/mesh_session18_q11.py round --data "$W/psb.npz" --work "$W/w" --out "$W/o" \
  --train "${TRAIN:-1421,1422}" --judge "${JUDGE:-1840,1841,1842,1843,1844,1845,1846,1847,1848,1849,1850,1851,1852,1853,1854,1855}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch 4 --judge-end "${JUDGE_END:-290}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session18_q11.py judge "$W/o/rows.jsonl" --json "$D/judged.json" ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
(cd "$W/w" && tar -cf "$D/models.tar" models)
(cd "$W/o" && tar -czf "$D/meta.tar.gz" record.jsonl train.jsonl stores.sha1.json models.sha1 round.json)
echo "== timing (4) [$(( $(date +%s) - T0 )) s]"
timeout "${T_TIME:-90}" python3 benchmarks/mesh_session18_q11.py timing "$M/101.off" "$W/281.off" --device "${DEV:-cuda}" \
  --rounds "${ROUNDS:-41}" --rounds-50k "${ROUNDS_50K:-21}" --json "$D/timing.json" 2>&1 | grep -v Warn
echo "done after $(( $(date +%s) - T0 )) s"; date -u
