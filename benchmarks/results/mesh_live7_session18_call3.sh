#!/bin/bash
# mesh-live7, session 18, call 3 (asked of the lead): where the k edit's cluster stage spends its time on the GPU
# (benchmarks/results/mesh_live7_session18_prof.py on the new code, full resolution and the default working resolution).
export PYTHONUNBUFFERED=1
C=$PWD/.carry-ml7; O=$OUT/ml7; mkdir -p $O
nvidia-smi -L | tee $O/device.txt; date -u | tee -a $O/device.txt
mkdir -p /tmp/new && tar -xJf $C/new.tar.xz -C /tmp/new && ln -sfn $PWD/resources /tmp/new/resources
cp benchmarks/results/mesh_live7_session18_prof.py /tmp/new/prof.py
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
mkdir -p /tmp/pml && tar -xJf $C/pml.tar.xz -C /tmp/pml
for x in /tmp/pml/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH="/tmp/site-fs:/tmp/pml/site${PYTHONPATH:+:$PYTHONPATH}" LD_LIBRARY_PATH="/tmp/pml/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd /tmp/new
sed -i 's#parents\[2\]#parents[0]#' prof.py
timeout 100 python3 prof.py --data $C/data --device cuda --full 2>&1 | tee $O/prof_full.txt | head -60
timeout 60 python3 prof.py --data $C/data --device cuda 2>&1 | tee $O/prof_wr.txt | head -20
