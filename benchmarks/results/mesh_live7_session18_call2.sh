#!/bin/bash
# mesh-live7, session 18, call 2 (the same warm H100 as call 1): call 1's files the file-count limit left out
# (one tar), a diagnostic of new and old with the early cuts off (GPULAB_MESH_EARLY_SETTLE=0: nothing beside the
# clusterings' loop) and one more full-resolution pair.
export PYTHONUNBUFFERED=1
C=$PWD/.carry-ml7; O=/tmp/ml7out; mkdir -p $O
for a in old new; do [ -d /tmp/$a/app ] || { mkdir -p /tmp/$a && tar -xJf $C/$a.tar.xz -C /tmp/$a && ln -sfn $PWD/resources /tmp/$a/resources; }; done
source $C/setup.sh >/dev/null
[ -d /tmp/site-fs ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs $C/fast_simplification-*.whl
[ -d /tmp/pml/site ] || { mkdir -p /tmp/pml && tar -xJf $C/pml.tar.xz -C /tmp/pml; }
export PYTHONPATH="/tmp/site-fs:/tmp/pml/site${PYTHONPATH:+:$PYTHONPATH}" LD_LIBRARY_PATH="/tmp/pml/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ls /work /tmp | head -40 > $O/ls.txt 2>&1
run() { (cd /tmp/$1 && env $4 timeout 100 python3 benchmarks/live.py --device cuda --data $C/data --tools mesh-seg $3 --json $O/live_$2.json > $O/live_$2.txt 2>&1); echo "$2 rc=$?"; grep "target k" $O/live_$2.txt | cut -c1-200; }
run new newF_e0 --mesh-full-resolution "GPULAB_MESH_EARLY_SETTLE=0"
run old oldF_e0 --mesh-full-resolution "GPULAB_MESH_EARLY_SETTLE=0"
run new newF3 --mesh-full-resolution
run old oldF3 --mesh-full-resolution
P=$(find / -maxdepth 6 -path /proc -prune -o -name "live_oldF1.json" -print 2>/dev/null | grep -v ml7out | head -1)
echo "call 1 files: $P" >> $O/ls.txt; [ -n "$P" ] && mkdir -p $O/call1 && cp $(dirname $P)/* $O/call1/
tar -cJf $OUT/ml7_call2.tar.xz -C $O .
