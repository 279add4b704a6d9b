#!/bin/bash
# mesh-quality helper, session 7, device call 1: GPU tests (incl. session 6's post-final-run mends), memo hit vs
# fresh run (STARTS_OWN_BATCH 0/1), LOCO grid (per-mode epsilon, SDF_WEIGHT, delta, max_iter, extra starts, ...)
set -o pipefail
T0=$(date +%s)
python3 -c "import fast_simplification" 2>/dev/null || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry-mesh5/*.whl && export PYTHONPATH=/tmp/site; }
export PYTHONUNBUFFERED=1
C=.carry-mesh5
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git log --oneline -1; } | tee $OUT/device.txt
echo "== mesh GPU tests [$(( $(date +%s) - T0 )) s]"
timeout 130 python3 -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -6
echo "== memo hit vs fresh [$(( $(date +%s) - T0 )) s]"
IDS=$(python3 -c "print(','.join(str(n + d) for n in range(1, 400, 20) if n != 261 for d in (0, 2)))")
timeout 70 python3 benchmarks/mesh_memo_session7.py --data $C/psb.npz --stored $C/hyb.npz --device cuda --jobs 12 --meshes $IDS --json $OUT/memo.json 2>&1 | grep -v Warn
echo "== LOCO CV [$(( $(date +%s) - T0 )) s]"
timeout ${CVT:-230} python3 benchmarks/mesh_psb.py --cv --cv-grid benchmarks/results/mesh_quality_session7_cv_grid.json --data $C/psb.npz --device cuda --jobs 16 --cv-out $OUT/cv1.jsonl --markdown $OUT/cv1.md 2>&1 | grep -v Warn | tail -40
echo "done after $(( $(date +%s) - T0 )) s"
