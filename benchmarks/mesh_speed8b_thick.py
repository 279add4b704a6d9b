"""Issue 22 (session 8b): where the GPU thickness of the 4,000-face working mesh spends its time
(cProfile, the plain and the fused search alternating), and the number of shrinking-ball steps.

Example::

    python benchmarks/mesh_speed8b_thick.py 101.off
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import segment, thickness  # noqa: E402
from gpu_kernels.mesh.dualgraph import clean_mesh, dual_graph  # noqa: E402
from gpu_kernels.mesh.simplify import simplify_mesh  # noqa: E402


def main(path: str) -> int:
    import cupy

    v, f = read_mesh(path)
    v, f, _, _ = clean_mesh(v, f)
    vs, fs = simplify_mesh(v, f, segment.working_faces(f.shape[0], None) or 4000)
    vs, fs, _, _ = clean_mesh(vs, fs)
    g = dual_graph(vs, fs, delta=segment.DEFAULT_DELTA, eta_convex=segment.DEFAULT_ETA_CONVEX, thickness=False)

    def th():
        return thickness.face_thickness(vs, fs, g.centroids, g.normals, src=g.src, dst=g.dst, areas=g.areas,
                                        xp=cupy)
    out = {}
    for fused in (False, True) * 2:
        thickness.FUSED_ROW_MIN = fused
        out[fused] = th()
    print("faces", g.n, "same", bool(np.array_equal(out[False], out[True])))
    for fused in (False, True):
        thickness.FUSED_ROW_MIN = fused
        ts = []
        for _ in range(15):
            t0 = time.perf_counter()
            th()
            ts.append(time.perf_counter() - t0)
        print(f"thick8b fused={fused} min {1e3 * min(ts):.2f} ms median {1e3 * float(np.median(ts)):.2f} ms")
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(5):
            th()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(12)
    thickness.FUSED_ROW_MIN = True
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
