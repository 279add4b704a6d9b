#!/bin/bash
# mesh-speed3, session 15, device call 2 (H100): the shipped default (segment.NEAREST_BESIDE on since call 1) on the
# GPU: pytest -m gpu tests/mesh (without test_apsp.py: the APSP is untouched) with pymeshlab, and the library's
# defaults ("shipped") against the switch off ("base"), 17k 21 + 50k 7 rounds, one process: SHA-1s and figures
# (descriptive; the rule was judged in call 1).
# carry: .carry-ms3 (the committed versions, a few kB) and .carry-msp10 (pymeshlab cp312 slim, the fast-simplification wheel, PSB 101.off / 281.off; 22 MB, read only).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; M=$R/.carry-msp10; D=$OUT/mesh-speed3; mkdir -p $D
exec > >(tee $D/log2.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; git log --oneline -1; } | tee $D/device2.txt
# other helpers' uncommitted edits travel with the working tree: put back the committed files (.carry-ms3/tree: `git
# show HEAD:<path>` of every modified file under gpu_kernels/, tests/, app/ when the call was made) and move the
# untracked ones aside, so that this call runs the committed library (this copy only)
if [ -d .carry-ms3/tree ]; then cp -rv .carry-ms3/tree/. . | wc -l; while read -r u; do [ -n "$u" ] && rm -fv "$u"; done < .carry-ms3/untracked.txt; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-ms3 $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-ms3; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-ms3:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -c "from gpu_kernels.mesh import segment; print('NEAREST_BESIDE', segment.NEAREST_BESIDE, segment.NEAREST_BESIDE_ROWS)"
echo "== e2e shipped vs base [$(( $(date +%s) - T0 )) s]"
timeout ${T_AB:-70} python3 benchmarks/mesh_speed15_ab.py $M/101.off $M/281.off --device cuda --rounds 21 --rounds-rest 7 \
  --configs base,shipped --json $D/ab2.json 2>&1 | grep -v Warn
echo "== pytest -m gpu tests/mesh (not test_apsp) [$(( $(date +%s) - T0 )) s]"
timeout ${T_TEST:-150} python3 -m pytest -m gpu tests/mesh --ignore=tests/mesh/test_apsp.py \
  -q -p no:cacheprovider -o addopts="" -W ignore -rs 2>&1 | tail -15
echo "done after $(( $(date +%s) - T0 )) s"; date -u
