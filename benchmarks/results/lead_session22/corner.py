"""CPU (shipped models, NOT held out): is the pipeline sensitive to each face's corner order? k = "auto" and the
protocol per mesh for the judging draws' relisting (shuffled vertices and faces, all faces' corners rolled by one
amount: 'S') against the same with every face's corners rotated independently ('R', orientation kept)."""
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / 'benchmarks')]


def job(a):
    import mesh_psb as mp
    from mesh_simplify_session7_stores import shuffled

    from gpu_kernels.mesh import segment as sg
    from gpu_kernels.mesh.metrics import rand_index_error
    mid, seed, var = a
    data = mp.DEFAULT_DATA
    v, f = mp.load_mesh(data, mid)
    humans = mp.load_human(data, mid)
    hk = [int(np.unique(h).size) for h in humans]
    v2, f2, pf = shuffled(v, f, seed, with_order=True)
    if var == "R":
        r = np.random.default_rng(seed + 777).integers(3, size=f2.shape[0])
        f2 = np.take_along_axis(f2, (r[:, None] + np.arange(3)) % 3, axis=1)
    prep = sg.prepare_mesh(v2, f2, device="cpu")
    def back(lab):
        out = np.empty_like(lab)
        out[pf] = lab
        return out
    seg = sg.segment_prepared(prep, k="auto", device="cpu")
    auto = float(np.mean([rand_index_error(back(seg.labels), h) for h in humans]))
    ri = {}
    for k in sorted(set(hk)):
        s = sg.segment_prepared(prep, k=k, device="cpu")
        ri[k] = float(np.mean([rand_index_error(back(s.labels), h) for h in humans]))
    return {"mesh": mid, "cat": mp.category_of(mid), "seed": seed, "var": var, "auto": auto, "auto_k": int(seg.k),
            "P": float(np.mean([ri[k] for k in hk]))}

if __name__ == "__main__":
    ids = [int(x) for x in sys.argv[1].split(",")]
    seeds = [int(x) for x in sys.argv[2].split(",")]
    tasks = [(i, s, var) for i in ids for s in seeds for var in ("S", "R")]
    with ProcessPoolExecutor(2) as ex:
        for r in ex.map(job, tasks):
            print(json.dumps(r), flush=True)
