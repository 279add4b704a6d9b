"""CPU cross-check of round canon22 / canon22b: k = "auto" of the control's working meshes (shuffled listings, 'S')
and the canonical ones (salts, 'K': hash + Z-order; 'H': hash alone) under each arm's held-out k = "auto" fold
model of the mesh's category (C, K, H) and the shipped one: does the k = "auto" loss follow the working meshes or
the models?"""
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / 'benchmarks')]

MODELS = {"C": "/tmp/s22/m1/models_auto/C", "K": "/tmp/s22/m1/models_auto/K", "H": "/tmp/s22/m2/models_auto/H"}

def job(a):
    import mesh_psb as mp
    from mesh_simplify_session7_stores import shuffled

    from gpu_kernels.mesh import learned as ln
    from gpu_kernels.mesh import segment as sg
    from gpu_kernels.mesh import simplify as simp
    from gpu_kernels.mesh.metrics import rand_index_error
    mid, seed, wm = a
    data = mp.DEFAULT_DATA
    cat = mp.category_of(mid)
    v, f = mp.load_mesh(data, mid)
    humans = mp.load_human(data, mid)
    if wm == "S":
        v2, f2, pf = shuffled(v, f, seed, with_order=True)
    else:
        simp.CANONICAL_ORDER, simp.CANONICAL_SALT, simp.CANONICAL_ZORDER = True, seed, wm == "K"
        v2, f2, pf = v, f, np.arange(len(f))
    prep = sg.prepare_mesh(v2, f2, device="cpu")
    out = {"mesh": mid, "cat": cat, "seed": seed, "wm": wm}
    for name, d in list(MODELS.items()) + [("shipped", None)]:
        ln.MODEL_AUTO = ln.TreeModel.from_npz(f"{d}/{cat}.npz") if d else None
        seg = sg.segment_prepared(prep, k="auto", device="cpu")
        lab = np.empty_like(seg.labels)
        lab[pf] = seg.labels
        out[name] = float(np.mean([rand_index_error(lab, h) for h in humans]))
        out[name + "_k"] = int(seg.k)
    return out

if __name__ == "__main__":
    ids = [int(x) for x in sys.argv[1].split(",")]
    seeds = [int(x) for x in sys.argv[2].split(",")]
    tasks = [(i, s, wm) for i in ids for s in seeds for wm in ("S", "K", "H")]
    with ProcessPoolExecutor(2) as ex:
        for r in ex.map(job, tasks):
            print(json.dumps(r), flush=True)
