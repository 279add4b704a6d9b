#!/bin/bash
# lead, session 22, call 3 (kind nvidia-h100-x1, carry [".carry-lead22"], built by
# `bash benchmarks/results/mesh_live8_session19_carry.sh 6be5426 990c761 .carry-lead22`: old = session 21's last
# commit, new = this session's prefetch commit; no Qt):
#   1. the default path end to end from the file (mesh_e2e_session10.py, 101.off 17k, 281.off 50k) in both arms:
#      SHA-1s 2130b3899191 / 60c9acbd633f expected in both (nothing on the default path changed);
#   2. the first k edit after k = "auto" through the tool's live path, the prefetch off / on (kedit.py, 3 pairs);
#   3. pytest -m gpu tests/mesh tests/batch tests/framework -n 4 on the device's copy of the tree.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/.carry-lead22; O=/tmp/lead; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,pstate,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; nproc
  git log --oneline -1 2>/dev/null; cat $C/old.rev $C/new.rev; } | tee $O/device.txt
source benchmarks/results/mesh_live8_session19_carry_env.sh  # (the set-up and e2e ARM NAME)
echo "== 1. default path, both arms [$(( $(date +%s) - T0 )) s]"
e2e new new
e2e old old
echo "== 2. first k edit after k = auto, prefetch off / on [$(( $(date +%s) - T0 )) s]"
for m in $C/data/psb/off/101.off /tmp/281.off; do
  timeout 120 python3 benchmarks/results/lead_session22/kedit.py $m cuda --pairs 3 2>&1 | grep -v Warn | tail -6
done
echo "== 3. pytest -m gpu [$(( $(date +%s) - T0 )) s]"
PYTHONPATH="/tmp/xd:$PYTHONPATH" timeout 200 python3 -m pytest -m gpu tests/mesh tests/batch tests/framework -n 4 -q \
  -p no:cacheprovider -o addopts="" -W ignore -rfEs > $O/gpu_tests.txt 2>&1
echo "pytest rc=$?"; grep -E "passed|^FAILED|^E  |prefetch" $O/gpu_tests.txt | cut -c1-300 | head -20
echo "done after $(( $(date +%s) - T0 )) s"; date -u
tar -czf $OUT/lead.tgz -C /tmp lead
