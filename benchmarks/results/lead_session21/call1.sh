#!/bin/bash
# lead, session 21: the GPU call on the canonical order of the simplifiers' input (kind nvidia-h100-x1, carry
# [".carry-lead21"], built by `bash benchmarks/results/mesh_live8_session19_carry.sh OLD NEW .carry-lead21`: old =
# session 20's last commit 08859cb, new = this session's; no Qt).
# (Calls 1 and 2 ran when the switch was on by default, at 1336df6 and dabc7d4. It is off since a0d9336: a rerun on
# later code needs GPULAB_MESH_CANONICAL_ORDER=1 exported for the "new" arm.)
#   1. order_check.py: k = "auto", 2 and 6 on 101.off (17k) and 281.off (50k) as listed and in 2 relistings, both arms;
#   2. the default path end to end (mesh_e2e_session10.py) in both arms: old 2130b3899191 / 60c9acbd633f expected,
#      new: whatever the canonical order gives (printed);
#   3. in the new arm, one process: "listed" (CANONICAL_ORDER off) against "shipped", 31 / 11 rounds;
#   4. pytest -m gpu tests/mesh tests/batch tests/framework on the device's copy of the tree (-n 4).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/${CARRY:-.carry-lead21}; O=/tmp/lead; mkdir -p $O  # (call 2: CARRY=.carry-lead21b)
exec > >(tee $O/log.txt) 2>&1
D=$PWD/benchmarks/results/lead_session21
{ nvidia-smi --query-gpu=name,pstate,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; nproc
  git log --oneline -1 2>/dev/null; cat $C/old.rev $C/new.rev; } | tee $O/device.txt
source benchmarks/results/mesh_live8_session19_carry_env.sh  # (the set-up and e2e ARM NAME)
echo "== 1. order check [$(( $(date +%s) - T0 )) s]"
for a in new old; do
  (cd /tmp/$a && timeout 120 python3 $D/order_check.py $C/data/psb/off/101.off /tmp/281.off --device cuda --draws 2 \
     --json $O/order_$a.json 2>&1 | grep -v Warn | cut -c1-300); echo "order $a rc=$?"
done
echo "== 2. default path, both arms [$(( $(date +%s) - T0 )) s]"
e2e new new
e2e old old
echo "== 3. listed vs canonical, one process [$(( $(date +%s) - T0 )) s]"
(cd /tmp/new && timeout 150 python3 $D/ab_canon.py $C/data/psb/off/101.off /tmp/281.off --device cuda \
   --rounds 31 --rounds-rest 11 --configs listed,shipped --json $O/ab_canon.json 2>&1 | grep -v Warn | tail -40)
echo "== 4. pytest -m gpu [$(( $(date +%s) - T0 )) s]"
PYTHONPATH="/tmp/xd:$PYTHONPATH" timeout 200 python3 -m pytest -m gpu tests/mesh tests/batch tests/framework -n 4 -q \
  -p no:cacheprovider -o addopts="" -W ignore -rfEs > $O/gpu_tests.txt 2>&1
echo "pytest rc=$?"; tail -30 $O/gpu_tests.txt
echo "done after $(( $(date +%s) - T0 )) s"; date -u
tar -czf $OUT/lead.tgz -C /tmp lead
