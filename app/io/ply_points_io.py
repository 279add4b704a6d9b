"""Point clouds as binary PLY: ``float x y z nx ny nz``, ``uchar red green blue``, ``float
confidence`` (the layout MeshLab, CloudCompare and COLMAP's fused.ply readers accept).

:func:`write_points_ply` writes that layout atomically (binary little-endian, or ASCII);
:func:`read_points_ply` reads any PLY whose ``vertex`` element has at least ``x y z`` as
scalar properties (other properties, faces and other elements are skipped) and returns the
fields it finds, through the one PLY parser (:func:`app.io.mesh_formats.read_ply_elements`,
shared with meshes). Errors are :class:`PointCloudIOError` with one line.

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> from app.io.ply_points_io import write_points_ply, read_points_ply
>>> p = pathlib.Path(tempfile.mkdtemp()) / "c.ply"
>>> xyz = np.array([[0, 0, 1], [1, 2, 3]], np.float32)
>>> write_points_ply(p, xyz, normals=np.array([[0, 0, -1]] * 2), colors=np.array([[255, 0, 0]] * 2),
...                  confidence=np.array([0.9, 0.8]))
>>> c = read_points_ply(p)
>>> c["points"].tolist(), c["colors"][0].tolist(), round(float(c["confidence"][1]), 3)
([[0.0, 0.0, 1.0], [1.0, 2.0, 3.0]], [255, 0, 0], 0.8)
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

from app.io.atomic import atomic_write
from gpu_kernels.errors import InputError

from .inputs import check_input_file
from .mesh_formats import read_ply_elements

__all__ = ["PointCloudIOError", "write_points_ply", "read_points_ply"]

class PointCloudIOError(InputError):
    """A point-cloud PLY cannot be read or written. One clear line."""


def write_points_ply(path: str | os.PathLike, points, *, normals=None, colors=None, confidence=None,
                     binary: bool = True) -> None:
    """Write points (and optional normals, uint8 colours, confidence) as PLY, atomically.

    Missing normals are written as 0, missing colours as grey 200, missing confidence as 1,
    so every file has the same layout.
    """
    pts = np.asarray(points, dtype=np.float32)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise PointCloudIOError(f"points must be (N, 3), got shape {pts.shape}")
    n = len(pts)

    def _opt(a, shape, dtype, fill, what):
        if a is None:
            return np.full(shape, fill, dtype=dtype)
        a = np.asarray(a)
        if a.shape != shape:
            raise PointCloudIOError(f"{what} must have shape {shape}, got {a.shape}")
        return a.astype(dtype)

    nrm = _opt(normals, (n, 3), np.float32, 0.0, "normals")
    col = colors if colors is None else np.clip(np.asarray(colors), 0, 255)
    col = _opt(col, (n, 3), np.uint8, 200, "colors")
    conf = _opt(confidence, (n,), np.float32, 1.0, "confidence")
    dt = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("nx", "<f4"), ("ny", "<f4"), ("nz", "<f4"),
                   ("red", "u1"), ("green", "u1"), ("blue", "u1"), ("confidence", "<f4")])
    rec = np.empty(n, dtype=dt)
    for k, name in enumerate(("x", "y", "z")):
        rec[name] = pts[:, k]
    for k, name in enumerate(("nx", "ny", "nz")):
        rec[name] = nrm[:, k]
    for k, name in enumerate(("red", "green", "blue")):
        rec[name] = col[:, k]
    rec["confidence"] = conf
    fmt = "binary_little_endian" if binary else "ascii"
    header = (f"ply\nformat {fmt} 1.0\ncomment written by gpulab mvs\nelement vertex {n}\n"
              "property float x\nproperty float y\nproperty float z\n"
              "property float nx\nproperty float ny\nproperty float nz\n"
              "property uchar red\nproperty uchar green\nproperty uchar blue\n"
              "property float confidence\nend_header\n")
    with atomic_write(path, "wb") as f:
        f.write(header.encode("ascii"))
        if binary:
            f.write(rec.tobytes())
        else:
            for r in rec:
                f.write((" ".join(f"{r[i]:.7g}" if i < 6 or i == 9 else str(int(r[i])) for i in range(10))
                         + "\n").encode("ascii"))


_FIELDS = {"points": ("x", "y", "z"), "normals": ("nx", "ny", "nz"), "colors": ("red", "green", "blue")}
_CONFIDENCE = ("confidence", "quality", "value")


def read_points_ply(path: str | os.PathLike) -> dict:
    """Read a point-cloud PLY. Returns ``{"points", "normals"?, "colors"?, "confidence"?}``.

    The parser is the mesh reader's (:func:`app.io.mesh_formats.read_ply_elements`: one PLY
    parser, one type table): ascii or binary, any property types, other elements skipped."""
    p = pathlib.Path(path)
    check_input_file(p, error=PointCloudIOError, what="a point cloud")
    with open(p, "rb") as fh:
        if not fh.read(3) == b"ply":
            raise PointCloudIOError(f"{p.name}: not a PLY file")
    wanted = {c for cols in _FIELDS.values() for c in cols} | set(_CONFIDENCE)
    try:
        by_name, data, _ = read_ply_elements(p, {"vertex": wanted}, noun="point cloud", error=PointCloudIOError,
                                             faces=False)
    except MemoryError:
        raise PointCloudIOError(f"{p.name}: the point cloud is too large to read into memory") from None
    cols = data.get("vertex", {})
    if any(isinstance(v, tuple) for v in cols.values()):
        raise PointCloudIOError(f"{p.name}: list properties on vertices are not supported")
    n = by_name["vertex"].count
    out = {}
    for key, names in _FIELDS.items():
        if all(c in cols for c in names):
            dt = np.uint8 if key == "colors" else np.float32
            out[key] = np.stack([np.asarray(cols[c]) for c in names], axis=1).astype(dt) if n else \
                np.empty((0, 3), dt)
    c = next((c for c in _CONFIDENCE if c in cols), None)
    if c is not None:
        out["confidence"] = np.asarray(cols[c], dtype=np.float32)
    return out


def _register() -> None:
    from .registry import register_reader

    def _samples(folder: pathlib.Path) -> list[pathlib.Path]:
        rng = np.random.default_rng(0)
        pts = rng.normal(size=(40, 3))
        out = [folder / "pts.ply", folder / "pts_ascii.ply"]
        write_points_ply(out[0], pts, normals=pts, colors=rng.integers(0, 255, (40, 3)),
                         confidence=rng.uniform(size=40))
        write_points_ply(out[1], pts, binary=False)
        return out

    register_reader("point cloud ply", read_points_ply, (".ply",), make_samples=_samples)


_register()
