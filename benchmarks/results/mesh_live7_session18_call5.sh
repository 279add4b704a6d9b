#!/bin/bash
# mesh-live7, session 18, call 5 (the lead's final call): the final commit against old 67ab891. Build the carry first,
# on the development box, from the repo root (it writes .carry-ml7/new.tar.xz from the commit given):
#   bash benchmarks/results/mesh_live7_session18_carry.sh 67ab891 $(git rev-parse HEAD)
# then run this with carry [".carry-ml7"] (~29 MiB). It compares the k edit through
# the tab at full resolution (two rounds) and at the default working resolution, and the default path end to end
# (benchmarks/mesh_e2e_session10.py: read + segment_mesh with the defaults, 101.off 17k and 281.off 50k); SHA-1 of
# labels + colours must be equal (2130b3899191, 60c9acbd633f).
export PYTHONUNBUFFERED=1
C=$PWD/.carry-ml7; O=/tmp/ml7out5; mkdir -p $O
nvidia-smi -L | tee $O/device.txt; date -u | tee -a $O/device.txt; cat $C/old.rev $C/new.rev | tee -a $O/device.txt
for a in old new; do mkdir -p /tmp/$a && tar -xJf $C/$a.tar.xz -C /tmp/$a && ln -sfn $PWD/resources /tmp/$a/resources; done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
mkdir -p /tmp/pml && tar -xJf $C/pml.tar.xz -C /tmp/pml
for x in /tmp/pml/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
source $C/setup.sh > /dev/null
export PYTHONPATH="/tmp/site-fs:/tmp/pml/site${PYTHONPATH:+:$PYTHONPATH}" LD_LIBRARY_PATH="/tmp/pml/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
xz -dc $C/data/281.off.xz > /tmp/281.off
e2e() {  # arm, name
  local t=$(date +%s)
  (cd /tmp/$1 && timeout 80 python3 benchmarks/mesh_e2e_session10.py $C/data/psb/off/101.off /tmp/281.off \
     --rounds 9 --json $O/e2e_$2.json > $O/e2e_$2.txt 2>&1)
  echo "e2e $2 rc=$? $(( $(date +%s) - t )) s"; grep -E "min .* median" $O/e2e_$2.txt | cut -c1-200
}
run() {  # arm, name, flags
  local t=$(date +%s)
  (cd /tmp/$1 && timeout 100 python3 benchmarks/live.py --device cuda --data $C/data --tools mesh-seg $3 \
     --json $O/live_$2.json > $O/live_$2.txt 2>&1)
  echo "$2 rc=$? $(( $(date +%s) - t )) s"; grep "target k" $O/live_$2.txt | cut -c1-170
}
F=--mesh-full-resolution
run old oldF1 $F
run new newF1 $F
e2e new new1
e2e old old1
run new newW1 ""
run old oldW1 ""
run old oldF2 $F
run new newF2 $F
tar -cJf $OUT/ml7_call5.tar.xz -C $O .
