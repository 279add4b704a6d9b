#!/bin/bash
# lead, session 10: second call on the warm machine (requests that need the pymeshlab carry or time)
export PYTHONUNBUFFERED=1
mkdir -p $OUT/lead; nvidia-smi -L; date -u
for r in ${REQS:-mesh-speed infra reviewerA}; do echo "== request $r"; timeout ${T_REQ:-60} bash .carry-lead10/req-$r.sh 2>&1 | tail -25; done
date -u
