#!/bin/bash
# lead, session 9: the second final call (warm machine): helpers' GPU requests that need pymeshlab or no Qt
export PYTHONUNBUFFERED=1
mkdir -p $OUT/lead
nvidia-smi -L; date -u
for r in ${REQS:-}; do echo "== request $r"; timeout ${T_REQ:-75} bash .carry-msp8/req-$r.sh 2>&1 | tail -40; done
date -u
