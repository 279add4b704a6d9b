#!/bin/bash
# carry: .carry-mq9/c3
# mesh-quality helper, session 9, device call 3 (H100): the auto_layout keyword through segment_mesh on the GPU
# (tests/mesh/test_quality9_keyword.py, test_quality9_layout.py, the thin-part tests) and where R2's extra time goes
# (k = "auto" on a fresh prepared mesh, then the integer k at its k on the same one, and the keyword on a fresh one;
# seconds and info["timings"], PSB 101 and 281, best of 4; the prepare step is not timed).
#   carry: .carry-mq9/c3 (101.off, 281.off, the fast-simplification wheel)
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=.carry-mq9/c3
python3 -c "import fast_simplification" 2>/dev/null || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/*.whl && export PYTHONPATH=/tmp/site; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; git log --oneline -1 2>/dev/null; } | tee $OUT/device.txt
echo "== GPU tests [$(( $(date +%s) - T0 )) s]"
timeout 200 python3 -m pytest -m gpu tests/mesh/test_quality9_keyword.py tests/mesh/test_quality9_layout.py \
  tests/mesh/test_mesh_thin_parts.py -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -6
echo "== R2 cost breakdown [$(( $(date +%s) - T0 )) s]"
timeout 120 python3 - $C <<'PY' 2>&1 | grep -v Warn
import json, os, sys, time
sys.path.insert(0, ".")
from app.io.mesh_io import read_mesh
from gpu_kernels.mesh import segment as sg
rows = []
for name in ("101", "281"):
    v, f = read_mesh(os.path.join(sys.argv[1], name + ".off"))
    best = {}
    for _ in range(4):
        for what in ("auto", "integer", "on"):
            if what != "integer":  # a fresh prepared mesh: the auto starts' clusterings are not memoised yet
                prep = sg.prepare_mesh(v, f, device="cuda")
            t0 = time.perf_counter()
            if what == "auto":
                s = sg.segment_prepared(prep, k="auto", device="cuda")
                k = int(s.k)
            elif what == "integer":
                s = sg.segment_prepared(prep, k=k, device="cuda")
            else:
                s = sg.segment_mesh(v, f, k="auto", device="cuda", prepared=prep, auto_layout="concave")
            t = time.perf_counter() - t0
            if what not in best or t < best[what][0]:
                best[what] = (t, {a: round(b, 4) for a, b in s.info["timings"].items() if isinstance(b, float)})
    for what, (t, tim) in best.items():
        print(f"{name} {what} (k {k}): {t:.4f} s  {tim}")
        rows.append({"mesh": name, "what": what, "k": k, "seconds": t, "timings": tim})
json.dump(rows, open(os.path.join(os.environ["OUT"], "breakdown.json"), "w"), indent=1)
PY
echo "done after $(( $(date +%s) - T0 )) s"; date -u
