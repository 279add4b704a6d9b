#!/bin/bash
# lead s16: the live mesh k edit through the real tab, A-B-A-B in one call: A = the tree (W's model), B = session 15's
# learned_model.py (carried as .carry-l16b/old_learned_model.py); the live edit runs at full resolution (max_faces None),
# so WORKING_FACES does not enter; only the integer-k merge's model differs.
export PYTHONUNBUFFERED=1; L=$OUT/lead; mkdir -p $L; date -u
source .carry-l16b/setup.sh
cp gpu_kernels/mesh/learned_model.py /tmp/new_learned_model.py
for arm in A B A B; do
  if [ $arm = A ]; then cp /tmp/new_learned_model.py gpu_kernels/mesh/learned_model.py; else cp .carry-l16b/old_learned_model.py gpu_kernels/mesh/learned_model.py; fi
  timeout 60 python3 benchmarks/live.py --device cuda --data .carry-l16b/data --tools mesh-seg --json $L/live_mesh_$arm.json 2>&1 | grep "target k" | cut -c1-200 | sed "s/^/$arm /"
  python3 -c "
import json,sys; t=json.load(open('$L/live_mesh_$arm.json'))['tools']['mesh-seg']
print('$arm', [(round(r['after_debounce_s']*1e3,1), {k: round(v*1e3,1) for k,v in r['stage_s'].items()}) for r in t['target']['runs']], 'full', {k: round(v*1e3,1) for k,v in t['shares']['full']['stage_s'].items()})"
  cp $L/live_mesh_$arm.json $L/live_mesh_${arm}_$(date +%s).json
done
cp /tmp/new_learned_model.py gpu_kernels/mesh/learned_model.py; date -u
