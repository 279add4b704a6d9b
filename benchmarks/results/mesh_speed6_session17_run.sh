#!/bin/bash
# (A record: clk PASSED its rule in this call and is on by default since; benchmarks/results/mesh_speed6_session17.md)
# mesh-speed6, session 17, the one device call (H100): the pre-registered re-judgement of clk (simplify.STILL_CLOCK:
# the decimation plugin's clock slot at a standing clock during our filter call only) against base, at the 3,500-face
# working mesh. ONE process, from the file with pymeshlab: 17k (PSB 101) 41 rounds and 50k (PSB 281) 41 rounds of
# base,clk interleaved and reversed every other round after a warm-up each, the judge of (c1)-(c3), then the step's
# pieces (not judged); then 2 host cores (taskset -c 0,1, CPU path), 50k, base,clk 1 round after a warm-up ((c4));
# then the whole rule's verdict; then the CPU tests of the switch with pymeshlab (not judged; last, may be cut).
# carry: .carry-ms17 (git archive of the rule's commit, see below) and .carry-msp10 (pymeshlab cp312 slim, the fast-simplification wheel, PSB 101.off / 281.off; 22 MB, read only).
# Writes $OUT/mesh-speed6/{log.txt,device.txt,ab.json,ab_cpu2.json}.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; M=$R/.carry-msp10; D=$OUT/mesh-speed6; mkdir -p $D
exec > >(tee $D/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; lscpu | grep -i "model name\|hypervisor"; } | tee $D/device.txt
# the judged library: gpu_kernels/, tests/mesh/ and the A/B scripts as committed at a946ecb (the rule's commit), unpacked
# over the device's copy so that other helpers' uncommitted edits do not leak in (carry .carry-ms17/lib.tar.xz, 0.7 MB)
if [ -f .carry-ms17/lib.tar.xz ]; then tar -xJf .carry-ms17/lib.tar.xz && echo "library of a946ecb unpacked"; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-ms6 $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-ms6; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-ms6:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset GPULAB_PYMESHLAB_CLOCK
echo "== A/B clk 17k (41) + 50k (41), judge (c1-c3), pieces (9), one process [$(( $(date +%s) - T0 )) s]"
timeout ${T_AB:-150} python3 benchmarks/mesh_speed17_ab.py $M/101.off $M/281.off --device cuda --rounds 41 \
  --configs base,clk --judge clk --pieces 9 --json $D/ab.json 2>&1 | grep -v Warn
echo "== 2 host cores, CPU path, 50k [$(( $(date +%s) - T0 )) s]"
timeout ${T_CPU:-40} taskset -c 0,1 python3 benchmarks/mesh_speed17_ab.py $M/281.off --device cpu --rounds 1 \
  --configs base,clk --json $D/ab_cpu2.json 2>&1 | grep -v Warn
echo "== the rule's verdict [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_speed17_ab.py --verdict $D/ab.json $D/ab_cpu2.json --rounds 41
echo "== CPU tests with pymeshlab [$(( $(date +%s) - T0 )) s]"
timeout ${T_TEST:-45} python3 -m pytest tests/mesh/test_mesh16_speed_clock.py tests/mesh/test_speed12_simplify.py \
  tests/mesh/test_speed11_simplify.py -q -p no:cacheprovider -o addopts="" -W ignore -rs 2>&1 | tail -6
echo "done after $(( $(date +%s) - T0 )) s"; date -u
