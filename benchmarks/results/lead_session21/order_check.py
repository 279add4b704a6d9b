"""Lead, session 21 (issue 22): does the mesh tool's result depend on the order in which the file lists the mesh?
The library's ``segment_mesh`` (defaults, k = "auto" and k = 2 / 6) on a PSB mesh as the file lists it and in
``--draws`` seeded relistings (``mesh_simplify_session7_stores.shuffled``: vertices and faces shuffled, the faces'
starts rotated; calls 1 and 2 ran an inline copy of it with other draws, commit dabc7d4), mapped back to the file's
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

sys.path.insert(0, str(ROOT / "benchmarks"))

from mesh_psb import load_off  # noqa: E402
from mesh_simplify_session7_stores import shuffled  # noqa: E402

from gpu_kernels.mesh import segment as sg  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402
from gpu_kernels.mesh.metrics import rand_index_error  # noqa: E402


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
        v, f = load_off(path)
        for k in ("auto", 2, 6):
            base = sg.segment_mesh(v, f, k=k, device=a.device)
            row = {"mesh": path.name, "faces": len(f), "k": k, "k_got": [int(base.k)], "sha": [sha(base.labels)],
                   "ri_vs_file_order": []}
            for s in range(1, a.draws + 1):
                v2, f2, fp = shuffled(v, f, s, with_order=True)
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
