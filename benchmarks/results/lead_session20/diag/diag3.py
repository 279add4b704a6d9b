"""Integer-k candidates from a superset of start counts (K_STARTS = the superset's counts >= k), carried to full res,
scored against all humans
saved to evaluate subsets' medoids offline. CPU, shipped model (s20), NOT held out."""
import json
import sys
import time

import numpy as np

sys.path.insert(0, "benchmarks")
from pathlib import Path

import mesh_psb as mp

from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh.metrics import rand_index_error as ri

SUPER = (16, 20, 24, 30, 36, 42, 48)
data = Path("/work/shared/data/psb")
out = Path("/work/team/s20/diag3")
out.mkdir(exist_ok=True)
cap = []
occ = sg.choose_consensus
def cc(graph, labelings, rule=None):
    r = occ(graph, labelings, rule)
    cap.append([np.asarray(lab).copy() for lab in labelings])
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
    near = prep.nearest[0] if prep.nearest else np.arange(f.shape[0])
    store = {"areas": np.asarray((prep.working[0][1] if prep.working and prep.working[0][1] is not None else prep.graph).areas)}
    rows = {}
    for k in hk:
        sts = tuple(s for s in SUPER if s >= k)
        sg.K_STARTS = sts if sts else None
        cap.clear()
        s = sg.segment_prepared(prep, k=k, device="cpu")
        final = float(np.mean([ri(s.labels, h) for h in H]))
        if not cap or not sts or s.info.get("k_start_scores") is None:
            rows[k] = {"final": final}
            continue
        labs = cap[-1]
        assert len(labs) == len(sts), (len(labs), sts)
        cands = [float(np.mean([ri(lab[near], h) for h in H])) for lab in labs]
        rows[k] = {"final": final, "starts": list(sts), "ri": cands}
        store[f"k{k}"] = np.stack(labs).astype(np.int16)
    np.savez_compressed(out / f"{mid}.npz", **store)
    (out / f"{mid}.json").write_text(json.dumps({"hk": [int(np.unique(h).size) for h in H], "rows": {str(k): r for k, r in rows.items()}}))
    print(mid, round(time.time() - t, 1), flush=True)
