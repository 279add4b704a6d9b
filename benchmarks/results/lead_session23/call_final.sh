#!/bin/bash
# lead, session 23, the final call (kind nvidia-h100-x1, carry [".carry-lead23"]: hard links of .carry-lead22b's
# simplifiers, xdist and the two timing meshes): on the device's copy of the final tree,
#   1. the default path end to end from the file (mesh_e2e_session10.py, 101.off 17k, 281.off 50k, 5 rounds): the
#      labels' SHA-1s must still be session 22's 490d8213e468 / af791ae7f06e (this session changed no compute path);
#   2. pytest -m gpu tests/mesh tests/batch tests/framework tests/mvs tests/flow (-n 4): the new
#      test_prefetch_cancel_session23.py, and session 22's last two mends, which were not run on a GPU.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/.carry-lead23; O=/tmp/lead; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
source benchmarks/device_env.sh
device_header $O/device.txt
simplifiers $C
xz -dc $C/data/281.off.xz > /tmp/281.off
echo "== 1. default path [$(( $(date +%s) - T0 )) s]"
timeout 120 python3 benchmarks/mesh_e2e_session10.py $C/data/psb/off/101.off /tmp/281.off --rounds 5 --json $O/e2e.json \
  > $O/e2e.txt 2>&1
echo "e2e rc=$?"; grep -E "min .* median|same labels|sha" $O/e2e.txt | cut -c1-200
echo "== 2. pytest -m gpu [$(( $(date +%s) - T0 )) s]"
gpu_tests $O/gpu_tests.txt tests/mesh tests/batch tests/framework tests/mvs tests/flow
echo "done after $(( $(date +%s) - T0 )) s"; date -u
tar -czf $OUT/lead.tgz -C /tmp lead
