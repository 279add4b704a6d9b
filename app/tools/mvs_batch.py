"""Multi-view stereo in ``gpulab batch``: one item per reference view, the maps written as
``gpulab mvs`` writes them, the fused cloud once every view is in. Declared in
:mod:`app.tools.mvs` (``batch_items=``, ``item_params=``, ``batch_write=``, ``batch_finish=``)."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from gpu_kernels.lazy import lazy_module

from .base import BatchItem
from .mvs_exports import write_view_files

if TYPE_CHECKING:
    import numpy as np

    from gpu_kernels.backend import Backend
    from gpu_kernels.mvs import fusion as _fu

    from ..io import depth_io, ply_points_io, scene_io
else:  # NumPy, the kernels and the readers load on first use (start-up)
    np = lazy_module("numpy")
    _fu = lazy_module("gpu_kernels.mvs.fusion")
    depth_io = lazy_module("app.io.depth_io")
    ply_points_io = lazy_module("app.io.ply_points_io")
    scene_io = lazy_module("app.io.scene_io")

__all__ = ["batch_items", "item_params", "batch_write", "batch_finish"]


def _view_names(path: pathlib.Path) -> list[str]:
    """The scene's image names, without reading the images (cameras only)."""
    p = pathlib.Path(path)
    if p.is_file() and p.name.lower().endswith("_par.txt"):
        names = scene_io.parse_middlebury_par(p)[0]
        return [pathlib.Path(n).stem for n in names]
    return list(scene_io.read_scene(p).names)


def batch_items(paths: list[pathlib.Path]) -> list[BatchItem]:
    """One item per reference view of each scene (keys are the views' names; with several
    scenes, ``<scene>-<view>``); the depth maps are fused once all are in (:func:`batch_finish`)."""
    items = []
    for p in paths:
        names = _view_names(p)
        prefix = "" if len(paths) == 1 else f"{p.stem.replace('_par', '')}-"
        items += [BatchItem(f"{prefix}{n}", (str(p),), {"view": i, "name": n, "scene": prefix.rstrip("-")})
                  for i, n in enumerate(names)]
    return items


def item_params(item: BatchItem, params: dict) -> dict:
    """The item's reference view only, without fusion (that runs after every view)."""
    return {**params, "views": str(item.meta["view"]), "fuse": False}


def _scene_out(out_dir: pathlib.Path, scene: str) -> pathlib.Path:
    d = pathlib.Path(out_dir) / scene if scene else pathlib.Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    return d


def batch_write(result, out_dir: pathlib.Path, key: str) -> list[pathlib.Path]:
    """The view's maps, as ``gpulab mvs`` writes them (NAME.depth.npy, .normal.npy, ...)."""
    scene = key[: -len(result.data.scene.names[result.maps[0].view]) - 1] if result.maps and \
        key != result.data.scene.names[result.maps[0].view] else ""
    return write_view_files(result, _scene_out(out_dir, scene))


def batch_finish(out_dir: pathlib.Path, records: list[dict], params: dict, *, device: Backend) -> list[pathlib.Path]:
    """Fuse the depth maps of every finished view of each scene into ``fused.ply``."""
    from .mvs import PARAMS, load

    p = PARAMS.validate(params)
    if not p["fuse"]:
        return []
    written: list[pathlib.Path] = []
    by_scene: dict[str, list[dict]] = {}
    for r in records:
        by_scene.setdefault(r["inputs"][0], []).append(r)
    for scene_path, recs in by_scene.items():
        data = load(scene_path)
        sc = data.scene
        prefix = ""
        for r in recs:
            name = next((n for n in sc.names if r["key"].endswith(n)), None)
            if name is not None and r["key"] != name:
                prefix = r["key"][: -len(name) - 1]
        d = _scene_out(out_dir, prefix)
        views, depths, normals, confs = [], [], [], []
        for v, name in enumerate(sc.names):
            f = d / f"{name}.depth.npy"
            if f.is_file():
                views.append(v)
                depths.append(depth_io.read_npy(f))
                normals.append(depth_io.read_npy(d / f"{name}.normal.npy"))
                confs.append(depth_io.read_npy(d / f"{name}.conf.npy"))
        if len(views) < 2:
            continue
        fused = _fu.fuse_depth_maps(
            sc.cameras, depths, views=views, normals=normals, confidences=confs,
            images=[sc.images[v] if np.asarray(sc.images[v]).dtype == np.uint8 else None for v in views],
            rel_tol=p["fuse_tol"], min_views=p["fuse_min_views"], device=device)
        out = d / "fused.ply"
        ply_points_io.write_points_ply(out, fused.points, normals=fused.normals, colors=fused.colors,
                                       confidence=fused.confidence)
        written.append(out)
    return written
