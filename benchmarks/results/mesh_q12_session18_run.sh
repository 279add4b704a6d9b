#!/bin/bash
# mesh-q12, session 18, the ONE device call (H100): the pre-registered round of benchmarks/results/mesh_q12_session18.md
# (control C = both integer-k switches as shipped; A = segment.K_FROM_AUTO_STARTS False; T = segment.K_SDF_MERGE None;
# each arm its own switch set: recipe S retrained per fold on ITS OWN records of s1421-1422 at 3,500 faces; leave one
# category out; the real pipeline on the judging draws s1856-s1871 in batches of 4 while the judging end is not
# reached, one prepare_mesh per arm per mesh-draw, >= 12 complete): stores -> record (three switch sets) -> train ->
# confirm -> judge (1)-(3), (5). No timing part: (4) is report-only (neither switch is read at k = "auto").
# carry (.carry-mq12: mesh_round_carry.sh's files copied from .carry-mq10 less 101.off, plus): lib.tar.xz = git
# archive of the rule's commit (gpu_kernels/mesh, app/io, the top-level benchmarks/*.py, mesh_round_env.sh),
# unpacked over the device copy so that other helpers' uncommitted edits do not leak in; lib.commit.
# LOCAL=1 IDS=21,101 TRAIN=9901 JUDGE=9903,9904 DEV=cpu JOBS=2: a development-CPU smoke test on throw-away seeds.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=${M:-$PWD/.carry-mq12}; W=${W:-/tmp/mq12}; D=$OUT/mq12; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
if [ -f "$M/lib.tar.xz" ] && [ -z "$NO_LIB" ]; then tar -xJf "$M/lib.tar.xz" && echo "the rule commit's library unpacked: $(cat "$M/lib.commit")"; fi
source benchmarks/mesh_round_env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults, segment; print(len(learned.FEATURES), learned.POLICY, 'WORKING_FACES', defaults.WORKING_FACES, 'K', defaults.DEFAULT_K_MERGE, 'AUTO', defaults.DEFAULT_AUTO_MERGE, 'K_FROM_AUTO_STARTS', segment.K_FROM_AUTO_STARTS, 'K_SDF_MERGE', segment.K_SDF_MERGE)"
  echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-380}" python3 benchmarks/mesh_session18_q12.py round --data "$W/psb.npz" --work "$W/w" --out "$W/o" \
  --train "${TRAIN:-1421,1422}" --judge "${JUDGE:-1856,1857,1858,1859,1860,1861,1862,1863,1864,1865,1866,1867,1868,1869,1870,1871}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch 4 --judge-end "${JUDGE_END:-230}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session18_q12.py judge "$W/o/rows.jsonl" --json "$D/judged.json" ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
(cd "$W/w" && tar -cf "$D/models.tar" models)
(cd "$W/o" && tar -czf "$D/meta.tar.gz" record.jsonl train.jsonl stores.sha1.json models.sha1 round.json)
echo "done after $(( $(date +%s) - T0 )) s"; date -u
