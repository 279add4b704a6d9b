#!/bin/bash
# mesh-quality helper, session 6, device call 1: GPU tests, LOCO grid (k = auto lookahead, refine off, consensus,
# SDF in the distances, delta), consensus timing end to end
set -o pipefail
T0=$(date +%s)
python3 -c "import fast_simplification" 2>/dev/null || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry-mesh5/*.whl && export PYTHONPATH=/tmp/site; }
export PYTHONUNBUFFERED=1
C=.carry-mesh5
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git log --oneline -1; } | tee $OUT/device.txt
echo "== mesh GPU tests [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -4
timeout 60 python3 -m pytest tests/mesh/test_quality_lookahead.py tests/mesh/test_quality_autok.py tests/mesh/test_mesh_thin_parts.py -q -p no:cacheprovider -o addopts="" -rs 2>&1 | tail -4
echo "== LOCO CV [$(( $(date +%s) - T0 )) s]"
timeout ${CVT:-280} python3 benchmarks/mesh_psb.py --cv --cv-grid .carry-mesh6/grid_q6.json --data $C/psb.npz --device cuda --jobs 16 --cv-out $OUT/cv_q6.jsonl --markdown $OUT/cv_q6.md --json $OUT/cv_q6.json 2>&1 | grep -v Warn | tail -14
echo "== consensus timing [$(( $(date +%s) - T0 )) s]"
timeout 90 python3 benchmarks/mesh_quality.py timing --files $C/101.off,$C/281.off --k auto,6 --device cuda --repeat 3 --json $OUT/timing_q6.json 2>&1 | grep -v Warn
echo "done after $(( $(date +%s) - T0 )) s"
