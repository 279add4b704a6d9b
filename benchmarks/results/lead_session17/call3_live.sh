#!/bin/bash
# lead, session 17, call 3: is the slow full-resolution mesh k edit without a simplifier (call 2) the background
# numba warm-up of the merge loop (gpu_kernels/mesh/warm.py) competing with the first edits? Arms alternate on one
# machine: no simplifier / no simplifier with GPULAB_MESH_WARM_UP=0 / fast-simplification importable.
export PYTHONUNBUFFERED=1
L=$OUT/lead3; mkdir -p $L
nvidia-smi -L | tee $L/device.txt; date -u | tee -a $L/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs .carry-lead10/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
source .carry-l17a/setup.sh
python3 -c "import numba, numba.core.config as c; print('numba', numba.__version__, 'cache dir', c.CACHE_DIR or '(next to the sources)')"
run() {  # name, extra PYTHONPATH, env
  env $3 PYTHONPATH=$PYTHONPATH$2 timeout 100 python3 benchmarks/live.py --device cuda --data .carry-l17a/data --tools mesh-seg --json $L/live_$1.json > $L/live_$1.txt 2>&1
  python3 -c "
import json; t=json.load(open('$L/live_$1.json'))['tools']['mesh-seg']
print('$1', [round(r['after_debounce_s']*1e3,1) for r in t['target']['runs']], [{k: round(v*1e3,1) for k,v in r['stage_s'].items()} for r in t['target']['runs']], 'full', {k: round(v*1e3,1) for k,v in t['shares']['full']['stage_s'].items()})"
}
run nofs "" "X=1"
run nofs_w0 "" "GPULAB_MESH_WARM_UP=0"
run fs ":/tmp/site-fs" "X=1"
run nofs "" "X=1"
run nofs_w0 "" "GPULAB_MESH_WARM_UP=0"
run fs_w0 ":/tmp/site-fs" "GPULAB_MESH_WARM_UP=0"
date -u
