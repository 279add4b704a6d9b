#!/bin/bash
# the lead, session 22, round canon22 (ONE device call, H100): the pre-registered round of
# benchmarks/results/mesh_canon22_session22.md: control C (the working mesh from the file's listing; draws = seeded
# shuffled listings) against K (simplify.CANONICAL_ORDER on; draws = salts of the canonical order), every model of
# each arm trained on its own working meshes: (a) k = "auto" folds, session 11's recipe (c2eb5bd's record-auto + train
# in its own tree, old.tar.xz) on each arm's stores of s1107-1109 at 4,000 faces; (b) the round: recipe S's integer-k
# folds on each arm's records of s1421-1422 at 3,500 faces, leave one category out; the real pipeline on the judging
# draws s2048-s2071 in order, batches of 4 while the judging end is not reached, one prepare_mesh per arm per
# mesh-draw, each arm's k = "auto" under its own held-out fold; then the judge. Models are kept.
# carry (.carry-mc22): mesh_round_carry.sh's files (copied from .carry-mq16; carry.sha1), old.tar.xz (copied from
# .carry-ma19: git archive of c2eb5bd), lib.tar.xz = git archive of the rule's commit (gpu_kernels/mesh, app/io, the
# top-level benchmarks/*.py, mesh_round_env.sh), unpacked over the device copy; lib.commit.
# LOCAL=1 IDS=21,101 TRAIN=9901 AUTO_DRAWS=9902 JUDGE=9903,9904 DEV=cpu JOBS=1: a development-CPU smoke test on
# throw-away seeds (the auto folds from 2 meshes, so every figure is meaningless).
# CAND=H (round canon22b, benchmarks/results/mesh_canon22b_session22.md): the candidate H (the hashed order alone)
# instead of K, with JUDGE / JUDGE_END / D set by its call; every other step the same.
# CAND=Z (round canon22c, benchmarks/results/mesh_canon22c_session22.md): no training at all: both arms take round
# canon22's C models (the carry's ready.tar.xz = call 1's models.tar, xz: models/C, models_auto/C); no k = auto folds step.
set -o pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=${M:-$PWD/.carry-mc22}; W=${W:-/tmp/mc22}; CAND=${CAND:-K}; D=$OUT/mc22${CAND/K/}; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
if [ -f "$M/lib.tar.xz" ] && [ -z "$NO_LIB" ]; then tar -xJf "$M/lib.tar.xz" && echo "the rule commit's library unpacked: $(cat "$M/lib.commit")"; fi
source benchmarks/mesh_round_env.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; date -u; nproc
  python3 -c "import numpy, scipy, numba, sklearn; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, 'sklearn', sklearn.__version__)"
  python3 -c "from gpu_kernels.mesh import learned, defaults, segment, simplify; print(len(learned.FEATURES), learned.POLICY, 'GAIN_POWER', learned.GAIN_POWER, 'AUTO_POLICY', learned.AUTO_POLICY, 'WORKING_FACES', defaults.WORKING_FACES, 'K_STARTS_ONLY', segment.K_STARTS_ONLY, 'K_STARTS', segment.K_STARTS, 'CANONICAL_ORDER', simplify.CANONICAL_ORDER, 'CANONICAL_SALT', simplify.CANONICAL_SALT)"
  echo "psb ok $MESH_ROUND_PSB_OK"; } 2>&1 | tee "$D/device.txt"
if [ "$CAND" = Z ]; then
  mkdir -p "$W/ready" && tar -xf "${READY_TAR:-$M/ready.tar.xz}" -C "$W/ready" && (cd "$W/ready" && sha1sum models/C/*.npz models_auto/C/*.npz) > "$D/ready.sha1"
  READY="--ready $W/ready"; grep ALL.npz "$D/ready.sha1"
else
echo "== k = auto folds [$(( $(date +%s) - T0 )) s]"
mkdir -p "$W/old" && tar -xJf "$M/old.tar.xz" -C "$W/old"
timeout "${T_FOLDS:-200}" python3 benchmarks/mesh_session22_canon.py auto-folds --cand "$CAND" --old "$W/old" --data "$W/psb.npz" \
  --work "$W/w" --draws "${AUTO_DRAWS:-1107,1108,1109}" --device "${DEV:-cuda}" --jobs "${JOBS:-16}" \
  ${IDS:+--ids $IDS --n-meshes 2} 2>&1 | grep -v Warn
fi
echo "== round [$(( $(date +%s) - T0 )) s]"
timeout "${T_ROUND:-330}" python3 benchmarks/mesh_session22_canon.py round --cand "$CAND" --data "$W/psb.npz" --work "$W/w" --out "$W/o" \
  --train "${TRAIN:-1421,1422}" --judge "${JUDGE:-2048,2049,2050,2051,2052,2053,2054,2055,2056,2057,2058,2059,2060,2061,2062,2063,2064,2065,2066,2067,2068,2069,2070,2071}" \
  --jobs "${JOBS:-16}" --device "${DEV:-cuda}" --batch 4 --judge-end "${JUDGE_END:-280}" ${IDS:+--ids $IDS} $READY 2>&1 | grep -v Warn
echo "== judge [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_session22_canon.py judge --cand "$CAND" "$W/o/rows.jsonl" --json "$D/judged.json" ${IDS:+--n-meshes 2 --min-draws 1} 2>&1 | grep -v Warn
gzip -c "$W/o/rows.jsonl" > "$D/rows.jsonl.gz"
if [ "$CAND" = Z ]; then
  (cd "$W" && tar -czf "$D/meta.tar.gz" o/stores.sha1.json o/models.sha1 o/round.json)
else
(cd "$W/w" && tar -cf "$D/models.tar" models models_auto)
(cd "$W" && tar -czf "$D/meta.tar.gz" --exclude=rec_auto o/record.jsonl o/train.jsonl o/stores.sha1.json o/models.sha1 o/round.json \
  w/auto_folds.json w/auto_folds_C "w/auto_folds_$CAND")
fi
echo "done after $(( $(date +%s) - T0 )) s"; date -u
