#!/bin/bash
# carry: .carry-msp8 .carry-mq9/c3
# mesh-quality helper, session 9, device call 5 (H100): the lead's one-process A/B of R2 with pymeshlab carried
# (simplifier auto = fast+pymeshlab, the default install's path): k = "auto" end to end from the file, defaults
# against auto_layout="concave", interleaved round by round, 17k (PSB 101) and 50k (PSB 281).
set -o pipefail
export PYTHONUNBUFFERED=1
R=$PWD; C=$R/.carry-mq9/c3
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml; mkdir -p $P && tar -xJf $R/.carry-msp8/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
timeout 200 python3 - $C <<'PY' 2>&1 | grep -v Warn
import json, os, statistics, sys, time
sys.path.insert(0, ".")
from app.io.mesh_io import read_mesh
from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh.simplify import available_simplifiers
print("simplifiers:", available_simplifiers())
rows = {}
def once(path, layout):
    t0 = time.perf_counter()
    v, f = read_mesh(path)
    s = sg.segment_mesh(v, f, k="auto", device="cuda", auto_layout=layout)
    return time.perf_counter() - t0, s
for name in ("101", "281"):
    path = os.path.join(sys.argv[1], name + ".off")
    for lay in ("auto", "concave"):
        once(path, lay)  # warm-up
    for r in range(7):
        for lay in (("auto", "concave") if r % 2 == 0 else ("concave", "auto")):
            t, s = once(path, lay)
            rows.setdefault((name, lay), []).append(t)
            kept = s.info.get("auto_layout", {}).get("kept", "-")
    for lay in ("auto", "concave"):
        ts = rows[(name, lay)]
        print(f"{name} {lay}: best {min(ts)*1000:.1f} ms, median {statistics.median(ts)*1000:.1f} ms (k {s.k}; kept {kept})")
json.dump({f"{a} {b}": v for (a, b), v in rows.items()}, open(os.path.join(os.environ["OUT"], "ab.json"), "w"), indent=1)
PY
date -u
