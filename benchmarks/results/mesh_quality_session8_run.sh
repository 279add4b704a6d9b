#!/bin/bash
# (segment.AUTO_K_LAYOUT, the candidates' switch, was removed after the three calls: re-run at commit 24620ec)
# mesh-quality helper, session 8, device call 1 (H100): pytest -m gpu tests/mesh; 17k/50k k = auto timing of the
# candidates against the defaults; LOCO over 5 working-mesh draws (pf3 seeds 101, 201-204) of the defaults (both
# modes) and of AUTO_K_LAYOUT = remerge / vote (k = auto). The rule: benchmarks/results/mesh_quality_session8.md.
#   carry: .carry-mq8/c (psb.npzx, pf3s*.npzx lossless packs, the fast-simplification wheel)
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=.carry-mq8/c; W=/tmp/mq8; mkdir -p $W
python3 -c "import fast_simplification" 2>/dev/null || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/*.whl && export PYTHONPATH=/tmp/site; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git log --oneline -1 2>/dev/null; } | tee $OUT/device.txt
echo "== mesh GPU tests [$(( $(date +%s) - T0 )) s]"
timeout 170 python3 -m pytest -m gpu tests/mesh -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -8
echo "== unpack [$(( $(date +%s) - T0 )) s]"
python3 benchmarks/mesh_simplify_session7_pack.py unpack $C/psb.npzx $W/psb.npz
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
grid = []
for what, extra in (("both", []), ("auto", ["segment.AUTO_K_LAYOUT=remerge"]), ("auto", ["segment.AUTO_K_LAYOUT=vote"])):
    for s in ("101", "201", "202", "203", "204"):
        tag = extra[0].rpartition("=")[2] if extra else "defaults"
        grid.append({"name": f"{tag} s{s}", "set": [f"stored={W}/pf3s{s}.npz"] + extra, "what": what,
                     "pools": [f"s{s}"]})
(W / "grid.json").write_text(json.dumps(grid, indent=1))
PY
echo "== timing [$(( $(date +%s) - T0 )) s]"
timeout 90 python3 benchmarks/mesh_quality.py timing --files $W/101.off,$W/281.off --k auto --device cuda --repeat 3 \
  --sets ";segment.AUTO_K_LAYOUT=remerge;segment.AUTO_K_LAYOUT=vote" --json $OUT/timing.json 2>&1 | grep -v Warn
echo "== LOCO CV [$(( $(date +%s) - T0 )) s]"
timeout ${CVT:-250} python3 benchmarks/mesh_psb.py --cv --cv-grid $W/grid.json --data $W/psb.npz --device cuda --jobs 16 \
  --cv-out $OUT/cv.jsonl --markdown $OUT/cv.md 2>&1 | grep -v Warn | tail -30
echo "done after $(( $(date +%s) - T0 )) s"; date -u
