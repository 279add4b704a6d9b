#!/bin/bash
# lead, session 24, call 2 (kind nvidia-h200, carry [".carry-lead23"]: session 23's simplifiers, xdist and the two
# timing meshes): on the device's copy of the final library (the hull switches, off, added to the compiled merge loop),
#   1. the default path end to end from the file (mesh_e2e_session10.py, 101.off 17k, 281.off 50k, 31 rounds: the
#      first rounds are cold, the median is warm): the labels' SHA-1s must still be 490d8213e468 / af791ae7f06e, and
#      the medians are the speed figures on the issue's own hardware (H200; sessions 15-23 ran on H100s);
#   2. pytest -m gpu tests/mesh tests/framework tests/batch (-n 4): the merge loop's signature changed.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/.carry-lead23; O=/tmp/lead; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
source benchmarks/device_env.sh
device_header $O/device.txt
simplifiers $C
xz -dc $C/data/281.off.xz > /tmp/281.off
echo "== 1. default path [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 benchmarks/mesh_e2e_session10.py $C/data/psb/off/101.off /tmp/281.off --rounds 31 --json $O/e2e.json \
  > $O/e2e.txt 2>&1
echo "e2e rc=$?"; grep -E "min .* median|same labels" $O/e2e.txt | cut -c1-160
echo "== 2. pytest -m gpu [$(( $(date +%s) - T0 )) s]"
T_TESTS=400 gpu_tests $O/gpu_tests.txt tests/mesh tests/framework tests/batch
echo "done after $(( $(date +%s) - T0 )) s"; date -u
tar -czf $OUT/lead.tgz -C /tmp lead
