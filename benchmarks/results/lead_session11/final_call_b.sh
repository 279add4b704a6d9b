#!/bin/bash
# lead, session 11: second call on the warm machine (requests that need the pymeshlab carry or time)
export PYTHONUNBUFFERED=1
mkdir -p $OUT/lead; nvidia-smi -L; date -u
for r in ${REQS:-mesh-q}; do echo "== request $r"; timeout ${T_REQ:-95} bash .carry-lead11/req-$r.sh 2>&1 | tail -25; done
echo "== 2 cores (taskset 0,1), 50k, k = auto, CPU path: defaults vs DEFAULT_AUTO_MERGE=learned (lead's rule)"
( C=$PWD/.carry-msp10; P=/tmp/pml; export PYTHONPATH=/tmp/site:$P/site LD_LIBRARY_PATH=$P/lib
  timeout ${T_CPU:-70} taskset -c 0,1 python3 benchmarks/mesh_session11_ab.py $C/281.off --device cpu --k auto --rounds 3 \
    --switch DEFAULT_AUTO_MERGE --json $OUT/lead/cpu2_ab.json 2>&1 | grep -v Warn | tail -12 )
date -u
