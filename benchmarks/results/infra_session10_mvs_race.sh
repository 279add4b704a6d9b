#!/bin/bash
# infra, session 10: the MVS two-thread capture race (cudaErrorStreamCaptureUnsupported).
# "fix" = this tree; "old" = the same tree with gpu_kernels/mvs from b6b0da7 (session 9's final code).
export PYTHONUNBUFFERED=1
L=$OUT/infra; mkdir -p $L
nvidia-smi -L | tee $L/log.txt; date -u | tee -a $L/log.txt
rm -rf /tmp/old && mkdir -p /tmp/old && cp -a . /tmp/old/ && rm -rf /tmp/old/gpu_kernels/mvs \
  && tar -xzf .carry-infra/mvs_head.tar.gz -C /tmp/old
P="python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts= -p infra_session10_repeat"
export PYTHONPATH=$PWD/benchmarks/results
run() {  # label, side, repeat, timeout, tests...
  local f=$L/$1-$2.txt side=$2 n=$3 t=$4; shift 4
  local d=$PWD; [ $side = old ] && d=/tmp/old
  echo "== $side REPEAT=$n $*"
  (cd $d && REPEAT=$n timeout $t $P "$@" > $f 2>&1; echo "rc $?")
  grep -E "passed|failed|rror" $f | grep -v "^E  " | tail -4
}
S10=tests/mvs/test_mvs_review_s10_gpu.py
B2B=tests/mvs/test_mvs_review_s8_gpu.py::test_back_to_back_runs_on_two_threads_give_a_fresh_runs_result
{
run s10 fix 1 40 $S10
run s10 old 1 40 $S10
grep -m4 "cudaError\|^E.*rror" $L/s10-old.txt | cut -c1-200
run b2b fix 20 ${T_FIX:-70} $B2B
run b2b old ${N_OLD:-10} ${T_OLD:-50} $B2B
grep -m2 -A40 "Traceback" $L/b2b-old.txt | grep -E "File|Error" | cut -c1-200 | head -30
run mvs fix 1 ${T_ALL:-75} tests/mvs --deselect $B2B
date -u
} | tee -a $L/log.txt
