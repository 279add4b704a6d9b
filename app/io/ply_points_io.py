"""Point clouds as binary PLY: ``float x y z nx ny nz``, ``uchar red green blue``, ``float
confidence`` (the layout MeshLab, CloudCompare and COLMAP's fused.ply readers accept).

:func:`write_points_ply` writes that layout atomically (binary little-endian, or ASCII);
:func:`read_points_ply` reads any PLY whose ``vertex`` element has at least ``x y z`` as
scalar properties (other properties, faces and other elements are skipped) and returns the
fields it finds. Errors are :class:`PointCloudIOError` with one line.

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

__all__ = ["PointCloudIOError", "write_points_ply", "read_points_ply"]

_PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
    "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
    "float": "f4", "float32": "f4", "double": "f8", "float64": "f8",
}


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


_MAX_HEADER = 1 << 16


def read_points_ply(path: str | os.PathLike) -> dict:
    """Read a point-cloud PLY. Returns ``{"points", "normals"?, "colors"?, "confidence"?}``."""
    p = pathlib.Path(path)
    check_input_file(p, error=PointCloudIOError, what="a point cloud")
    size = p.stat().st_size
    try:
        with open(p, "rb") as fh:
            return _read_ply(fh, p, size)
    except MemoryError:
        raise PointCloudIOError(f"{p.name}: the point cloud is too large to read into memory") from None


def _read_ply(fh, p: pathlib.Path, size: int) -> dict:
    head = fh.read(_MAX_HEADER)
    if not head.startswith(b"ply"):
        raise PointCloudIOError(f"{p.name}: not a PLY file")
    end = head.find(b"end_header")
    if end < 0:
        raise PointCloudIOError(f"{p.name}: the PLY header has no end_header")
    nl = head.find(b"\n", end)
    body_start = nl + 1 if nl >= 0 else len(head)
    lines = head[:end].decode("ascii", errors="replace").splitlines()
    fmt = None
    elements: list[tuple[str, int, list]] = []
    for ln in lines[1:]:
        tok = ln.split()
        if not tok or tok[0] in ("comment", "obj_info"):
            continue
        if tok[0] == "format" and len(tok) >= 2:
            fmt = tok[1]
        elif tok[0] == "element" and len(tok) == 3:
            try:
                elements.append((tok[1], int(tok[2]), []))
            except ValueError:
                raise PointCloudIOError(f"{p.name}: malformed element line {ln!r}") from None
        elif tok[0] == "property" and elements and len(tok) >= 3:
            if tok[1] == "list":
                elements[-1][2].append((tok[-1], None))
            elif len(tok) == 3 and tok[1] in _PLY_TYPES:
                elements[-1][2].append((tok[2], _PLY_TYPES[tok[1]]))
            else:
                raise PointCloudIOError(f"{p.name}: unsupported property line {ln!r}")
        elif tok[0] not in ("ply", "property"):
            raise PointCloudIOError(f"{p.name}: unexpected header line {ln[:40]!r}")
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise PointCloudIOError(f"{p.name}: unknown PLY format {fmt!r}")
    if not elements or elements[0][0] != "vertex":
        raise PointCloudIOError(f"{p.name}: the PLY has no vertex element first")
    name, n, props = elements[0]
    if any(t is None for _, t in props):
        raise PointCloudIOError(f"{p.name}: list properties on vertices are not supported")
    names = [nm for nm, _ in props]
    if not all(k in names for k in ("x", "y", "z")) or len(set(names)) != len(names):
        raise PointCloudIOError(f"{p.name}: the vertices have no x, y, z (or repeat a property)")
    if n < 0:
        raise PointCloudIOError(f"{p.name}: negative vertex count")
    k = len(props)
    left = size - body_start
    fh.seek(body_start)
    if fmt == "ascii":
        if n * k * 2 > left:
            raise PointCloudIOError(f"{p.name}: the file is truncated (header says {n:,} vertices)")
        vals = []
        for i in range(n):
            ln = fh.readline()
            tok = ln.split()
            if len(tok) < k:
                raise PointCloudIOError(f"{p.name}: vertex {i} has {len(tok)} values, {k} expected (truncated?)")
            vals.append(tok[:k])
        try:
            arr = np.array(vals, dtype=np.float64).reshape(n, k)
        except ValueError:
            raise PointCloudIOError(f"{p.name}: a vertex value is not a number") from None
        cols = {nm: arr[:, i] for i, nm in enumerate(names)}
    else:
        e = "<" if fmt == "binary_little_endian" else ">"
        dt = np.dtype([(nm, e + t) for nm, t in props])
        if n * dt.itemsize > left:
            raise PointCloudIOError(f"{p.name}: the file is truncated (header says {n:,} vertices)")
        rec = np.fromfile(fh, dtype=dt, count=n)
        cols = {nm: rec[nm] for nm in names}
    out = {"points": np.stack([cols["x"], cols["y"], cols["z"]], axis=1).astype(np.float32)}
    if all(c in cols for c in ("nx", "ny", "nz")):
        out["normals"] = np.stack([cols["nx"], cols["ny"], cols["nz"]], axis=1).astype(np.float32)
    if all(c in cols for c in ("red", "green", "blue")):
        out["colors"] = np.stack([cols["red"], cols["green"], cols["blue"]], axis=1).astype(np.uint8)
    for c in ("confidence", "quality", "value"):
        if c in cols:
            out["confidence"] = np.asarray(cols[c], dtype=np.float32)
            break
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
