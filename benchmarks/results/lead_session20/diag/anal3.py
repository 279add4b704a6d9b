import json
import sys

import numpy as np

sys.path.insert(0, ".")
from pathlib import Path

from gpu_kernels.mesh.segment import agreement_matrix

d = Path("/work/team/s20/diag3")
SUPER = (16, 20, 24, 30, 36, 42, 48)
subsets = [(24, 30, 36), (20, 24, 30, 36, 42), (16, 20, 24, 30, 36, 42, 48), (24, 30, 36, 42, 48), (20, 30, 40)[:0] or (20, 24, 30), (30, 36, 42), (24, 36, 48), (20, 30, 42), (16, 24, 36), (24, 30, 36, 42), (20, 24, 30, 36)]
data = {}
for jf in sorted(d.glob("*.json"), key=lambda p: int(p.stem)):
    js = json.loads(jf.read_text())
    z = np.load(jf.with_suffix(".npz"))
    A = {k: agreement_matrix(list(z[f"k{k}"]), z["areas"]) for k, r in js["rows"].items() if "ri" in r}
    data[int(jf.stem)] = (js, A)
def score(sub, mid):
    js, A = data[mid]
    per = {}
    for k, r in js["rows"].items():
        if "ri" not in r:
            per[k] = r["final"]
            continue
        idx = [r["starts"].index(s) for s in sub if s in r["starts"]]
        if int(k) > min(sub) or not idx:
            per[k] = r["final"]
            continue  # (approximation: the pipeline's factors path is not in this run)
        a = A[k][np.ix_(idx, idx)].sum(1)
        per[k] = r["ri"][idx[int(np.argmax(a))]]
    return float(np.mean([per[str(k)] for k in js["hk"]]))
res = {}
for sub in subsets:
    v = {m: score(sub, m) for m in data}
    res[sub] = v
    arr = np.array(list(v.values()))
    cats = {}
    for m, x in v.items():
        cats.setdefault((m - 1) // 20, []).append(x)
    print(sub, f"mean {arr.mean():.4f} over {int((arr > 0.3).sum())}", [m for m, x in v.items() if x > 0.3])
base = res[(24, 30, 36)]
for sub in subsets[1:]:
    cb = {}
    for m in data:
        cb.setdefault((m - 1) // 20, []).append(res[sub][m] - base[m])
    cm = [np.mean(x) for x in cb.values()]
    print(sub, "categories better/worse", sum(c < -1e-4 for c in cm), sum(c > 1e-4 for c in cm))
