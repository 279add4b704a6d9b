"""CPU: the k = "auto" recipe's retraining noise. Every shared mesh (the library's default working mesh: the canonical
order, salt 0) at k = "auto" under its category's held-out fold of three retrainings of session 11's recipe on equally
good stores (C: shuffled listings; K: canonical salts; H: hash-alone salts; rounds canon22 / canon22b) and under the
shipped model (ALL, not held out)."""
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
#: the rounds' fold models, unpacked (K's and H's were not kept in the tree: their SHA-1s are in the calls' models.sha1)
MODELS = {"C": "/tmp/s22/m1/models_auto/C", "K": "/tmp/s22/m1/models_auto/K", "H": "/tmp/s22/m2/models_auto/H"}


def job(mid):
    import mesh_psb as mp

    from gpu_kernels.mesh import learned as ln
    from gpu_kernels.mesh import segment as sg
    from gpu_kernels.mesh.metrics import rand_index_error
    data = mp.DEFAULT_DATA
    cat = mp.category_of(mid)
    v, f = mp.load_mesh(data, mid)
    humans = mp.load_human(data, mid)
    hk = [int(np.unique(h).size) for h in humans]
    prep = sg.prepare_mesh(v, f, device="cpu")
    out = {"mesh": mid, "cat": cat}
    for name, d in list(MODELS.items()) + [("shipped", None)]:
        ln.MODEL_AUTO = ln.TreeModel.from_npz(f"{d}/{cat}.npz") if d else None
        seg = sg.segment_prepared(prep, k="auto", device="cpu")
        out[name] = float(np.mean([rand_index_error(seg.labels, h) for h in humans]))
        out[name + "_in"] = bool(min(hk) <= int(seg.k) <= max(hk))
    return out


if __name__ == "__main__":
    import mesh_psb as mp
    ids = mp.mesh_ids(mp.DEFAULT_DATA)
    with ProcessPoolExecutor(2) as ex:
        for r in ex.map(job, ids):
            print(json.dumps(r), flush=True)
