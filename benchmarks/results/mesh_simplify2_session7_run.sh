#!/bin/bash
# mesh-simplify-2 (session 7): LOCO of 5 stored working-mesh sets (.carry-msimp2/$1/*.npzx, lossless packs made on
# the dev CPU with pymeshlab) on the H100.  bash benchmarks/results/mesh_simplify2_session7_run.sh a|b
set -o pipefail
export PYTHONUNBUFFERED=1
P=$1; C=.carry-msimp2; W=/tmp/msimp2; T0=$(date +%s); mkdir -p $W
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; }
python3 benchmarks/mesh_simplify_session7_pack.py unpack $C/common/psb.npzx $W/psb.npz
for f in $C/$P/*.npzx; do python3 benchmarks/mesh_simplify_session7_pack.py unpack $f $W/$(basename $f .npzx).npz; done
python3 - "$W" $C/$P/*.npzx > $W/grid.json <<'PY'
import json, sys, pathlib
names = [pathlib.Path(p).stem for p in sys.argv[2:]]
print(json.dumps([{"name": n, "set": [f"stored={sys.argv[1]}/{n}.npz"], "what": "both", "pools": [n]} for n in names], indent=1))
PY
cat $W/grid.json | tr -d '\n'; echo
echo "== LOCO CV [$(( $(date +%s) - T0 )) s]"
timeout 260 python3 benchmarks/mesh_psb.py --cv --cv-grid $W/grid.json --data $W/psb.npz --device cuda --jobs 16 \
  --cv-out $OUT/cv_$P.jsonl --markdown $OUT/cv_$P.md 2>&1 | grep -v Warn | tail -40
echo "done after $(( $(date +%s) - T0 )) s"; date -u
