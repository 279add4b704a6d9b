#!/bin/bash
# lead, session 19: the final GPU call on the final commit (kind nvidia-h100-x1, carry [".carry-lead19"], built by
# `bash benchmarks/results/mesh_live8_session19_carry.sh 2fa3ee2 HEAD .carry-lead19`: mesh-live8's carry layout, old = session 18's
# final commit, new = this session's final commit; no Qt).
#   1. mesh-live8's bench: the full-resolution k edits 5 6 7 4 8 through the stage cache (no Qt), old / new / old /
#      new (the last with --check: edit = fresh run at each k);
#   2. the default path end to end (mesh_e2e_session10.py, 101.off 17k, 281.off 50k) in both arms: SHA-1s
#      2130b3899191 / 60c9acbd633f expected in both (k = "auto": GAIN_POWER is not read there);
#   3. the mesh tool end to end from the file with the shipped defaults, 31 / 11 rounds (as sessions 16-18);
#   4. pytest -m gpu tests/mesh tests/batch tests/framework on the device's copy of the final tree (-n 4).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/.carry-lead19; O=$OUT/lead; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
B=$PWD/benchmarks/results/mesh_live8_session19_bench.py
{ nvidia-smi --query-gpu=name,pstate,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; nproc
  git log --oneline -1 2>/dev/null; cat $C/old.rev $C/new.rev; } | tee $O/device.txt
source benchmarks/results/mesh_live8_session19_carry_env.sh  # (the set-up and e2e ARM NAME)
bench() {  # arm, name, flags, timeout
  local t=$(date +%s)
  (cd /tmp/$1 && timeout $4 python3 $B --data $C/data --arm $1 $3 --json $O/bench_$2.json > $O/bench_$2.txt 2>&1)
  echo "bench $2 rc=$? $(( $(date +%s) - t )) s"; grep -E "^(edit|kernel|fused vs|fresh|old:|new:)" $O/bench_$2.txt | cut -c1-330
}
echo "== 1. k edits [$(( $(date +%s) - T0 )) s]"
bench old old1 "" 80
bench new new1 "" 80
bench old old2 "" 80
bench new new2 "--check" 130
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
