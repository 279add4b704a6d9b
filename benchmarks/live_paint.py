"""The paint share of a live edit, apart from Qt (issue 20): the flow colour wheel at 1080p on
the CPU (NumPy, bands on threads) and on the GPU (from host arrays: upload, kernel, the RGBA
picture back into pinned memory; from device arrays: kernel and copy back), and the mesh's
software picture of the 17k-face PSB mesh: drawing the triangles (once per mesh and size)
against recolouring the face numbers (each result). Medians of ``--repeat`` runs, in ms.

    python benchmarks/live_paint.py --device cuda --data ../shared/data --json paint.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import time_cpu  # noqa: E402


def _median_ms(fn, repeat):
    return 1000 * time_cpu(fn, repeat=repeat)["median"]


def flow_paint(device: str, repeat: int) -> dict:
    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow import colorwheel as cw

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:1080, 0:1920].astype(np.float32)
    u = (np.sin(xx / 200) * 10 + rng.standard_normal(xx.shape) * 0.3).astype(np.float32)
    v = (np.cos(yy / 150) * 8 + rng.standard_normal(xx.shape) * 0.3).astype(np.float32)
    q = rng.random(u.shape).astype(np.float32)
    kw = {"alpha": 255, "quality": q, "threshold": 0.2}
    out = {"cpu_threads": os.cpu_count()}
    out["cpu_rgba_ms"] = _median_ms(lambda: cw.flow_to_rgba(u, v, device="cpu", **kw), repeat)
    be = get_backend(device)
    if be.is_gpu:
        xp = be.xp
        cw.flow_to_rgba(u, v, device=be, **kw)     # compile
        out["gpu_rgba_from_host_ms"] = _median_ms(lambda: cw.flow_to_rgba(u, v, device=be, **kw), repeat)
        ud, vd, qd = xp.asarray(u), xp.asarray(v), xp.asarray(q)
        be.synchronize()
        out["gpu_rgba_from_device_ms"] = _median_ms(
            lambda: cw.flow_to_rgba(ud, vd, device=be, alpha=255, quality=qd, threshold=0.2), repeat)
        out["gpu_upload_uvq_ms"] = _median_ms(lambda: (xp.asarray(u), xp.asarray(v), xp.asarray(q),
                                                       be.synchronize()), repeat)
        got = cw.flow_to_rgba(u, v, device=be, **kw)
        want = cw.flow_to_rgba(u, v, device="cpu", **kw)
        out["gpu_bytes_differing_from_cpu"] = int(np.count_nonzero(got != want))
    return out


def mesh_paint(data: pathlib.Path, repeat: int) -> dict:
    from app.render import mesh as rm
    from app.tools import mesh_seg

    f = data / "psb" / "off" / "101.off"
    if not f.exists():
        f = data / "101.off"
    m = mesh_seg.load(f)
    size = (900, 730)
    rng = np.random.default_rng(0)
    cols = rng.integers(0, 256, (6, 3)).astype(np.uint8)[rng.integers(0, 6, len(m.faces))]
    out = {"faces": int(len(m.faces)), "size": list(size)}
    out["draw_triangles_ms"] = _median_ms(lambda: rm.FaceRaster(m.vertices, m.faces, size=size), max(1, repeat // 2))
    r = rm.FaceRaster(m.vertices, m.faces, size=size)
    out["recolour_ms"] = _median_ms(lambda: r.picture(cols), repeat)
    reps = m.vertices[m.faces[:6]].mean(axis=1)
    markers = (reps, [str(j) for j in range(6)], cols[:6])
    out["recolour_with_part_numbers_ms"] = _median_ms(lambda: r.picture(cols, markers=markers), repeat)
    out["same_as_fresh_render"] = bool(np.array_equal(r.picture(cols, markers=markers),
                                                      rm.rasterize(m.vertices, m.faces, cols, size=size,
                                                                   markers=markers)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data", type=pathlib.Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", type=pathlib.Path, default=None)
    args = ap.parse_args(argv)
    doc = {"device": args.device, "flow_1080p": flow_paint(args.device, args.repeat),
           "mesh_17k": mesh_paint(args.data, args.repeat)}
    print(json.dumps(doc, indent=1))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
