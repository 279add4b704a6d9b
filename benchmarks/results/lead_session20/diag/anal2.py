import json
import sys

import numpy as np

sys.path.insert(0, ".")
from pathlib import Path

from gpu_kernels.mesh.segment import agreement_matrix

d = Path("/work/team/s20/diag2")
NS = 3
def rules(js, z):
    out = {}
    for k, r in js["rows"].items():
        if "cands" not in r:
            v = r["final"]
            out[int(k)] = dict(med=v, orc=v, sto=v, fac=v, dom=v, fin=v, stv=v, s30=v)
            continue
        ri = np.array([c["ri"] for c in r["cands"]])
        ks = np.array([c["k"] for c in r["cands"]])
        top = np.array([c["top"] for c in r["cands"]])
        L = z[f"k{k}"]
        A = agreement_matrix(list(L), z["areas"])
        sc = A.sum(1)
        n = len(L)
        st = list(range(n - NS, n))
        fa = list(range(n - NS))
        def med(ix, A=A):
            s = A[np.ix_(ix, ix)].sum(1)
            return ix[int(np.argmax(s))]
        full = [i for i in range(n) if ks[i] == ks.max()]
        out[int(k)] = dict(med=ri[r["chosen"]], orc=ri.min(), sto=ri[med(st)], fac=ri[med(fa)] if len(fa) > 1 else ri[fa[0]],
                           dom=ri[full[int(np.argmax(top[full]))]], fin=r["final"], stv=ri[st[int(np.argmax(sc[st]))]], s30=ri[n-2])
    return out
tot = {}
for jf in sorted(d.glob("*.json"), key=lambda p: int(p.stem)):
    js = json.loads(jf.read_text())
    z = np.load(jf.with_suffix(".npz"))
    o = rules(js, z)
    per = {rn: float(np.mean([o[k][rn] for k in js["hk"]])) for rn in next(iter(o.values()))}
    tot[int(jf.stem)] = per
rn = list(next(iter(tot.values())))
print("meshes", len(tot))
for r in rn:
    v = np.array([t[r] for t in tot.values()])
    print(f"{r}: mean {v.mean():.4f} over0.30 {int((v > 0.3).sum())} ", [m for m, t in tot.items() if t[r] > 0.3])
cat = {}
for m, t in tot.items():
    c = (m - 1) // 20
    cat.setdefault(c, []).append(t["sto"] - t["med"])
d = {c: np.mean(v) for c, v in cat.items()}
print("categories better/worse:", sum(v < -1e-4 for v in d.values()), sum(v > 1e-4 for v in d.values()), {c * 20 + 1: round(v, 4) for c, v in d.items()})
dm = np.array([t["sto"] - t["med"] for t in tot.values()])
print("meshes better/worse by >0.01:", int((dm < -0.01).sum()), int((dm > 0.01).sum()), "worst", sorted(((round(t['sto']-t['med'],3), m) for m, t in tot.items()))[-5:])
