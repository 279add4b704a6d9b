#!/bin/bash
# usage: bash go20.sh NAME [REV] -> fresh clone of /work/main at REV, CI=true bash .ci/run with durations + junit;
# the run's CPU time (/usr/bin/time) and the box's load average every 30 s (LOAD20_NAME) beside it
N=$1; REV=${2:-HEAD}; D=/tmp/ci20_$N; W=${SUITE20_DIR:-/work/team/s20/suite20}; rm -rf $D; git clone -q /work/main $D && cd $D && git checkout -q $(cd /work/main && git rev-parse $REV) && \
{ ( while sleep 30; do echo "$(date -u +%T) $(cat /proc/loadavg)"; done ) > $W/LOAD20_$N 2>&1 & LP=$!; \
  echo "rev $(git rev-parse --short HEAD) start $(date -u)"; T0=$(date +%s); \
  CI=true PYTEST_ARGS="--durations=200 --durations-min=1 --junitxml=$W/junit_$N.xml" timeout 5400 /usr/bin/time -f "make test: %e s wall, %U s user, %S s sys" bash .ci/run; \
  echo "rc $? end $(date -u) total $(( $(date +%s) - T0 )) s"; kill $LP; } > $W/LOG20_$N 2>&1
