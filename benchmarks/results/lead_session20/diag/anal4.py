"""Selection among the five starts' results: medoid (shipped) vs the most concave boundaries vs oracle (diag3's
saved candidates
CPU
not held out)."""
import json
import sys

import numpy as np

sys.path.insert(0, "benchmarks")
sys.path.insert(0, ".")
from pathlib import Path

import mesh_psb as mp

from gpu_kernels.mesh import segment as sg

d = Path("/work/team/s20/diag3")
data = Path("/work/shared/data/psb")
SUB = (20, 24, 30, 36, 42)
tot = {}
for jf in sorted(d.glob("*.json"), key=lambda p: int(p.stem)):
    mid = int(jf.stem)
    js = json.loads(jf.read_text())
    z = np.load(jf.with_suffix(".npz"))
    v, f = mp.load_mesh(data, mid)
    prep = sg.prepare_mesh(v, f, device="cpu")
    g = prep.working[0][1] if prep.working and prep.working[0][1] is not None else prep.graph
    per = {}
    for k, r in js["rows"].items():
        if "ri" not in r or int(k) > min(SUB):
            per[k] = {x: r["final"] for x in ("med", "conc", "orc")}
            continue
        idx = [r["starts"].index(s) for s in SUB if s in r["starts"]]
        L = [z[f"k{k}"][i] for i in idx]
        if L[0].size != g.n:
            per[k] = {x: r["final"] for x in ("med", "conc", "orc")}
            continue
        j_med, _ = sg.choose_consensus(g, L, rule="medoid")
        j_con, _ = sg.choose_consensus(g, L, rule="concavity")
        ri = [r["ri"][i] for i in idx]
        per[k] = {"med": ri[j_med], "conc": ri[j_con], "orc": min(ri)}
    tot[mid] = {x: float(np.mean([per[str(k)][x] for k in js["hk"]])) for x in ("med", "conc", "orc")}
    print(mid, {x: round(v, 4) for x, v in tot[mid].items()}, flush=True)
for x in ("med", "conc", "orc"):
    a = np.array([t[x] for t in tot.values()])
    print(x, f"mean {a.mean():.4f} over {int((a > 0.3).sum())}", [m for m, t in tot.items() if t[x] > 0.3])
