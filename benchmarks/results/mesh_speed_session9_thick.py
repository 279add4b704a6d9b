"""(A record of session 9: it runs on that session's code, e.g. ``git worktree add /tmp/s9 20114c9``;
session 10 removed ``thickness.FUSED_NEAREST`` and the CuPy product path it switched to.)

Issue 22 (session 9): are the thickness's GPU kernels (``gpu_kernels/cuda/mesh_thickness.cu``:
the search per step, ``thickness.FUSED_NEAREST``; the whole ball loop, ``LOOP_ON_DEVICE``)
bit-identical to the product path (cuBLAS, the steps on the host) on real working meshes, and how
long does each take?

For every mesh given: ``segment_mesh`` with the defaults, once with the product path and once
with today's defaults; the labels, the face colours and the working mesh's thickness are
compared bit for bit. On the working mesh of the first run, ``face_thickness`` is timed (best
of ``--repeats``) with the product path, the fused search (each order of its dot product,
``THICK_DOT_MODE`` 0, 1, 2) and the ball-loop kernel, and each one's thickness is compared with the
product path's. (Call 1 ran the search per step only: 76 of 76 the same in every order.)

Example (device call of session 9)::

    python benchmarks/results/mesh_speed_session9_thick.py (session 9 code only: it toggles the removed thickness.FUSED_NEAREST) psb/off/*.off
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import segment  # noqa: E402
from gpu_kernels.mesh import thickness as th  # noqa: E402


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    real_with = segment.with_thickness
    real_fused, real_mode, real_loop = th.FUSED_NEAREST, th.THICK_DOT_MODE, th.LOOP_ON_DEVICE
    cap: dict = {}

    def capture(graph, v, f, xp=None):
        out = real_with(graph, v, f, xp)
        cap["args"] = (graph, v, f, xp)
        cap["th"] = out.thickness
        return out

    segment.with_thickness = capture
    tot = {"labels": 0, "thickness": 0, "n": 0, "mode": {0: 0, 1: 0, 2: 0, "loop": 0}}
    times = {"product": [], 0: [], 1: [], 2: [], "loop": []}
    try:
        for path in args.meshes:
            v, f = read_mesh(path)
            res = {}
            for fused in (False, True):
                th.FUSED_NEAREST, th.THICK_DOT_MODE = (real_fused, real_mode) if fused else (False, 0)
                th.LOOP_ON_DEVICE = real_loop if fused else False
                cap.clear()
                seg = segment.segment_mesh(v, f, device=args.device)
                res[fused] = (seg.labels, seg.face_colors, cap.get("th"), cap.get("args"))
            same_lab = _same(res[False][0], res[True][0]) and _same(res[False][1], res[True][1])
            t0 = res[False][2]
            same_th = t0 is not None and _same(t0, res[True][2])
            tot["n"] += 1
            tot["labels"] += same_lab
            tot["thickness"] += same_th
            line = f"thick9 {Path(path).name:9s} F {f.shape[0]:6d} labels_same {int(same_lab)} thickness_same {int(same_th)}"
            if t0 is not None:
                graph, wv, wf, xp = res[False][3]
                kw = dict(src=graph.src, dst=graph.dst, areas=graph.areas, xp=xp)
                for mode in ("product", 0, "loop"):  # call 1: orders 1 and 2 as 0, 76 of 76
                    th.FUSED_NEAREST = mode != "product"
                    th.THICK_DOT_MODE = mode if mode in (0, 1, 2) else 0
                    th.LOOP_ON_DEVICE = mode == "loop"
                    best, out = None, None
                    for _ in range(args.repeats):
                        if xp is not None:
                            xp.cuda.Device().synchronize()
                        t = time.perf_counter()
                        out = th.face_thickness(wv, wf, graph.centroids, graph.normals, **kw)
                        dt = time.perf_counter() - t
                        best = dt if best is None else min(best, dt)
                    times[mode].append(best)
                    if mode != "product":
                        ok = _same(out, t0)
                        tot["mode"][mode] += ok
                        line += f"  {mode if mode == 'loop' else f'mode{mode}'} {int(ok)} {1e3 * best:.2f}ms"
                    else:
                        line += f"  product {1e3 * best:.2f}ms"
            print(line, flush=True)
    finally:
        segment.with_thickness = real_with
        th.FUSED_NEAREST, th.THICK_DOT_MODE, th.LOOP_ON_DEVICE = real_fused, real_mode, real_loop
    print(f"thick9 total meshes {tot['n']} labels+colours same {tot['labels']} thickness same {tot['thickness']} "
          f"per dot order {tot['mode']}", flush=True)
    for mode, t in times.items():
        if t:
            print(f"thick9 time {mode}: median {1e3 * np.median(t):.2f} ms  sum {1e3 * np.sum(t):.1f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
