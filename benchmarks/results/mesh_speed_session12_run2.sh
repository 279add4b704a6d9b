#!/bin/bash
# mesh-speed, session 12, device call 2 (H100): the final tree with the new default (preservenormal off), the
# CSR cache (0725e49) and the merges' Progress (ce0b3fc): one-process A/B base / nocsr / pf3n1 (SHA-1s, times), a
# profile of the new default at 17k, and the GPU tests of the touched paths.
# carry: .carry-msp10 (pymeshlab cp312 slim, the fast-simplification wheel, PSB 101.off / 281.off; 22 MB, read only).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; M=$R/.carry-msp10
exec > >(tee $OUT/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $OUT/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== A/B [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 benchmarks/mesh_speed12_ab.py $M/101.off $M/281.off --device cuda --rounds 9 \
  --configs base,nocsr,pf3n1 --profile 3 --top 40 --json $OUT/ab.json 2>&1 | grep -v Warn
echo "== GPU tests [$(( $(date +%s) - T0 )) s]"
timeout 120 python3 -m pytest -m gpu tests/mesh/test_speed10_device.py tests/mesh/test_mesh_segment.py tests/mesh/test_quality11_learned.py \
  -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -4
timeout 60 python3 -m pytest tests/mesh/test_speed12_simplify.py tests/mesh/test_speed12_csr.py tests/mesh/test_speed12_progress.py \
  -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -3
echo "done after $(( $(date +%s) - T0 )) s"; date -u
