#!/bin/bash
# (A record of what ran: its candidate configurations are gone with their switches since they failed their rules;
# the tree it ran is in git: run 1 at 502a0ac, run 2 at 1c0944a, run 3 at 1411966.)
# mesh-speed2, session 14, device call 2 (H100): the pre-registered A/B of near2 (segment.NEAREST_BESIDE with
# NEAREST_BESIDE_WORKERS = 2) against base at 17k and 50k, traced stages; then pymeshlab's step alone against two fixed
# loads (a Python loop, a 64 MB random gather) in alternating processes: plain, glibc's malloc on huge pages, one core.
# carry: .carry-msp10 (pymeshlab cp312 slim, the fast-simplification wheel, PSB 101.off / 281.off; 22 MB, read only).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; M=$R/.carry-msp10
exec > >(tee $OUT/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; git log --oneline -1; ldd --version | head -1;
  echo "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag)"; } | tee $OUT/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== A/B 17k + 50k, stages [$(( $(date +%s) - T0 )) s]"
timeout ${T_AB:-120} python3 benchmarks/mesh_speed14_ab.py $M/101.off $M/281.off --device cuda --rounds 41 --rounds-rest 15 \
  --configs base,near2 --stages 15 --stage-configs base,near2 --json $OUT/ab.json 2>&1 | grep -v Warn | grep -v "^stages13.*  0\.[0-9][0-9] "
echo "== pymeshlab's step alone against fixed loads [$(( $(date +%s) - T0 )) s]"
for i in 1; do
  timeout 30 python3 benchmarks/mesh_speed14_step.py $M/101.off --rounds 20 --label plain$i 2>&1 | grep -v Warn
  GLIBC_TUNABLES=glibc.malloc.hugetlb=1 timeout 30 python3 benchmarks/mesh_speed14_step.py $M/101.off --rounds 20 --label huge$i 2>&1 | grep -v Warn
  timeout 30 taskset -c 5 python3 benchmarks/mesh_speed14_step.py $M/101.off --rounds 20 --label core5-$i 2>&1 | grep -v Warn
done
echo "done after $(( $(date +%s) - T0 )) s"; date -u
