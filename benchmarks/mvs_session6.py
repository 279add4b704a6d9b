"""MVS host share, session 6 (issue 24): :mod:`mvs_session5`'s three rows (scene fused, scene
without fusion, view 0 alone: whole ``reconstruct`` calls) and one more, **the live edit**: what
the tool re-runs when a growing parameter (the NCC threshold) changes for view 0 alone: the
``depth`` stage only, :func:`grow_views` on views prepared once (the tool's stage cache keeps
the view selection, the seeds and the packed textures), then the maps on the host; and **the
tool's fusion stage** alone (a ``fuse_tol`` edit), which fuses the 16 views' maps from the host.

Usage (GPU host, ``python3`` with PyTorch for CUPTI; as mvs_session5.py)::

    MVS5_CODE_ROOT=.carry-mvs6/base python3 benchmarks/mvs_session6.py --label base --json base.json
    python3 benchmarks/mvs_session6.py --label new --json new.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mvs_session5 as s5  # noqa: E402 - sets the code root (MVS5_CODE_ROOT) before the kernels load
import numpy as np  # noqa: E402


def _profiled(out: dict, run) -> dict:
    """``out`` with one more ``run()`` under CUPTI (:func:`mvs_session5.gpu_busy`): its GPU busy
    time and idle share (also against the unprofiled median ``out["wall_s"]``); logged."""
    g = s5.gpu_busy(run)
    if g is not None:
        out.update({k: g[k] for k in ("wall_profiled_s", "gpu_busy_s", "gpu_idle_share", "largest_idle_gaps")})
        out["gpu_idle_share_of_unprofiled_wall"] = 1 - g["gpu_busy_s"] / out["wall_s"]
    s5.log(out["label"], json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in out.items()
                                     if k not in ("walls", "largest_idle_gaps")}))
    return out


def live_row(scene, dev, label, repeat=9, ncc=(0.5, 0.55)) -> dict:
    """View 0's depth stage alone, the NCC threshold alternating between ``ncc`` (as a user's
    edits), on views prepared once: wall (median), GPU idle share (CUPTI), samples."""
    from gpu_kernels.mvs.stereo import finish_maps, grow_views, prepare_views

    pts, pvis = scene.points, scene.point_views
    prep = prepare_views(scene, views=[0], device=dev, seeds=(pts, pvis, "model"))
    kw = {"device": dev, "views_together": 1}

    def once(i):
        maps, st = grow_views(scene, prep, ncc_accept=ncc[i % 2], **kw)
        finish_maps(maps, st)
        return maps

    once(0)
    once(1)
    walls = []
    for i in range(repeat):
        s5._sync()
        t = time.perf_counter()
        maps = once(i)
        walls.append(time.perf_counter() - t)
    wall = float(np.median(walls))
    out = {"label": label, "wall_s": wall, "walls": walls, "samples": int(maps[0].n_samples)}
    return _profiled(out, lambda: once(repeat))


def fusion_stage_row(scene, dev, label, repeat=5) -> dict:
    """The tool's ``fusion`` stage on its own (a ``fuse_tol`` edit re-runs only it): the 16 views'
    maps, grown once by the ``depth`` stage (``grow_views``, maps on the host), fused again from
    the host arrays (their upload included): wall (median), GPU idle share (CUPTI)."""
    from gpu_kernels.mvs.fusion import fuse_depth_maps
    from gpu_kernels.mvs.stereo import finish_maps, grow_views, prepare_views

    pts, pvis = scene.points, scene.point_views
    prep = prepare_views(scene, views="all", device=dev, seeds=(pts, pvis, "model"))
    maps, st = grow_views(scene, prep, device=dev)
    finish_maps(maps, st)
    vs = list(prep.views)
    images = [scene.images[v] if np.asarray(scene.images[v]).dtype == np.uint8 else None for v in vs]

    def once():
        return fuse_depth_maps(scene.cameras, [m.depth for m in maps], views=vs, normals=[m.normal for m in maps],
                               confidences=[m.conf for m in maps], images=images, device=dev)

    once()
    walls = []
    for _ in range(repeat):
        s5._sync()
        t = time.perf_counter()
        f = once()
        walls.append(time.perf_counter() - t)
    wall = float(np.median(walls))
    out = {"label": label, "wall_s": wall, "walls": walls, "fused_points": int(len(f.points))}
    return _profiled(out, once)


def seeded_temple_and_json(argv):
    """For the rows a session's ``main`` adds after the earlier session's: the ``--json`` file's
    path, the temple scene with its sparse points, the ``--label`` and the file's results so far."""
    path = Path(argv[argv.index("--json") + 1])
    from mvs_session4 import temple_dir

    from app.io.scene_io import read_scene
    from gpu_kernels.mvs.stereo import scene_seeds

    scene = read_scene(temple_dir())
    pts, pvis, _ = scene_seeds(scene)
    scene.points, scene.point_views = pts, pvis
    label = argv[argv.index("--label") + 1] if "--label" in argv else ""
    return path, scene, label, json.loads(path.read_text())


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rc = s5.main(argv)
    if rc or "--compare" in argv or "--json" not in argv:
        return rc
    path, scene, label, out = seeded_temple_and_json(argv)
    out["rows"].append(live_row(scene, "cuda", f"{label} live edit: view 0's depth stage"))
    out["rows"].append(fusion_stage_row(scene, "cuda", f"{label} the tool's fusion stage (maps from the host)"))
    path.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    from mvs_cli import run
    from mvs_session4 import temple_dir

    sys.exit(run(main, scene=temple_dir))
