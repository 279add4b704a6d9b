#!/bin/bash
# mesh-live8, session 19, call 1 (kind nvidia-h100-x1, carry [".carry-ml8"]): old (the parent of the change) against
# new, alternating; build the carry first (benchmarks/results/mesh_live8_session19_carry.sh OLD NEW).
# 1. benchmarks/results/mesh_live8_session19_bench.py in each arm (the full-resolution k edits 5 6 7 4 8 through the
#    stage cache, no Qt): old, new (+ the kernel alone), old, new (+ the checks: fused vs cuBLAS argmins, edit = fresh);
# 2. the default path end to end (benchmarks/mesh_e2e_session10.py, 101.off 17k and 281.off 50k): the SHA-1s
#    2130b3899191 / 60c9acbd633f in both arms;
# 3. pytest -m gpu tests/mesh on new.
export PYTHONUNBUFFERED=1
C=$PWD/.carry-ml8; O=$OUT/ml8; mkdir -p $O
B=$PWD/benchmarks/results/mesh_live8_session19_bench.py
{ nvidia-smi -L; nvidia-smi --query-gpu=name,pstate,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; nproc
  cat $C/old.rev $C/new.rev; } | tee $O/device.txt
source benchmarks/results/mesh_live8_session19_carry_env.sh  # (the set-up and e2e ARM NAME)
bench() {  # arm, name, flags, timeout
  local t=$(date +%s)
  (cd /tmp/$1 && timeout $4 python3 $B --data $C/data --arm $1 $3 --json $O/bench_$2.json > $O/bench_$2.txt 2>&1)
  echo "bench $2 rc=$? $(( $(date +%s) - t )) s"; grep -E "^(edit|kernel|fused vs|fresh|old:|new:)" $O/bench_$2.txt | cut -c1-330
}
bench old old1 "" 80
bench new new1 "--kernel" 100
bench old old2 "" 80
bench new new2 "--check" 130
e2e new new
e2e old old
t=$(date +%s)
(cd /tmp/new && PYTHONPATH="/tmp/xd:$PYTHONPATH" timeout 170 python3 -m pytest -m gpu tests/mesh -n 4 -q -p no:cacheprovider \
   -rs > $O/gpu_tests.txt 2>&1)
echo "pytest rc=$? $(( $(date +%s) - t )) s"; tail -4 $O/gpu_tests.txt
date -u | tee -a $O/device.txt
