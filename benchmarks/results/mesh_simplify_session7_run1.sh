#!/bin/bash
# mesh-simplify session 7, device call 1: LOCO of the simplifier candidates (stored working meshes made on the
# dev CPU), end to end speed (fast: the device has no pymeshlab), the host's speed on the fast step, GPU seg tests
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=.carry-msimp
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uptime; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
echo "== LOCO CV [$(( $(date +%s) - T0 )) s]"
timeout 200 python3 benchmarks/mesh_psb.py --cv --cv-grid $C/grid.json --data $C/psb.npz --device cuda --jobs 16 --cv-out $OUT/cv.jsonl --markdown $OUT/cv.md 2>&1 | grep -v Warn | tail -16
echo "== speed [$(( $(date +%s) - T0 )) s]"
timeout 60 python3 benchmarks/mesh_simplify_session7_speed.py $C/101.off,$C/281.off --device cuda --repeat 3 --json $OUT/speed_h100.json 2>&1 | grep speed
echo "== simplify step, this host's CPU [$(( $(date +%s) - T0 )) s]"
timeout 30 python3 benchmarks/mesh_simplify_session7_time.py $C/101.off $C/281.off --cands fast --repeat 5 --json $OUT/time_fast_host.json
echo "== 2-core 50k [$(( $(date +%s) - T0 )) s]"
OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 NUMBA_NUM_THREADS=2 timeout 40 taskset -c 0,1 python3 benchmarks/mesh_simplify_session7_speed.py $C/281.off --device cpu --repeat 2 --json $OUT/speed_cpu2.json 2>&1 | grep speed
echo "== gpu tests (segmentation) [$(( $(date +%s) - T0 )) s]"
timeout 60 python3 -m pytest -m gpu tests/mesh/test_mesh_segment.py tests/mesh/test_mesh_thin_parts.py tests/mesh/test_mesh_device.py -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -3
echo "done after $(( $(date +%s) - T0 )) s"; date -u
