#!/bin/bash
# mesh-live7, session 18, call 4 (asked of the lead): the early cuts' threads beside the clusterings' loop
# (GPULAB_MESH_EARLY_WORKERS 0 / 1; the rows pool's 4 threads after the loop in both) against old, through the real
# tab (offscreen Qt), full resolution and the default working resolution, and the plain end to end of the default
# path (benchmarks/mesh_e2e_session10.py: read + segment_mesh with the defaults, 101.off 17k and 281.off 50k) old vs
# new. old = 67ab891 (the parent of the change), new = fe8a387: git archives in .carry-ml7; all files in one tar.
export PYTHONUNBUFFERED=1
C=$PWD/.carry-ml7; O=/tmp/ml7out4; mkdir -p $O
nvidia-smi -L | tee $O/device.txt; date -u | tee -a $O/device.txt
for a in old new; do mkdir -p /tmp/$a && tar -xJf $C/$a.tar.xz -C /tmp/$a && ln -sfn $PWD/resources /tmp/$a/resources; done
cat $C/old.rev $C/new.rev | tee -a $O/device.txt
source $C/setup.sh > /dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
mkdir -p /tmp/pml && tar -xJf $C/pml.tar.xz -C /tmp/pml
for x in /tmp/pml/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH="/tmp/site-fs:/tmp/pml/site${PYTHONPATH:+:$PYTHONPATH}" LD_LIBRARY_PATH="/tmp/pml/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() {  # arm, name, flags, env
  local t=$(date +%s)
  (cd /tmp/$1 && env $4 timeout 100 python3 benchmarks/live.py --device cuda --data $C/data --tools mesh-seg $3 \
     --json $O/live_$2.json > $O/live_$2.txt 2>&1)
  echo "$2 rc=$? $(( $(date +%s) - t )) s"
  python3 - "$O/live_$2.json" "$2" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))["tools"]["mesh-seg"]
except Exception as exc:  # noqa: BLE001
    print(sys.argv[2], "no json", exc); raise SystemExit
for r in (t.get("target") or {}).get("runs", []):
    print(sys.argv[2], "after_debounce %.1f" % (1e3 * r["after_debounce_s"]), "paint %.1f repaint %.1f" % (
        1e3 * r["paint_s"], 1e3 * r["repaint_s"]), {k: round(1e3 * v, 1) for k, v in r["stage_s"].items()})
print(sys.argv[2], "same_as_full_run", t.get("same_as_full_run"), (t.get("target") or {}).get("same_as_full_run"))
PY
}
F=--mesh-full-resolution
xz -dc $C/data/281.off.xz > /tmp/281.off
e2e() {  # arm, name, env
  local t=$(date +%s)
  (cd /tmp/$1 && env $3 timeout 60 python3 benchmarks/mesh_e2e_session10.py $C/data/psb/off/101.off /tmp/281.off \
     --rounds 7 --json $O/e2e_$2.json > $O/e2e_$2.txt 2>&1)
  echo "e2e $2 rc=$? $(( $(date +%s) - t )) s"; grep -E "min .* median" $O/e2e_$2.txt | cut -c1-150
}
run old oldF1 $F
run new newF1_w0 $F "GPULAB_MESH_EARLY_WORKERS=0"
run new newF1_w1 $F "GPULAB_MESH_EARLY_WORKERS=1"
run new newW1_w0 "" "GPULAB_MESH_EARLY_WORKERS=0"
run old oldW1 ""
run new newW1_w1 "" "GPULAB_MESH_EARLY_WORKERS=1"
e2e old old1
e2e new w0_1 "GPULAB_MESH_EARLY_WORKERS=0"
e2e new w1_1 "GPULAB_MESH_EARLY_WORKERS=1"
tar -cJf $OUT/ml7_call4.tar.xz -C $O .
run new newF2_w1 $F "GPULAB_MESH_EARLY_WORKERS=1"
run new newF2_w0 $F "GPULAB_MESH_EARLY_WORKERS=0"
run old oldF2 $F
run old oldW2 ""
run new newW2_w0 "" "GPULAB_MESH_EARLY_WORKERS=0"
tar -cJf $OUT/ml7_call4.tar.xz -C $O .
