#!/bin/bash
# (A record of what ran: its candidate configurations are gone with their switches since they failed their rules;
# the tree it ran is in git: run 1 at 502a0ac, run 2 at 1c0944a, run 3 at 1411966.)
# mesh-speed2, session 14, run 3 (H100; <= 60 s; the lead's final call or mesh-speed2's own): the pre-registered A/B of
# nearN (segment.NEAREST_BESIDE with a search thread per NEAREST_BESIDE_ROWS = 9,000 faces) against base, 17k and 50k.
# carry: .carry-msp10 (pymeshlab cp312 slim, the fast-simplification wheel, PSB 101.off / 281.off; 22 MB, read only).
# Writes $OUT/mesh-speed2/{log.txt,ab.json,device.txt}.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; M=$R/.carry-msp10; D=$OUT/mesh-speed2; mkdir -p $D
exec > >(tee $D/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; git log --oneline -1; } | tee $D/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-ms2 $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-ms2; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-ms2:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== A/B 17k + 50k [$(( $(date +%s) - T0 )) s]"
timeout ${T_AB:-52} python3 benchmarks/mesh_speed14_ab.py $M/101.off $M/281.off --device cuda --rounds 41 --rounds-rest 15 \
  --configs base,nearN --judge nearN --json $D/ab.json 2>&1 | grep -v Warn
echo "done after $(( $(date +%s) - T0 )) s"; date -u
