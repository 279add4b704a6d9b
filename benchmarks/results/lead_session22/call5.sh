#!/bin/bash
# lead, session 22, call 5: the final code with the canonical order ON by default (round canon22c passed), kind
# nvidia-h100-x1, carry [".carry-lead22b"] built by `bash benchmarks/results/mesh_live8_session19_carry.sh 6be5426
# 6fae4b8 .carry-lead22b` (old = session 21's last commit, the file's listing; new = the switch on):
#   1. the default path end to end from the file (mesh_e2e_session10.py, 101.off 17k, 281.off 50k) in both arms: old
#      SHA-1s 2130b3899191 / 60c9acbd633f expected; new: the canonical order's labels (printed);
#   2. one process, the new tree: "listed" (CANONICAL_ORDER off) against "shipped" (on), interleaved, 31 / 11 rounds
#      (lead_session21/ab_canon.py); canon22c's speed condition: the shipped 17k median <= 200 ms, 50k <= 500 ms;
#   3. pytest -m gpu tests/mesh tests/batch tests/framework tests/mvs tests/flow (-n 4) on the device's copy of the tree.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/.carry-lead22b; O=/tmp/lead; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
D=$PWD/benchmarks/results/lead_session21
{ nvidia-smi --query-gpu=name,pstate,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; nproc
  git log --oneline -1 2>/dev/null; cat $C/old.rev $C/new.rev; } | tee $O/device.txt
source benchmarks/results/mesh_live8_session19_carry_env.sh
echo "== 1. default path, both arms [$(( $(date +%s) - T0 )) s]"
e2e new new
e2e old old
echo "== 2. listed vs canonical, one process [$(( $(date +%s) - T0 )) s]"
(cd /tmp/new && timeout 200 python3 $D/ab_canon.py $C/data/psb/off/101.off /tmp/281.off --device cuda \
   --rounds 31 --rounds-rest 11 --configs listed,shipped --json $O/ab_canon.json 2>&1 | grep -v Warn | tail -30)
echo "== 3. pytest -m gpu [$(( $(date +%s) - T0 )) s]"
PYTHONPATH="/tmp/xd:$PYTHONPATH" timeout 300 python3 -m pytest -m gpu tests/mesh tests/batch tests/framework tests/mvs tests/flow \
  -n 4 -q -p no:cacheprovider -o addopts="" -W ignore -rfEs > $O/gpu_tests.txt 2>&1
echo "pytest rc=$?"; grep -E "passed|^FAILED|^E  " $O/gpu_tests.txt | cut -c1-300 | head -20
echo "done after $(( $(date +%s) - T0 )) s"; date -u
tar -czf $OUT/lead.tgz -C /tmp lead
