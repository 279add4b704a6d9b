import sys
import time

import numpy as np

sys.path.insert(0, "benchmarks")
from pathlib import Path

import mesh_psb as mp

from gpu_kernels.mesh import segment_mesh
from gpu_kernels.mesh.metrics import rand_index_error as ri

data = Path("/work/shared/data/psb")
def oracle(fine, h):
    out = np.empty_like(h)
    for c in np.unique(fine):
        m = fine == c
        out[m] = np.bincount(h[m]).argmax()
    return out
for mid in [int(a) for a in sys.argv[2:]]:
    v, f = mp.load_mesh(data, mid)
    H = mp.load_human(data, mid)
    hk = [int(np.unique(h).size) for h in H]
    for K in [int(x) for x in sys.argv[1].split(',')]:
        t = time.time()
        s = segment_mesh(v, f, k=K, device="cpu")
        orc = []
        best = []
        for h in H:
            o = oracle(s.labels, h)
            orc.append(np.mean([ri(o, g) for g in H]))
        print(mid, "K", K, "got", s.k, "oracle-protocol", round(float(np.mean(orc)), 3), "per-human", np.round(orc, 3).tolist(), "t", round(time.time()-t,1), flush=True)
        np.save(f"/work/team/s20/fine_{mid}_{K}.npy", s.labels)
