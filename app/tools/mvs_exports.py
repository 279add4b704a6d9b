"""Multi-view stereo exports: per-view maps (.npy, .pfm, COLMAP .bin), the fused cloud (PLY),
one view's depth map (also as a colour-mapped PNG), and the colour ramps the tab shares.
Declared in :mod:`app.tools.mvs` (``EXPORTS``)."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from gpu_kernels.errors import InputError
from gpu_kernels.lazy import lazy_module

from ..io.atomic import atomic_output_dir, check_output_dir
from .base import Export

if TYPE_CHECKING:
    import numpy as np

    from ..io import depth_io, ply_points_io
else:  # NumPy and the writers load on first use (start-up)
    np = lazy_module("numpy")
    depth_io = lazy_module("app.io.depth_io")
    ply_points_io = lazy_module("app.io.ply_points_io")

__all__ = ["EXPORTS", "colorize", "normals_rgb", "write_view_files", "write_fused", "write_outdir",
           "write_view_depth"]


def colorize(values: np.ndarray, lo: float | None = None, hi: float | None = None) -> np.ndarray:
    """``(H, W)`` values to an RGB uint8 picture (turbo-like ramp; NaN black)."""
    v = np.asarray(values, np.float64)
    ok = np.isfinite(v)
    if lo is None or hi is None:
        if ok.any():
            lo, hi = np.percentile(v[ok], [1, 99])
        else:
            lo, hi = 0.0, 1.0
    t = np.clip((v - lo) / max(hi - lo, 1e-12), 0, 1)
    t = np.where(ok, t, 0)
    # a compact approximation of the turbo colour map
    r = np.clip(0.13572138 + t * (4.6153926 + t * (-42.66032258 + t * (132.13108234 + t * (-152.94239396 + t * 59.28637943)))), 0, 1)
    g = np.clip(0.09140261 + t * (2.19418839 + t * (4.84296658 + t * (-14.18503333 + t * (4.27729857 + t * 2.82956604)))), 0, 1)
    b = np.clip(0.1066733 + t * (12.64194608 + t * (-60.58204836 + t * (110.36276771 + t * (-89.90310912 + t * 27.34824973)))), 0, 1)
    out = (np.stack([r, g, b], -1) * 255).astype(np.uint8)
    out[~ok] = 0
    return out


def normals_rgb(normal: np.ndarray) -> np.ndarray:
    """Camera-frame normals to RGB (x, y, z in [-1, 1] -> 0..255; no normal: black)."""
    n = np.asarray(normal, np.float64)
    ok = np.isfinite(n).all(axis=-1)
    out = np.clip((np.nan_to_num(n) * 0.5 + 0.5) * 255, 0, 255).astype(np.uint8)
    out[~ok] = 0
    return out


def write_view_files(result, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Per view: ``NAME.depth.npy``, ``NAME.normal.npy``, ``NAME.conf.npy``, ``NAME.iters.npy``,
    ``NAME.depth.pfm`` and COLMAP-style ``NAME.depth.bin`` (0 = no depth)."""
    written = []
    names = result.data.scene.names
    for m in result.maps:
        base = out_dir / names[m.view]
        for suffix, arr, fn in ((".depth.npy", m.depth, depth_io.write_npy), (".normal.npy", m.normal, depth_io.write_npy),
                                (".conf.npy", m.conf, depth_io.write_npy), (".iters.npy", m.iters, depth_io.write_npy),
                                (".depth.pfm", m.depth, depth_io.write_pfm),
                                (".depth.bin", m.depth, depth_io.write_colmap_array)):
            p = base.with_name(base.name + suffix)
            fn(p, arr)
            written.append(p)
    return written


_NO_FUSED = "there is no fused cloud: run with two or more views and fusion on"


def _fused_unavailable(result) -> str | None:
    return _NO_FUSED if getattr(result, "fused", None) is None else None


def write_fused(result, path) -> list[pathlib.Path]:
    """The fused cloud as PLY (x y z nx ny nz red green blue confidence)."""
    f = result.fused
    if f is None:
        raise InputError(_NO_FUSED)
    ply_points_io.write_points_ply(path, f.points, normals=f.normals, colors=f.colors, confidence=f.confidence)
    return [pathlib.Path(path)]


def write_outdir(result, path) -> list[pathlib.Path]:
    """Everything into a new folder (atomically): the per-view maps and ``fused.ply``."""
    path = pathlib.Path(path)
    with atomic_output_dir(path) as tmp:
        write_view_files(result, tmp)
        if result.fused is not None:
            write_fused(result, tmp / "fused.ply")
        names = sorted(p.name for p in tmp.iterdir())
    return [path / n for n in names]


def write_view_depth(result, path, *, view: int | None = None) -> list[pathlib.Path]:
    """One view's depth map (the first processed one unless ``view``): .pfm, .npy, .bin or a
    colour-mapped .png."""
    m = result.maps[0] if view is None else result.view_map(view)
    if m is None:
        raise InputError(f"view {view} was not reconstructed")
    path = pathlib.Path(path)
    if path.suffix.lower() == ".png":
        from ..io.image_io import write_image

        return [pathlib.Path(write_image(path, colorize(m.depth)))]
    depth_io.write_depth(path, m.depth)
    return [path]


def _check_outdir(path) -> None:
    """A new folder, an empty one, or an earlier gpulab output: never a folder of the user's files."""
    check_output_dir(path)


EXPORTS = (
    Export("outdir", "All maps and fused.ply (folder)", (), write_outdir, folder=True, cli_option="-o",
           check=_check_outdir),
    Export("fused", "Fused point cloud", (".ply",), write_fused, cli_option="--fused", unavailable=_fused_unavailable),
    Export("depth", "Depth map of one view", (".pfm", ".npy", ".bin", ".png"), write_view_depth, cli_option=None),
)
