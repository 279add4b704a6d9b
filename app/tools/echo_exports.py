"""The echo tool's exports: the pairwise fields, the trajectories, the Jacobian determinant,
the warped volumes and the three-slice picture (each written atomically)."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.lazy import lazy_module

from ..io.atomic import atomic_write

if TYPE_CHECKING:
    import numpy as np

    from gpu_kernels.echo import maps as _maps

    from ..io import volume_io
    from ..render import echo as _render
else:  # loaded on first use (start-up, issue 18 case 19)
    np = lazy_module("numpy")
    _maps = lazy_module("gpu_kernels.echo.maps")
    volume_io = lazy_module("app.io.volume_io")
    _render = lazy_module("app.render.echo")

__all__ = ["write_field", "write_trajectory", "write_jacobian", "write_warped", "write_slices", "jacobian_volumes",
           "warped_volumes"]


def _affine(result):
    return result.data.affine


def write_field(result, path) -> list[pathlib.Path]:
    """A pair: its field (3, Z, Y, X); a sequence: the pairwise fields (T - 1, 3, Z, Y, X) as
    .npy/.npz (NIfTI holds one field: export a pair)."""
    path = pathlib.Path(path)
    name = path.name.lower()
    if result.is_pair:
        volume_io.write_displacement(path, result.pairwise[0], spacing=result.data.spacing, affine=_affine(result))
        return [path]
    if name.endswith(".nii") or name.endswith(".nii.gz"):
        raise EchoInputError("a NIfTI vector image holds one field: write the sequence's fields as .npy or .npz, "
                             "or run on a pair (--frames i j)")
    if name.endswith(".npz"):
        with atomic_write(path, "wb") as fh:
            np.savez_compressed(fh, pairwise=result.pairwise, spacing=np.asarray(result.data.spacing))
    else:
        with atomic_write(path, "wb") as fh:
            np.save(fh, np.ascontiguousarray(result.pairwise))
    return [path]


def _trajectory32(result) -> np.ndarray:
    if result.trajectory.dtype == np.float32:
        return result.trajectory
    # recompose in float32 from the pairwise fields (the stored copy is float16)
    T = result.data.n_frames
    out = np.zeros((T, 3) + result.data.shape, np.float32)
    ref = result.reference
    cur = None
    for j in range(ref + 1, T):
        cur = result.pairwise[j - 1] if cur is None else _maps.compose(cur, result.pairwise[j - 1], device="cpu")
        out[j] = cur
    for j in range(ref - 1, -1, -1):
        out[j] = result.trajectory[j].astype(np.float32)      # backwards: only the stored copy
    return out


def write_trajectory(result, path) -> list[pathlib.Path]:
    """The fields from the reference frame to every frame, (T, 3, Z, Y, X)."""
    path = pathlib.Path(path)
    tr = _trajectory32(result)
    if path.name.lower().endswith(".npz"):
        with atomic_write(path, "wb") as fh:
            np.savez_compressed(fh, trajectory=tr, reference=np.int64(result.reference),
                                spacing=np.asarray(result.data.spacing))
    else:
        with atomic_write(path, "wb") as fh:
            np.save(fh, np.ascontiguousarray(tr))
    return [path]


def jacobian_volumes(result) -> np.ndarray:
    """A pair: det(I + grad u) (Z, Y, X); a sequence: that of every trajectory (T, Z, Y, X)."""
    if result.is_pair:
        return _maps.jacobian_determinant(result.pairwise[0])
    tr = result.trajectory
    return np.stack([_maps.jacobian_determinant(tr[t].astype(np.float32)) for t in range(len(tr))])


def write_jacobian(result, path) -> list[pathlib.Path]:
    path = pathlib.Path(path)
    J = jacobian_volumes(result).astype(np.float32)
    if path.name.lower().endswith(".npy"):
        with atomic_write(path, "wb") as fh:
            np.save(fh, J)
    else:
        volume_io.write_volume(path, J, spacing=result.data.spacing, affine=_affine(result))
    return [path]


def warped_volumes(result) -> np.ndarray:
    """A pair: the moving volume warped onto the fixed grid; a sequence: every frame warped
    onto the reference frame (which then looks still)."""
    d = result.data
    if result.is_pair:
        return _maps.warp_volume(d.frames[1].astype(np.float32), result.pairwise[0], device="cpu")
    return np.stack([_maps.warp_volume(d.frames[t].astype(np.float32), result.trajectory[t].astype(np.float32),
                                       device="cpu") for t in range(d.n_frames)])


def write_warped(result, path) -> list[pathlib.Path]:
    path = pathlib.Path(path)
    w = warped_volumes(result)
    if result.data.frames.dtype == np.uint8:
        w = np.clip(np.rint(w), 0, 255).astype(np.uint8)
    if path.name.lower().endswith(".npy"):
        with atomic_write(path, "wb") as fh:
            np.save(fh, w)
    else:
        volume_io.write_volume(path, w, spacing=result.data.spacing, affine=_affine(result))
    return [path]


def write_slices(result, path, **options) -> list[pathlib.Path]:
    """A picture of the three orthogonal slices with the overlays (PNG)."""
    _render.render_slices(result, path, **options)
    return [pathlib.Path(path)]
