"""Integer-k consensus candidates (overseg factors + auto starts, merged to k) per human k, carried to full res and
scored against all humans
which one the medoid keeps. CPU, shipped model (diagnostic only, not held out)."""
import json
import sys
import time

import numpy as np

sys.path.insert(0, "benchmarks")
from pathlib import Path

import mesh_psb as mp

from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh.metrics import rand_index_error as ri

data = Path("/work/shared/data/psb")
out = Path("/work/team/s20/diag2")
out.mkdir(exist_ok=True)
cap = []
occ = sg.choose_consensus
def cc(graph, labelings, rule=None):
    r = occ(graph, labelings, rule)
    cap.append(([np.asarray(lab).copy() for lab in labelings], r[0], graph.n))
    return r
sg.choose_consensus = cc
ids = [int(a) for a in sys.argv[1:]] or mp.mesh_ids(data)
for mid in ids:
    if (out / f"{mid}.json").exists():
        continue
    t = time.time()
    v, f = mp.load_mesh(data, mid)
    H = mp.load_human(data, mid)
    hk = sorted({int(np.unique(h).size) for h in H})
    prep = sg.prepare_mesh(v, f, device="cpu")
    near = prep.nearest[0] if prep.nearest else None
    rows = {}
    store = {"near": near if near is not None else np.arange(f.shape[0]), "areas": np.asarray((prep.working[0][1] if prep.working and prep.working[0][1] is not None else prep.graph).areas)}
    for k in hk:
        cap.clear()
        s = sg.segment_prepared(prep, k=k, device="cpu")
        final = float(np.mean([ri(s.labels, h) for h in H]))
        if not cap:
            rows[k] = {"final": final}
            continue
        labs, j, n = cap[-1]
        cands = []
        for lab in labs:
            lf = lab[near] if near is not None else lab
            c = np.bincount(np.unique(lf, return_inverse=True)[1]) / lf.size
            cands.append({"ri": float(np.mean([ri(lf, h) for h in H])), "k": int(c.size), "top": float(c.max())})
        rows[k] = {"final": final, "chosen": int(j), "cands": cands}
        store[f"k{k}"] = np.stack(labs).astype(np.int16)
    (out / f"{mid}.json").write_text(json.dumps({"hk": [int(np.unique(h).size) for h in H], "rows": {str(k): r for k, r in rows.items()}}))
    np.savez_compressed(out / f"{mid}.npz", **store)
    print(mid, round(time.time() - t, 1), flush=True)
