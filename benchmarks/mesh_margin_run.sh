#!/bin/bash
# A pre-registered margin round of issue 22 in ONE device call (session 25: the one runner that the rounds' per-round
# copies of sessions 23-24, e.g. results/mesh_hull24c_session24_run.sh, were):
#   bash benchmarks/mesh_margin_run.sh SCRIPT NAME
# SCRIPT: the round's thin script (benchmarks/mesh_session*_*.py, mesh_round.margin_main: `round` and `judge`);
# NAME: the output folder under $OUT. Leave one category out, every fold trained on its own switch set's records of
# TRAIN (default s1421-1422), the real pipeline on the judging draws JUDGE in order, batches of 4 while the judging end
# (JUDGE_END, default 440 s) is not reached, k = "auto" under the shipped model; then the judge. carry (.carry-mm23):
# mesh_round_carry.sh's files. LOCAL=1 IDS=21,101 TRAIN=9901 JUDGE=9903,9904 DEV=cpu JOBS=1: a development-CPU smoke
# test on throw-away seeds. TRAIN= (set and empty, session 30): no records and no training, every arm takes its
# ready folds (mesh_round.Arm.folds); BATCH: judging draws per batch (default 4).
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
SCRIPT=${1:?usage: bash benchmarks/mesh_margin_run.sh SCRIPT NAME}; NAME=${2:?NAME}
T0=$(date +%s); M=${M:-$PWD/.carry-mm23}; W=${W:-/tmp/$NAME}; D=${OUT:-/tmp/out}/$NAME; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
source benchmarks/mesh_round_env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u; nproc --all
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults, segment, simplify; print(len(learned.FEATURES), 'columns', learned.n_columns(), 'HULL_FEATURE', learned.HULL_FEATURE, learned.HULL_POINTS, learned.POLICY, 'GAIN_POWER', learned.GAIN_POWER, 'WORKING_FACES', defaults.WORKING_FACES, 'K_STARTS', segment.K_STARTS, 'CANONICAL_ORDER', simplify.CANONICAL_ORDER)"
  sha1sum "$SCRIPT" benchmarks/mesh_round.py gpu_kernels/mesh/learned.py gpu_kernels/mesh/_numba_merge.py
  echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
DATA="$W/psb.npz"
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-520}" python3 "$SCRIPT" round --data "$DATA" --work "$W/w" --out "$W/o" \
  --train "${TRAIN-1421,1422}" --judge "${JUDGE:?JUDGE: the judging draws}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch "${BATCH:-4}" --judge-end "${JUDGE_END:-440}" ${IDS:+--ids $IDS} 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 "$SCRIPT" judge "$W/o/rows.jsonl" --json "$D/judged.json" ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
# (ready folds, TRAIN= empty: the models are the carried files, named in meta's models.sha1; not archived again)
if [ -n "${TRAIN-1421,1422}" ]; then (cd "$W/w" && tar -cf - models | xz -9 > "$D/models.tar.xz"); fi
(cd "$W" && tar -czf "$D/meta.tar.gz" o/record.jsonl o/train.jsonl o/stores.sha1.json o/models.sha1 o/round.json)
echo "done after $(( $(date +%s) - T0 )) s"; date -u
