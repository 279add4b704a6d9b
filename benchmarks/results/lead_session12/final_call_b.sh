#!/bin/bash
# lead, session 12: second call on the warm machine (pymeshlab carried: .carry-msp10)
# 1. the mesh tool end to end from the file (k = auto, defaults: the learned auto merge since 4906f79) against the
#    hand-made auto merge, one process, 9 rounds alternated, 17k (PSB 101) and 50k (PSB 281), GPU;
# 2. the same 50k on 2 cores (taskset 0,1), CPU path, best of 3;
# 3. mesh-speed's request (the later bit-identical host changes switched off: same SHA-1s on the GPU).
export PYTHONUNBUFFERED=1
L=$OUT/lead; mkdir -p $L
R=$PWD; C=$R/.carry-msp10
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site LD_LIBRARY_PATH=$P/lib
nvidia-smi -L; date -u
python3 -c "from gpu_kernels.mesh.simplify import available_simplifiers as a; print('simplifiers:', a())"
echo "== 1. GPU, k = auto, defaults vs DEFAULT_AUTO_MERGE=hand"
timeout ${T_AB:-110} python3 benchmarks/mesh_session11_ab.py $C/101.off $C/281.off --device cuda --k auto --rounds 9 \
  --switch DEFAULT_AUTO_MERGE --json $L/mesh_ab_h100.json 2>&1 | grep -v Warn | tail -14
date -u
echo "== 2. 2 cores, 50k, CPU path"
timeout ${T_CPU:-70} taskset -c 0,1 python3 benchmarks/mesh_session11_ab.py $C/281.off --device cpu --k auto --rounds 3 \
  --switch DEFAULT_AUTO_MERGE --json $L/mesh_ab_cpu2.json 2>&1 | grep -v Warn | tail -8
date -u
echo "== 3. mesh-speed request"
timeout 60 bash /dev/stdin < .carry-lead12/req-mesh-speed.sh 2>&1 | tail -20
date -u
