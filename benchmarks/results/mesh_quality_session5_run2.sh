#!/bin/bash
# mesh-quality helper, session 5, device call 2: consensus=True (the option) with the new k = auto reference
set -o pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .carry-mesh5/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
C=.carry-mesh5
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git log --oneline -1; } | tee $OUT/device.txt
timeout 150 python3 benchmarks/mesh_psb.py --cv --cv-grid $C/grid_q5b.json --data $C/psb.npz --device cuda --jobs 16 --cv-out $OUT/cv_q5b.jsonl --markdown $OUT/cv_q5b.md 2>&1 | grep -v Warn | tail -6
echo "done after $(( $(date +%s) - T0 )) s"
