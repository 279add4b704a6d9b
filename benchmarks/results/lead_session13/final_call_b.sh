#!/bin/bash
# lead, session 13: second call on the warm machine (pymeshlab carried: .carry-msp10)
# 1. the mesh tool end to end from the file, defaults (k = auto and an integer k), 17k (PSB 101) and 50k (PSB 281),
#    GPU, one process, 9 rounds; 2. the same 50k on 2 cores (taskset 0,1), CPU path; 3. the helpers' requests.
export PYTHONUNBUFFERED=1
L=$OUT/lead; mkdir -p $L
R=$PWD; C=$R/.carry-msp10
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
nvidia-smi -L; date -u
[ "${AB:-1}" = 1 ] && ( export PYTHONPATH=/tmp/site:$P/site LD_LIBRARY_PATH=$P/lib
python3 -c "from gpu_kernels.mesh.simplify import available_simplifiers as a; print('simplifiers:', a())"
echo "== 1. GPU, k = auto, defaults vs DEFAULT_AUTO_MERGE=hand (the cost bar of session 12)"
timeout ${T_AB:-100} python3 benchmarks/mesh_session11_ab.py $C/101.off $C/281.off --device cuda --k auto --rounds 9 \
  --switch DEFAULT_AUTO_MERGE --json $L/mesh_ab_h100.json 2>&1 | grep -v Warn | tail -14
date -u
echo "== 2. 2 cores, 50k, CPU path"
timeout ${T_CPU:-60} taskset -c 0,1 python3 benchmarks/mesh_session11_ab.py $C/281.off --device cpu --k auto --rounds 2 \
  --switch DEFAULT_AUTO_MERGE --json $L/mesh_ab_cpu2.json 2>&1 | grep -v Warn | tail -8
date -u )
for r in ${REQS:-}; do echo "== request $r"; timeout ${T_REQ:-62} bash .carry-lead13/req-$r.sh 2>&1 | tail -30; date -u; done
