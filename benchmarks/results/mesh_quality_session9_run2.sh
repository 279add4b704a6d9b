#!/bin/bash
# carry: .carry-mq9/c2
# mesh-quality helper, session 9, device call 2 (H100): LOCO over 5 new working-mesh draws (pf3 seeds 306-310) of
# the defaults (both modes), "relayout" (R2 through the library: autok.relayout, k = "auto") and "k_relayout"
# (P2, the protocol's k); the timing of both against the defaults (17k, 50k); pytest -m gpu on the layout and
# thin-part tests. The rule: benchmarks/results/mesh_quality_session9.md (round 2).
#   carry: .carry-mq9/c2 (off.tar.xz + humans.npzx, pf3s306-310 lossless packs, the fast-simplification wheel)
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=.carry-mq9/c2; W=/tmp/mq9; mkdir -p $W
python3 -c "import fast_simplification" 2>/dev/null || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/*.whl && export PYTHONPATH=/tmp/site; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git log --oneline -1 2>/dev/null; } | tee $OUT/device.txt
echo "== unpack [$(( $(date +%s) - T0 )) s]"
mkdir -p $W/psbdir && tar -xJf $C/off.tar.xz -C $W/psbdir
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
for f in $C/pf3s*.npzx; do python3 benchmarks/mesh_simplify_session7_pack.py unpack $f $W/$(basename $f .npzx).npz; done
python3 - $W <<'PY'
import json, sys, pathlib
sys.path.insert(0, "benchmarks")
import mesh_psb as mp
W = pathlib.Path(sys.argv[1])
for mid in (101, 281):  # the timing meshes (17k, 50k faces), written from the PSB pack
    v, f = mp.load_mesh(W / "psb.npz", mid)
    with open(W / f"{mid}.off", "w") as fh:
        fh.write(f"OFF\n{len(v)} {len(f)} 0\n")
        fh.writelines(f"{x!r} {y!r} {z!r}\n" for x, y, z in v.tolist())
        fh.writelines(f"3 {a} {b} {c}\n" for a, b, c in f.tolist())
seeds = ("306", "307", "308", "309", "310")
grid = []
for name, what, extra in (("defaults", "both", {}), ("relayout", "auto", {"relayout": True}),
                          ("k_relayout", "protocol", {"k_relayout": True})):
    for s in seeds:
        grid.append({"name": f"{name} s{s}", "set": [f"stored={W}/pf3s{s}.npz"], "what": what, "pools": [f"s{s}"],
                     **extra})
(W / "grid.json").write_text(json.dumps(grid, indent=1))
PY
echo "== LOCO CV [$(( $(date +%s) - T0 )) s]"
timeout ${CVT:-330} python3 benchmarks/mesh_psb.py --cv --cv-grid $W/grid.json --data $W/psb.npz --device cuda --jobs 16 \
  --cv-out $OUT/cv.jsonl --markdown $OUT/cv.md 2>&1 | grep -v Warn | grep -v "^|" | tail -30
python3 benchmarks/mesh_quality_session9.py judge $OUT/cv.jsonl --json $OUT/judged.json 2>&1 | tail -40
echo "== timing [$(( $(date +%s) - T0 )) s]"
timeout 90 python3 benchmarks/mesh_quality_session9.py timing --files $W/101.off,$W/281.off --device cuda --repeat 3 \
  --k 6 --json $OUT/timing.json 2>&1 | grep -v Warn
echo "== mesh GPU tests [$(( $(date +%s) - T0 )) s]"
timeout $(( 530 - $(date +%s) + T0 )) python3 -m pytest -m gpu tests/mesh/test_quality9_layout.py tests/mesh/test_mesh_thin_parts.py \
  -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -6
echo "done after $(( $(date +%s) - T0 )) s"; date -u
