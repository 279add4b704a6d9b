#!/bin/bash
# lead, session 20: the GPU call on the shipped library (call 1: round q15's; call 2: round q16's) (kind nvidia-h100-x1, carry [".carry-lead20"], built by
# `bash benchmarks/results/mesh_live8_session19_carry.sh 81a7844 NEW .carry-lead20`: old = session 19's final commit,
# new = this session's; no Qt).
#   1. benchmarks/results/lead_session20/kedit_bench.py: the k edits through the stage cache (full resolution and the
#      working resolution, each edit against a fresh run) and an integer k (6) end to end from the file, 17k / 50k;
#      old / new / new / old;
#   2. the default path end to end (mesh_e2e_session10.py, 101.off 17k, 281.off 50k) in both arms: SHA-1s
#      2130b3899191 / 60c9acbd633f expected in both (k = "auto" does not read K_STARTS_ONLY);
#   3. the mesh tool end to end from the file with the shipped defaults, 31 / 11 rounds (as sessions 16-19);
#   4. pytest -m gpu tests/mesh tests/batch tests/framework on the device's copy of the tree (-n 4).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/.carry-lead20; O=/tmp/lead; mkdir -p $O  # (packed into $OUT/lead.tgz at the end: the tool brings back 8 files)
exec > >(tee $O/log.txt) 2>&1
B=$PWD/benchmarks/results/lead_session20/kedit_bench.py
{ nvidia-smi --query-gpu=name,pstate,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; nproc
  git log --oneline -1 2>/dev/null; cat $C/old.rev $C/new.rev; } | tee $O/device.txt
source benchmarks/results/mesh_live8_session19_carry_env.sh  # (the set-up and e2e ARM NAME)
kb() {  # arm, name
  local t=$(date +%s)
  (cd /tmp/$1 && timeout 150 python3 $B --data $C/data --arm $1 --mesh50 /tmp/281.off --rounds 7 --json $O/kb_$2.json > $O/kb_$2.txt 2>&1)
  echo "kedit_bench $2 rc=$? $(( $(date +%s) - t )) s"; grep -E "edits|e2e" $O/kb_$2.txt | cut -c1-330
}
echo "== 1. k edits and integer-k end to end [$(( $(date +%s) - T0 )) s]"
kb old old1
kb new new1
kb new new2
kb old old2
echo "== 2. default path, both arms [$(( $(date +%s) - T0 )) s]"
e2e new new
e2e old old
echo "== 3. e2e shipped [$(( $(date +%s) - T0 )) s]"
(cd /tmp/new && timeout 100 python3 benchmarks/mesh_speed15_ab.py $C/data/psb/off/101.off /tmp/281.off --device cuda \
   --rounds 31 --rounds-rest 11 --configs shipped --json $O/e2e_mesh.json 2>&1 | grep -v Warn)
echo "== 4. pytest -m gpu [$(( $(date +%s) - T0 )) s]"
PYTHONPATH="/tmp/xd:$PYTHONPATH" timeout 200 python3 -m pytest -m gpu tests/mesh tests/batch tests/framework -n 4 -q \
  -p no:cacheprovider -o addopts="" -W ignore -rfEs > $O/gpu_tests.txt 2>&1
echo "pytest rc=$?"; tail -30 $O/gpu_tests.txt
echo "done after $(( $(date +%s) - T0 )) s"; date -u
tar -czf $OUT/lead.tgz -C /tmp lead
