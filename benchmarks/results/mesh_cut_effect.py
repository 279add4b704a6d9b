"""The full-resolution boundary cut's effect on the PSB score (issue 22): the defaults with
and without the re-cut after the working resolution's parts are carried back
(``refine_boundaries``), the protocol's k, on the first mesh of each category (the
simplifications served from a file, --stored, so that both variants see the same working
mesh). Run: ``python benchmarks/results/mesh_cut_effect.py --stored .carry-mesh/hyb.npz``."""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as psb  # noqa: E402

from gpu_kernels.mesh import segment as S  # noqa: E402
from gpu_kernels.mesh.metrics import rand_index_error  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=psb.DEFAULT_DATA)
    ap.add_argument("--stored", type=Path, default=None)
    ap.add_argument("--meshes", default=",".join(str(n) for n in psb.CATEGORIES))
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    psb._install_apsp_cache()
    if a.stored:
        psb._install_simplified(a.stored)
    rows = []
    for m in [int(x) for x in a.meshes.split(",")]:
        v, f = psb.load_mesh(a.data, m)
        humans = psb.load_human(a.data, m)
        hk = [int(np.unique(h).size) for h in humans]
        res = {}
        for cut in (True, False):
            t0 = time.perf_counter()
            cmp = {}
            for k in set(hk):
                lab = S.segment_mesh(v, f, k=k, device="cpu", refine_boundaries=cut).labels
                cmp[k] = float(np.mean([rand_index_error(lab, h) for h in humans]))
            res[cut] = (float(np.mean([cmp[k] for k in hk])), time.perf_counter() - t0)
        row = {"mesh": m, "category": psb.category_of(m), "faces": int(len(f)),
               "RI_cut": res[True][0], "RI_no_cut": res[False][0]}
        rows.append(row)
        print(f"{m:>4} {row['category']:<10} F={len(f):>6} with cut {row['RI_cut']:.4f}  without {row['RI_no_cut']:.4f}",
              flush=True)
    print(f"mean over {len(rows)}: with the full-resolution cut {np.mean([r['RI_cut'] for r in rows]):.4f}, "
          f"without {np.mean([r['RI_no_cut'] for r in rows]):.4f}")
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
