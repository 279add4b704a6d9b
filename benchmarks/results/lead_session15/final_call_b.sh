#!/bin/bash
# lead, session 15: final GPU call B (carry .carry-msp10: pymeshlab cp312, fast-simplification wheel, PSB 101.off /
# 281.off): the mesh tool end to end from the file with the shipped defaults (17k / 50k, one process, SHA-1s), and
# pytest -m gpu tests/mesh with pymeshlab present (call A's device has none)
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); M=$PWD/.carry-msp10; L=$OUT/lead; mkdir -p $L
exec > >(tee $L/logB.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; } | tee $L/deviceB.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-l $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-l; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-l:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== e2e shipped [$(( $(date +%s) - T0 )) s]"
timeout ${T_AB:-90} python3 benchmarks/mesh_speed15_ab.py $M/101.off $M/281.off --device cuda --rounds ${R17:-31} --rounds-rest ${R50:-11} \
  --configs shipped --json $L/e2e_mesh.json 2>&1 | grep -v Warn
echo "== pytest -m gpu tests/mesh (not test_apsp) [$(( $(date +%s) - T0 )) s]"
timeout ${T_TEST:-150} python3 -m pytest -m gpu tests/mesh --ignore=tests/mesh/test_apsp.py -q -p no:cacheprovider -o addopts="" -W ignore -rs 2>&1 | tail -15
echo "done after $(( $(date +%s) - T0 )) s"; date -u
