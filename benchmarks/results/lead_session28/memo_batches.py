"""Lead, session 28: does a mesh's result depend on which k ran on the prepared mesh before? (Rounds starts26 and
starts27 saw 7 / 9 of 1,824 k = "auto" rows differ between arms whose integer-k runs differ.)

Per mesh and working resolution (``--faces``), with ``segment.MEMO_FIXED_BATCHES`` = ``--fixed``:
  * tab order A: prepare, k = "auto", then every human k on the same prepared mesh (the memo and its hits);
  * order B: prepare again, every human k first, then k = "auto";
  * the labels' SHA-1s: k = "auto" A against B, and each human k A against B (B's are what a fresh one-shot gives);
  * the Princeton protocol's Rand Index error from B's integer k (each human k, scored against every human), and
    k = "auto"'s from A's;
  * with ``--clusters``: the clusterings themselves, the auto-k starts (24/30/36) alone in a batch against inside the
    batch of all seven integer-k starts (the same distance matrix): whether any representative differs.

    python benchmarks/results/lead_session28/memo_batches.py PSB.npz --fixed 0 --part 0/4 --device cuda > rows.jsonl
"""

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from gpu_kernels.mesh import segment  # noqa: E402
from gpu_kernels.mesh.cluster import fuzzy_cluster_many  # noqa: E402
from gpu_kernels.mesh.metrics import rand_index_error  # noqa: E402


def sha(a) -> str:
    return hashlib.sha1(np.ascontiguousarray(np.asarray(a, dtype=np.int64)).tobytes()).hexdigest()[:12]


def protocol(labels_by_k: dict, humans: list) -> float:
    cmp = {k: float(np.mean([rand_index_error(lab, h) for h in humans])) for k, lab in labels_by_k.items()}
    return float(np.mean([cmp[int(np.unique(h).size)] for h in humans]))


def clusters_differ(prep, device) -> dict:
    """The auto-k starts' clusterings alone and inside the seven-start batch, on the prepared mesh's largest
    component's distances: how many of the three have other representatives."""
    dists = prep.distances[0] if prep.distances else {}
    orders = (prep.orders[0] if prep.orders else None) or {}
    if not dists:
        return {"cl_checked": 0}
    c = max(dists, key=lambda i: dists[i].shape[0])
    D, order = dists[c], orders.get(c)
    auto = [int(x) for x in segment.AUTO_K_STARTS]
    allk = sorted(set(int(x) for x in segment.integer_k_starts()) | set(auto))
    alone = fuzzy_cluster_many(D, auto, order=order, device=device)
    inside = dict(zip(allk, fuzzy_cluster_many(D, allk, order=order, device=device), strict=True))
    differ = [x for x, fc in zip(auto, alone, strict=True) if not np.array_equal(fc.reps, inside[x].reps)]
    return {"cl_checked": len(auto), "cl_differ": differ}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", help="psb.npz (mesh_round_env.sh): v_<id>, f_<id>, s_<id>_<j>")
    ap.add_argument("--fixed", type=int, required=True)
    ap.add_argument("--faces", default="default,3000,4000")
    ap.add_argument("--part", default="0/1")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--ids", default="")
    ap.add_argument("--clusters", action="store_true")
    a = ap.parse_args()
    segment.MEMO_FIXED_BATCHES = bool(a.fixed)
    z = np.load(a.data)
    ids = sorted(int(k[2:]) for k in z.files if k.startswith("v_"))
    if a.ids:
        ids = [int(x) for x in a.ids.split(",")]
    i, n = (int(x) for x in a.part.split("/"))
    backend = None
    if a.clusters:
        from gpu_kernels.backend import get_backend
        backend = get_backend(a.device)
    for fs in a.faces.split(","):  # (every mesh at the first resolution first)
        for mid in ids[i::n]:
            v, f = z[f"v_{mid}"], z[f"f_{mid}"]
            humans = [z[k] for k in sorted(z.files) if k.startswith(f"s_{mid}_")]
            hk = sorted({int(np.unique(h).size) for h in humans})
            mf = segment.DEFAULT_MAX_FACES if fs == "default" else int(fs)
            t0 = time.perf_counter()
            kw = {"device": a.device, "max_faces": mf}
            pa = segment.prepare_mesh(v, f, **kw)
            auto_a = segment.segment_mesh(v, f, k="auto", prepared=pa, **kw)
            ks_a = {k: segment.segment_mesh(v, f, k=k, prepared=pa, **kw).labels for k in hk}
            pb = segment.prepare_mesh(v, f, **kw)
            ks_b = {k: segment.segment_mesh(v, f, k=k, prepared=pb, **kw).labels for k in hk}
            auto_b = segment.segment_mesh(v, f, k="auto", prepared=pb, **kw)
            row = {"mesh": mid, "faces": fs, "fixed": a.fixed, "auto_a": sha(auto_a.labels), "auto_b": sha(auto_b.labels),
                   "auto_same": sha(auto_a.labels) == sha(auto_b.labels),
                   "k_same": {k: sha(ks_a[k]) == sha(ks_b[k]) for k in hk},
                   "k_b": {k: sha(ks_b[k]) for k in hk},
                   "RI": protocol(ks_b, humans), "RI_after_auto": protocol(ks_a, humans),
                   "RI_auto": float(np.mean([rand_index_error(auto_a.labels, h) for h in humans])),
                   "RI_auto_b": float(np.mean([rand_index_error(auto_b.labels, h) for h in humans])),
                   "k_auto": int(auto_a.k), "k_auto_b": int(auto_b.k)}
            if a.clusters:
                row.update(clusters_differ(pa, backend))
            row["s"] = round(time.perf_counter() - t0, 2)
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
