#!/bin/bash
# mesh-speed (session 10): confirmation on the lead's final tree, <= 60 s (about 40 s in call 3's timing).
# CARRY: .carry-msp10 (22 MB: pymeshlab cp312 slim + fast_simplification wheel + PSB 101.off/281.off; mesh-r2 carries it too).
# 1) the session's GPU/CPU tests of the changed files; 2) a 5-round one-process A/B, end to end from the file,
# defaults with pymeshlab, auto_layout 'auto': base (final code) against s9 (the session's start: NumPy's text
# passes, np.partition certainty). Expected (call 3, slow host): 50k median ~ -30 ms, 17k unresolved; the same
# SHA-1s in both configurations (17k 8dbfc44dc1e6, 50k 8f80888a6104 with auto_layout auto).
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-msp10; O=$OUT/mesh-speed; mkdir -p $O
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $C/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site:$R${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
timeout 20 python3 -m pytest -m gpu tests/mesh/test_speed10_device.py tests/mesh/test_speed9_thickness.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -2 | tee $O/tests.txt
timeout 35 python3 benchmarks/mesh_e2e_session10.py $C/101.off $C/281.off --rounds 5 --configs base,s9 --auto-layout auto \
   --json $O/ab.json 2>&1 | grep e2e10 | tee $O/ab_log.txt
