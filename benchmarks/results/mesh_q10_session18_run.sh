#!/bin/bash
# mesh-q10, session 18, the ONE device call (H100): the pre-registered round of benchmarks/results/mesh_q10_session18.md
# (candidate Q = recipe S + the 22nd column log_cut_over_thickness, against C = recipe S as shipped, both retrained
# per fold on the records of s1421-1422 at 3,500 faces; leave one category out; the real pipeline on the judging draws
# s1800-s1815, >= 12 complete): stores -> record -> train -> confirm (batches of 4 draws) -> judge (1)-(3), (5); then
# (4) the 17k end-to-end timing, one process, old loop against new.
# carry (.carry-mq10, made by benchmarks/mesh_round_carry.sh, plus): lib.tar.xz = git archive of the rule's commit
# (gpu_kernels/mesh and the round's scripts), unpacked over the device copy so that other helpers' uncommitted edits do
# not leak in; lib.commit; old_numba_merge.py = the 21-column loop as shipped (git show 4ace420:...). Writes $OUT/mq10/.
# LOCAL=1 IDS=21,101 TRAIN=9901 JUDGE=9903,9904 DEV=cpu JOBS=2: a development-CPU smoke test on throw-away seeds.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=$PWD/.carry-mq10; W=${W:-/tmp/mq10}; D=$OUT/mq10; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
if [ -f "$M/lib.tar.xz" ] && [ -z "$NO_LIB" ]; then tar -xJf "$M/lib.tar.xz" && echo "the rule commit's library unpacked: $(cat "$M/lib.commit")"; fi
source benchmarks/mesh_round_env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults; print(len(learned.FEATURES), learned.FEATURES[-1], learned.POLICY, 'WORKING_FACES', defaults.WORKING_FACES, 'K', defaults.DEFAULT_K_MERGE, 'AUTO', defaults.DEFAULT_AUTO_MERGE)"
  echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-320}" python3 benchmarks/mesh_session18_q10.py round --data "$W/psb.npz" --work "$W/w" --out "$W/o" \
  --train "${TRAIN:-1421,1422}" --judge "${JUDGE:-1800,1801,1802,1803,1804,1805,1806,1807,1808,1809,1810,1811,1812,1813,1814,1815}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch 4 --judge-end "${JUDGE_END:-215}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session18_q10.py judge "$W/o/rows.jsonl" --json "$D/judged.json" ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
(cd "$W/w" && tar -cf "$D/models.tar" models)
(cd "$W/o" && tar -czf "$D/meta.tar.gz" record.jsonl train.jsonl stores.sha1.json models.sha1 round.json)
echo "== timing (4) [$(( $(date +%s) - T0 )) s]"
timeout "${T_TIME:-70}" python3 benchmarks/mesh_session18_q10.py timing "${MESH17:-$M/101.off}" --old "$M/old_numba_merge.py" \
  --model "$W/w/models/Q/ALL.npz" --device "${DEV:-cuda}" --rounds "${ROUNDS:-41}" --rounds-k "${ROUNDS_K:-11}" --k 6 \
  --json "$D/timing.json" 2>&1 | grep -v Warn
echo "done after $(( $(date +%s) - T0 )) s"; date -u
