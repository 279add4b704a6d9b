#!/bin/bash
# mesh-speed session 10, device call 4: does a shorter interpreter switch interval (the GIL hand-over between
# the main thread, the simplification thread and the early-cut thread) shorten the end-to-end time? Call 2's
# A/B (7 rounds) gave 50k medians 528.9 -> 460.0 ms at 0.1 ms, not resolved. One process, 11 rounds,
# base / sw1ms / sw0.1ms, auto_layout auto, final code.
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp10
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
E=benchmarks/mesh_e2e_session10.py
echo "== warm-up process"; timeout 60 python $E $C/101.off --rounds 1 --auto-layout auto
echo "== A/B switch interval"; timeout 150 python $E $C/101.off $C/281.off --rounds 11 --configs base,sw1ms,sw0.1ms --auto-layout auto --json $OUT/ab_sw.json
date -u
