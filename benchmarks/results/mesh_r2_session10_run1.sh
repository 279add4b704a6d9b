#!/bin/bash
# carry: .carry-r2/c (off.tar.xz + humans.npzx, 13.4 MB) and .carry-msp10 (mesh-speed's slim pymeshlab cp312,
# pml.tar.xz, and the fast-simplification wheel; read only)
# mesh-r2, session 10, device call 1 (H100): GPU tests of the auto-k layout (quality9/quality10); the
# pre-registered round of benchmarks/results/mesh_r2_session10.md (10 new working-mesh draws pf3s1001-1010, made
# here with the carried pymeshlab; LOCO over 76 PSB meshes at k = "auto": defaults, R2, R2W); the one-process A/B
# (17k, 50k, pymeshlab); the rest of pytest -m gpu tests/mesh.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; C=$R/.carry-r2/c; W=/tmp/r2; mkdir -p $W
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git log --oneline -1 2>/dev/null; } | tee $OUT/device.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $R/.carry-msp10/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $R/.carry-msp10/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -c "from gpu_kernels.mesh.simplify import available_simplifiers as a; print('simplifiers:', a())"
echo "== quality9/10 GPU tests [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 -m pytest -m gpu tests/mesh/test_quality9_*.py tests/mesh/test_quality10_*.py -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -4
echo "== data, stores [$(( $(date +%s) - T0 )) s]"
mkdir -p $W/psbdir $W/stores && tar -xJf $C/off.tar.xz -C $W/psbdir
python3 benchmarks/mesh_simplify_session7_pack.py unpack $C/humans.npzx $W/humans.npz
python3 - $W <<'PY'
import sys, pathlib, numpy as np
sys.path.insert(0, "benchmarks")
import mesh_psb as mp
W = pathlib.Path(sys.argv[1])
h = np.load(W / "humans.npz")
store = {k: h[k] for k in h.files}
for p in sorted((W / "psbdir" / "off").glob("*.off")):
    v, f = mp.load_off(p)
    store[f"v_{p.stem}"] = v
    store[f"f_{p.stem}"] = f.astype(np.int32)
np.savez(W / "psb.npz", **store)
print("psb.npz assembled:", len(store), "arrays")
PY
for s in 1001 1002 1003 1004 1005 1006 1007 1008 1009 1010; do
  timeout 200 python3 benchmarks/mesh_simplify_session7_stores.py pf3s$s --data $W/psb.npz --out $W/stores > $W/st$s.log 2>&1 &
done
wait; cat $W/st*.log | grep -v Warn
python3 - $W <<'PY' | tee $OUT/store_sha1.txt
import sys, hashlib, pathlib, numpy as np
for p in sorted((pathlib.Path(sys.argv[1]) / "stores").glob("*.npz")):
    z = np.load(p); h = hashlib.sha1()
    for k in sorted(z.files):
        h.update(k.encode()); h.update(np.ascontiguousarray(z[k]).tobytes())
    print(p.stem, len(z.files), h.hexdigest())
PY
python3 - $W <<'PY'
import json, sys, pathlib
W = pathlib.Path(sys.argv[1])
grid = [{"name": f"layout s{s}", "set": [f"stored={W}/stores/pf3s{s}.npz"], "what": "auto", "layout10": True,
         "pools": [f"s{s}"]} for s in range(1001, 1011)]
(W / "grid.json").write_text(json.dumps(grid, indent=1))
PY
echo "== LOCO CV [$(( $(date +%s) - T0 )) s]"
timeout ${CVT:-300} python3 benchmarks/mesh_psb.py --cv --cv-grid $W/grid.json --data $W/psb.npz --device cuda --jobs 16 \
  --cv-out $OUT/cv.jsonl 2>&1 | grep -v Warn | grep -v "^|" | tail -14
python3 benchmarks/results/mesh_r2_session10_judge.py $OUT/cv.jsonl --json $OUT/judged.json 2>&1 | tail -16
echo "== A/B [$(( $(date +%s) - T0 )) s]"
for m in 101 281; do python3 - $W $m <<'PY'
import sys, pathlib
sys.path.insert(0, "benchmarks")
import mesh_psb as mp
W, mid = pathlib.Path(sys.argv[1]), int(sys.argv[2])
v, f = mp.load_mesh(W / "psb.npz", mid)
with open(W / f"{mid}.off", "w") as fh:
    fh.write(f"OFF\n{len(v)} {len(f)} 0\n")
    fh.writelines(f"{x!r} {y!r} {z!r}\n" for x, y, z in v.tolist())
    fh.writelines(f"3 {a} {b} {c}\n" for a, b, c in f.tolist())
PY
done
timeout 150 python3 benchmarks/results/mesh_r2_session10_ab.py $W/101.off $W/281.off --device cuda --rounds 7 \
  --json $OUT/ab.json 2>&1 | grep -v Warn
echo "== mesh GPU tests [$(( $(date +%s) - T0 )) s]"
timeout $(( 560 - $(date +%s) + T0 )) python3 -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -6
echo "done after $(( $(date +%s) - T0 )) s"; date -u
