#!/bin/bash
# infra, session 10 (no carry; <= 60 s): session 8's two-thread MVS test in FRESH processes (each
# process compiles/loads the kernels during the race, as the 2-of-8 failures of session 9 did),
# with this session's fix (de6065a). The in-process repeat of the infra call passed 20 of 20.
# Output: $OUT/infra/b2b_fresh.txt (one line per process: passed/failed).
mkdir -p $OUT/infra
B2B=tests/mvs/test_mvs_review_s8_gpu.py::test_back_to_back_runs_on_two_threads_give_a_fresh_runs_result
for i in $(seq 1 ${N:-10}); do
  r=$(timeout 20 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts= $B2B 2>&1 | tail -1)
  echo "$i $r" | tee -a $OUT/infra/b2b_fresh.txt
  [ $SECONDS -gt 50 ] && break
done
grep -c passed $OUT/infra/b2b_fresh.txt
