#!/bin/bash
# (A record of what ran: its candidate configurations are gone with their switches since they failed their rules;
# the tree it ran is in git: run 1 at 502a0ac, run 2 at 1c0944a, run 3 at 1411966.)
# mesh-speed2, session 14, device call 1 (H100): the pre-registered A/B of the bit-identical candidates pool
# (simplify.REUSE_THREAD), near (segment.NEAREST_BESIDE) and both against base, with the diagnostic wait; pymeshlab's
# step alone on the caller / a fresh thread / a long-lived thread; traced stages; 2 host cores; the GPU tests.
# carry: .carry-msp10 (pymeshlab cp312 slim, the fast-simplification wheel, PSB 101.off / 281.off; 22 MB, read only).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; M=$R/.carry-msp10
exec > >(tee $OUT/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; git log --oneline -1; lscpu | grep -E "Model name|Thread|Core|Socket|NUMA node\(s\)"; } | tee $OUT/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== A/B 17k + 50k, pymeshlab alone, stages [$(( $(date +%s) - T0 )) s]"
timeout ${T_AB:-200} python3 benchmarks/mesh_speed14_ab.py $M/101.off $M/281.off --device cuda --rounds 41 --rounds-rest 15 \
  --configs base,pool,near,both,wait --configs-rest base,pool,near,both --pml-side 15 --stages 15 --stage-configs base,pool,near,both --json $OUT/ab.json 2>&1 | grep -v Warn
echo "== 2 host cores, CPU path, 50k [$(( $(date +%s) - T0 )) s]"
timeout ${T_CPU:-60} taskset -c 0,1 python3 benchmarks/mesh_speed14_ab.py $M/281.off --device cpu --rounds 1 \
  --configs base,pool --json $OUT/ab_cpu2.json 2>&1 | grep -v Warn
echo "== tests [$(( $(date +%s) - T0 )) s]"
timeout ${T_TEST:-60} python3 -m pytest -m gpu tests/mesh/test_speed10_device.py tests/mesh/test_mesh_segment.py \
  -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -3
timeout 60 python3 -m pytest tests/mesh/test_speed14_threads.py tests/mesh/test_speed12_simplify.py tests/mesh/test_speed12_csr.py \
  -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -3
echo "done after $(( $(date +%s) - T0 )) s"; date -u
