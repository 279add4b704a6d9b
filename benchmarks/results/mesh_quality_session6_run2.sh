#!/bin/bash
# mesh-quality helper, session 6, device call 2: GPU tests after K_FROM_AUTO_STARTS, LOCO grid (protocol k from
# the auto starts, parameters never cross-validated on 76 meshes, starts, refine off, consensus), timing of integer k
set -o pipefail
T0=$(date +%s)
python3 -c "import fast_simplification" 2>/dev/null || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry-mesh5/*.whl && export PYTHONPATH=/tmp/site; }
export PYTHONUNBUFFERED=1
C=.carry-mesh5
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee $OUT/device.txt
echo "== LOCO CV [$(( $(date +%s) - T0 )) s]"
timeout ${CVT:-300} python3 benchmarks/mesh_psb.py --cv --cv-grid .carry-mesh6/grid_q6b.json --data $C/psb.npz --device cuda --jobs 16 --cv-out $OUT/cv_q6b.jsonl --markdown $OUT/cv_q6b.md --json $OUT/cv_q6b.json 2>&1 | grep -v Warn | tail -20
echo "== timing [$(( $(date +%s) - T0 )) s]"
timeout 60 python3 benchmarks/mesh_quality.py timing --files $C/101.off,$C/281.off --k auto,6 --sets ";segment.K_FROM_AUTO_STARTS=0" --device cuda --repeat 3 --json $OUT/timing_q6b.json 2>&1 | grep -v Warn
echo "== mesh GPU tests [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -4
timeout 60 python3 -m pytest tests/mesh/test_quality_lookahead.py tests/mesh/test_quality_autok.py tests/mesh/test_mesh_thin_parts.py tests/mesh/test_mesh_segment.py -q -p no:cacheprovider -o addopts="" -rs 2>&1 | tail -4
echo "done after $(( $(date +%s) - T0 )) s"
