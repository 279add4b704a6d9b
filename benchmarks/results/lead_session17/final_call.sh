#!/bin/bash
# lead, session 17: final GPU call (session 16's final_call_b.sh with REV off and TDIRS without imseg) (carry .carry-msp10: pymeshlab cp312, fast-simplification wheel, PSB 101.off /
# 281.off; .carry-l16a: the shared-data subset for the GPU tests). Parts by switch:
#   REV=1  the reviewer's check (ct_merge's shipped modes at 1080p in the count mode, the hybrid at 1080p: GPU = CPU)
#   E2E=1  the mesh tool end to end from the file with the shipped defaults (17k / 50k, one process, SHA-1s)
#   TESTS=1 pytest -m gpu $TDIRS with pymeshlab and fast-simplification present
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); M=$PWD/.carry-msp10; L=$OUT/lead; mkdir -p $L
exec > >(tee $L/logB${TAG:-}.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; } | tee $L/deviceB${TAG:-}.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-l $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-l; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-l:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ "${REV:-0}" = 1 ]; then
  echo "== reviewer's GPU check [$(( $(date +%s) - T0 )) s]"
  bash benchmarks/results/lead_session16/reviewer_gpu_check.sh | tail -6; cp $OUT/reviewer/check.txt $L/reviewer_check.txt 2>/dev/null
fi
if [ "${E2E:-1}" = 1 ]; then
  echo "== e2e shipped [$(( $(date +%s) - T0 )) s]"
  timeout ${T_AB:-100} python3 benchmarks/mesh_speed15_ab.py $M/101.off $M/281.off --device cuda --rounds ${R17:-31} --rounds-rest ${R50:-11} \
    --configs shipped --json $L/e2e_mesh.json 2>&1 | grep -v Warn
fi
if [ "${TESTS:-1}" = 1 ]; then
  echo "== pytest -m gpu ${TDIRS:=tests/mesh tests/batch tests/framework} [$(( $(date +%s) - T0 )) s]"
  GPULAB_SHARED_DATA=$PWD/.carry-l16a/data timeout ${T_TESTS:-400} python3 -m pytest -m gpu $TDIRS -q -p no:cacheprovider -o addopts="" \
    --deselect tests/framework/test_live_tabs.py --ignore=tests/mesh/test_apsp.py -W ignore -rfEs --durations=15 > $L/gpu_tests${TAG:-}.txt 2>&1
  tail -45 $L/gpu_tests${TAG:-}.txt
fi
echo "done after $(( $(date +%s) - T0 )) s"; date -u
