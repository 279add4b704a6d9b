#!/bin/bash
# lead, session 22, call 4: the final code (the device's copy of the tree; kind nvidia-h100-x1, carry
# [".carry-lead22"] for the default path's simplifiers and pytest-xdist):
#   1. the default path end to end from the file (mesh_e2e_session10.py, 101.off 17k, 281.off 50k): SHA-1s
#      2130b3899191 / 60c9acbd633f expected;
#   2. pytest -m gpu on the packages the session's code touched: tests/mesh tests/batch tests/framework (the prefetch,
#      the stages) and tests/mvs tests/flow (the yes/no switches now read by gpu_kernels.env.flag), -n 4.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/.carry-lead22; O=/tmp/lead; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,pstate,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; nproc; } | tee $O/device.txt
source benchmarks/results/mesh_live8_session19_carry_env.sh
echo "== 1. default path [$(( $(date +%s) - T0 )) s]"
timeout 90 python3 benchmarks/mesh_e2e_session10.py $C/data/psb/off/101.off /tmp/281.off --rounds 5 --json $O/e2e.json 2>&1 \
  | grep -E "min .* median|same labels|sha" | cut -c1-200
echo "== 2. pytest -m gpu [$(( $(date +%s) - T0 )) s]"
PYTHONPATH="/tmp/xd:$PYTHONPATH" timeout 400 python3 -m pytest -m gpu tests/mesh tests/batch tests/framework tests/mvs tests/flow \
  -n 4 -q -p no:cacheprovider -o addopts="" -W ignore -rfEs > $O/gpu_tests.txt 2>&1
echo "pytest rc=$?"; grep -E "passed|^FAILED|^E  " $O/gpu_tests.txt | cut -c1-300 | head -20
echo "done after $(( $(date +%s) - T0 )) s"; date -u
tar -czf $OUT/lead.tgz -C /tmp lead
