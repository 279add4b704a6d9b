#!/bin/bash
# (A record: clk failed its rule in this call and left the library with its tests, tests/mesh/test_mesh16_speed_clock.py, as the rule said; the code is in git at 2203a8a.)
# mesh-speed4, session 16, device call 1 (H100): the pre-registered judgement of clk (simplify.STILL_CLOCK: the
# decimation plugin's clock slot points at a standing clock) against base, 17k 41 + 50k 15 rounds in ONE process,
# with the step's pieces (MeshSet, Mesh, add_mesh, filter, read back; thread count; one clock() call's cost; clock()
# calls per filter); then 2 host cores (CPU path, 50k); then the CPU tests of the switch and of the step with pymeshlab.
# carry: .carry-msp10 (pymeshlab cp312 slim, the fast-simplification wheel, PSB 101.off / 281.off; 22 MB, read only)
# and .carry-ms4 (if present: the committed versions of files other helpers had modified, and the untracked files to
# move aside, so that the call runs the committed library).
# Writes $OUT/mesh-speed4/{log.txt,device.txt,ab.json,ab_cpu2.json}.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; M=$R/.carry-msp10; D=$OUT/mesh-speed4; mkdir -p $D
exec > >(tee $D/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; lscpu | grep -i "model name\|hypervisor"; } | tee $D/device.txt
if [ -d .carry-ms4/tree ]; then cp -rv .carry-ms4/tree/. . | wc -l; fi
if [ -f .carry-ms4/untracked.txt ]; then while read -r u; do [ -n "$u" ] && rm -fv "$u"; done < .carry-ms4/untracked.txt; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-ms4 $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-ms4; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-ms4:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== A/B clk 17k (41) + 50k (15), pieces (15), one process [$(( $(date +%s) - T0 )) s]"
timeout ${T_AB:-150} python3 benchmarks/mesh_speed16_ab.py $M/101.off $M/281.off --device cuda --rounds 41 --rounds-rest 15 \
  --configs base,clk --pieces 15 --judge clk --json $D/ab.json 2>&1 | grep -v Warn
echo "== 2 host cores, CPU path, 50k [$(( $(date +%s) - T0 )) s]"
timeout ${T_CPU:-40} taskset -c 0,1 python3 benchmarks/mesh_speed16_ab.py $M/281.off --device cpu --rounds 1 \
  --configs base,clk --json $D/ab_cpu2.json 2>&1 | grep -v Warn
echo "== CPU tests with pymeshlab [$(( $(date +%s) - T0 )) s]"
timeout ${T_TEST:-60} python3 -m pytest tests/mesh/test_mesh16_speed_clock.py tests/mesh/test_speed12_simplify.py \
  tests/mesh/test_speed11_simplify.py -q -p no:cacheprovider -o addopts="" -W ignore -rs 2>&1 | tail -6
echo "done after $(( $(date +%s) - T0 )) s"; date -u
