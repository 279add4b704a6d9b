#!/bin/bash
# mesh-live7, session 18, call 1 (one H100): the live mesh k edit (PSB 101, 16,998 faces) through the real tab
# (offscreen Qt), old code against new in the same call, alternating, at full resolution (--mesh-full-resolution)
# and at the default working resolution; then pytest -m gpu tests/mesh on the new code; then two ablations of the
# new code at full resolution (one settle thread; the switch interval unchanged).
# old = the parent of the change (git archive), new = the change (git archive): both frozen in the carry, so nothing
# uncommitted in the shared checkout reaches the figures. The carry (.carry-ml7, built by
# benchmarks/results/mesh_live7_session18_carry.sh): a mesh-only slim PySide6 (qt.tar.xz, setup.sh), pymeshlab
# cp312 (mesh-q10's pml.tar.xz), the fast_simplification cp312 wheel, 101.off, old.tar.xz, new.tar.xz, xdist.tar.xz.
export PYTHONUNBUFFERED=1
C=$PWD/.carry-ml7; O=$OUT/ml7; mkdir -p $O
T0=$(date +%s)
nvidia-smi -L | tee $O/device.txt; date -u | tee -a $O/device.txt; nproc | tee -a $O/device.txt
for a in old new; do
  mkdir -p /tmp/$a && tar -xJf $C/$a.tar.xz -C /tmp/$a && ln -sfn $PWD/resources /tmp/$a/resources
done
cat $C/old.rev $C/new.rev | tee -a $O/device.txt
source $C/setup.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs \
  $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
mkdir -p /tmp/pml && tar -xJf $C/pml.tar.xz -C /tmp/pml
for x in /tmp/pml/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH="/tmp/site-fs:/tmp/pml/site${PYTHONPATH:+:$PYTHONPATH}"
export LD_LIBRARY_PATH="/tmp/pml/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
python3 -c "import pymeshlab, fast_simplification, PySide6; print('imports ok', PySide6.__version__)" 2>&1 | tail -1
echo "setup $(( $(date +%s) - T0 )) s"
q() { nvidia-smi --query-gpu=pstate,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader; }
run() {  # arm (old|new), name, live.py flags, env
  local t=$(date +%s)
  (cd /tmp/$1 && env $4 timeout 150 python3 benchmarks/live.py --device cuda --data $C/data --tools mesh-seg $3 \
     --json $O/live_$2.json > $O/live_$2.txt 2>&1)
  echo "$2 rc=$? $(( $(date +%s) - t )) s, clocks $(q)"
  grep -E "target k" $O/live_$2.txt | cut -c1-260
  python3 - "$O/live_$2.json" "$2" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))["tools"]["mesh-seg"]
except Exception as exc:  # noqa: BLE001
    print(sys.argv[2], "no json", exc); raise SystemExit
for r in (t.get("target") or {}).get("runs", []):
    print(sys.argv[2], "after_debounce %.1f" % (1e3 * r["after_debounce_s"]), "paint %.1f repaint %.1f other %.1f" % (
        1e3 * r["paint_s"], 1e3 * r["repaint_s"], 1e3 * r["other_s"]), {k: round(1e3 * v, 1) for k, v in r["stage_s"].items()})
print(sys.argv[2], "same_as_full_run", t.get("same_as_full_run"), (t.get("target") or {}).get("same_as_full_run"))
PY
}
run old oldF1 --mesh-full-resolution
run new newF1 --mesh-full-resolution
run new newW1 ""
run old oldW1 ""
t=$(date +%s)
mkdir -p /tmp/sx && tar -xJf $C/xdist.tar.xz -C /tmp/sx   # pytest-xdist + execnet (pure Python), the venv's
(cd /tmp/new && PYTHONPATH=/tmp/sx:$PYTHONPATH timeout 170 python3 -m pytest -q -m gpu tests/mesh -n 4 --dist loadfile \
   -p no:cacheprovider > $O/pytest_gpu_mesh.txt 2>&1)
echo "pytest rc=$? $(( $(date +%s) - t )) s"; tail -4 $O/pytest_gpu_mesh.txt
run new newF2 --mesh-full-resolution
run old oldF2 --mesh-full-resolution
run new newF_w1 --mesh-full-resolution "GPULAB_MESH_SETTLE_WORKERS=1"
run new newF_sw0 --mesh-full-resolution "GPULAB_MESH_SWITCH_US=0"
echo "total $(( $(date +%s) - T0 )) s"
