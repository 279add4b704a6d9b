#!/bin/bash
# lead, session 17, call 2: why the mesh k edit (17k, full resolution) takes 90-137 ms in sessions 16-17 against
# 57-66 ms in session 15's call A. Session 15 ran live.py over all five tools with fast-simplification on the path;
# sessions 16-17 ran --tools mesh-seg alone without it. Same tree, one machine: mesh alone / after the other tools.
export PYTHONUNBUFFERED=1
L=$OUT/lead; mkdir -p $L
nvidia-smi -L | tee $L/device.txt; date -u | tee -a $L/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs .carry-lead10/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
source .carry-l17a/setup.sh
q() { nvidia-smi --query-gpu=pstate,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | sed "s/^/$1 /"; }
run() {  # name, extra PYTHONPATH, tools
  q "$1 before"; ( while true; do q "$1 during" >> $L/clocks_$1.txt; sleep 0.5; done ) & P=$!
  PYTHONPATH=$PYTHONPATH$2 timeout 150 python3 benchmarks/live.py --device cuda --data .carry-l17a/data --mvs-views 0 $3 --json $L/live_$1.json > $L/live_$1.txt 2>&1
  kill $P; grep -E "target k|target coarseness" $L/live_$1.txt | cut -c1-200 | sed "s/^/$1 /"
  python3 -c "
import json; t=json.load(open('$L/live_$1.json'))['tools']['mesh-seg']
for r in t['target']['runs']: print('$1', round(r['after_debounce_s']*1e3,1), {k: round(v*1e3,1) for k,v in r['stage_s'].items()})
print('$1 full', {k: round(v*1e3,1) for k,v in t['shares']['full']['stage_s'].items()})"
  sort -u $L/clocks_$1.txt | head -5; date -u
}
run meshA "" "--tools mesh-seg"
run meshfs ":/tmp/site-fs" "--tools mesh-seg"
run imsegmesh "" "--tools imseg,mesh-seg"
run all ":/tmp/site-fs" ""
run meshB "" "--tools mesh-seg"
