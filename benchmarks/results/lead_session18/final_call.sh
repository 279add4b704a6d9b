#!/bin/bash
# lead, session 18: the final GPU call on the final commit. Carry .carry-ml7 (mesh-live7's, rebuilt for this commit by
# `bash benchmarks/results/mesh_live7_session18_carry.sh 67ab891 $(git rev-parse HEAD)`: slim offscreen Qt, pymeshlab
# cp312, the fast-simplification wheel, PSB 101.off, 281.off.xz, the old/new library archives).
#   1. mesh-live7's call 5: the k edit through the tab at full resolution (x2) and at the working resolution, and the
#      default path end to end (17k, 50k), old 67ab891 against the final commit, SHA-1s;
#   2. the mesh tool end to end from the file with the shipped defaults, 31 / 11 rounds (as sessions 16-17);
#   3. pytest -m gpu tests/mesh tests/batch tests/framework tests/ux with pymeshlab, fast-simplification and Qt.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); L=$OUT/lead; mkdir -p $L
exec > >(tee $L/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; git log --oneline -1 2>/dev/null; } | tee $L/device.txt
echo "== 1. mesh-live7 call 5 [$(( $(date +%s) - T0 )) s]"
timeout ${T_C5:-200} bash benchmarks/results/mesh_live7_session18_call5.sh
C=$PWD/.carry-ml7
source $C/setup.sh > /dev/null
export PYTHONPATH="/tmp/site-fs:/tmp/pml/site${PYTHONPATH:+:$PYTHONPATH}" LD_LIBRARY_PATH="/tmp/pml/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -f /tmp/281.off ] || xz -dc $C/data/281.off.xz > /tmp/281.off
echo "== 2. e2e shipped [$(( $(date +%s) - T0 )) s]"
timeout ${T_AB:-100} python3 benchmarks/mesh_speed15_ab.py $C/data/psb/off/101.off /tmp/281.off --device cuda --rounds 31 \
  --rounds-rest 11 --configs shipped --json $L/e2e_mesh.json 2>&1 | grep -v Warn
echo "== 3. pytest -m gpu [$(( $(date +%s) - T0 )) s]"
timeout ${T_TESTS:-240} python3 -m pytest -m gpu tests/mesh tests/batch tests/framework tests/ux -q -p no:cacheprovider -o addopts="" \
  --ignore=tests/mesh/test_apsp.py --deselect tests/framework/test_live_tabs.py -W ignore -rfEs --durations=10 > $L/gpu_tests.txt 2>&1
tail -40 $L/gpu_tests.txt
echo "done after $(( $(date +%s) - T0 )) s"; date -u
