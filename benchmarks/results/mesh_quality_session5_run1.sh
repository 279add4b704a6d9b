#!/bin/bash
# mesh-quality helper, session 5, device call 1: LOCO of k = auto's area-weighted reference (autok.py), GPU tests
set -o pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry-mesh5/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
C=.carry-mesh5
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee $OUT/device.txt
echo "== LOCO CV [$(( $(date +%s) - T0 )) s]"
timeout ${CVT:-200} python3 benchmarks/mesh_psb.py --cv --cv-grid $C/grid_q5.json --data $C/psb.npz --device cuda --jobs 16 --cv-out $OUT/cv_q5.jsonl --markdown $OUT/cv_q5.md --json $OUT/cv_q5.json 2>&1 | grep -v Warn | tail -12
echo "== mesh GPU tests [$(( $(date +%s) - T0 )) s]"
timeout 100 python3 -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -3
timeout 40 python3 -m pytest tests/mesh/test_quality_autok.py tests/mesh/test_mesh_thin_parts.py -q -p no:cacheprovider -o addopts="" -rs 2>&1 | tail -4
echo "done after $(( $(date +%s) - T0 )) s"
