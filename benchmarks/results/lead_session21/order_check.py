"""Lead, session 21 (issue 22): does the mesh tool's result depend on the order in which the file lists the mesh?
The library's ``segment_mesh`` (defaults, k = "auto" and k = 2 / 6) on a PSB mesh as the file lists it and in
``--draws`` seeded relistings (vertices and faces shuffled, each face's start rotated), mapped back to the file's
faces: the labels' SHA-1 per listing, and the Rand Index error between each relisting and the file's order.

    python order_check.py MESH.off [MESH.off ...] --device cuda --draws 3 [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))

from gpu_kernels.mesh import segment as sg  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402
from gpu_kernels.mesh.metrics import rand_index_error  # noqa: E402


def read_off(path: Path):
    tok = path.read_text().split()
    assert tok[0] == "OFF"
    nv, nf = int(tok[1]), int(tok[2])
    v = np.array(tok[4:4 + 3 * nv], float).reshape(nv, 3)
    f = np.array(tok[4 + 3 * nv:4 + 3 * nv + 4 * nf], np.int64).reshape(nf, 4)[:, 1:]
    return v, f


def relisted(v, f, seed):
    rng = np.random.default_rng(seed)
    vp, fp = rng.permutation(len(v)), rng.permutation(len(f))
    new_of_old = np.empty_like(vp)
    new_of_old[vp] = np.arange(len(v))
    return v[vp], np.roll(new_of_old[f[fp]], seed % 3 + 1, axis=1), fp


def sha(a) -> str:
    return hashlib.sha1(np.ascontiguousarray(a, np.int64).tobytes()).hexdigest()[:12]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("meshes", nargs="+", type=Path)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    out = {"canonical_order": getattr(simp, "CANONICAL_ORDER", None), "rows": []}
    for path in a.meshes:
        v, f = read_off(path)
        for k in ("auto", 2, 6):
            base = sg.segment_mesh(v, f, k=k, device=a.device)
            row = {"mesh": path.name, "faces": len(f), "k": k, "k_got": [int(base.k)], "sha": [sha(base.labels)],
                   "ri_vs_file_order": []}
            for s in range(1, a.draws + 1):
                v2, f2, fp = relisted(v, f, s)
                r = sg.segment_mesh(v2, f2, k=k, device=a.device)
                back = np.empty_like(r.labels)
                back[fp] = r.labels
                row["k_got"].append(int(r.k))
                row["sha"].append(sha(back))
                row["ri_vs_file_order"].append(round(rand_index_error(back, base.labels), 6))
            print(json.dumps(row), flush=True)
            out["rows"].append(row)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
