"""Depth, normal and confidence maps: PFM, COLMAP ``.bin`` arrays and NumPy ``.npy``.

* **PFM** (``Pf`` grey, ``PF`` three channels): little-endian float32, rows stored bottom to
  top as the format says; NaN survives a round trip.
* **COLMAP** ``.bin`` (``depth_maps/*.geometric.bin``): a text header ``W&H&C&`` followed by
  float32 values in column-major order. COLMAP marks a missing depth with 0, so the writer
  turns NaN into 0 and :func:`read_colmap_array` with ``zero_is_missing=True`` turns 0 back.
* **.npy**: :func:`numpy.save`.

All writers are atomic (:func:`app.io.atomic.atomic_write`); readers check the header
against the file size before allocating and raise :class:`DepthIOError` with one line.

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> from app.io.depth_io import write_pfm, read_pfm
>>> d = np.array([[1.0, np.nan], [2.5, 3.0]], np.float32)
>>> p = pathlib.Path(tempfile.mkdtemp()) / "d.pfm"
>>> write_pfm(p, d)
>>> np.array_equal(read_pfm(p), d, equal_nan=True)
True
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

from app.io.atomic import atomic_write
from gpu_kernels.errors import InputError

from .inputs import check_input_file, failure_reason

__all__ = ["DepthIOError", "read_pfm", "write_pfm", "read_colmap_array", "write_colmap_array",
           "read_npy", "write_npy", "read_depth", "write_depth"]

_MAX_ELEMENTS = 1 << 31


class DepthIOError(InputError):
    """A depth/normal/confidence map file cannot be read or written. One clear line."""


def _name(p) -> str:
    return pathlib.Path(p).name


def _as_map(a, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (1, 3)) or a.size == 0:
        raise DepthIOError(f"cannot write {what}: expected an (H, W) or (H, W, 3) array, got shape {a.shape}")
    if a.dtype.kind not in "fiub":
        raise DepthIOError(f"cannot write {what}: unsupported dtype {a.dtype}")
    return a


# ----------------------------------------------------------------------------- PFM
def write_pfm(path: str | os.PathLike, array) -> None:
    """Write an ``(H, W)`` or ``(H, W, 3)`` float map as PFM (little-endian, atomic)."""
    a = _as_map(array, _name(path)).astype("<f4")
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[..., 0]
    h, w = a.shape[:2]
    head = f"{'PF' if a.ndim == 3 else 'Pf'}\n{w} {h}\n-1.0\n".encode("ascii")
    with atomic_write(path, "wb") as f:
        f.write(head)
        f.write(np.ascontiguousarray(a[::-1]).tobytes())


def _read_token(data: bytes, pos: int) -> tuple[str, int]:
    while pos < len(data) and data[pos:pos + 1].isspace():
        pos += 1
    start = pos
    while pos < len(data) and not data[pos:pos + 1].isspace():
        pos += 1
    return data[start:pos].decode("ascii", errors="replace"), pos


def read_pfm(path: str | os.PathLike) -> np.ndarray:
    """Read a PFM file into float32 ``(H, W)`` or ``(H, W, 3)`` (top row first)."""
    p = pathlib.Path(path)
    check_input_file(p, error=DepthIOError, what="a depth map")
    size = p.stat().st_size
    with open(p, "rb") as fh:
        head = fh.read(256)
        magic, pos = _read_token(head, 0)
        if magic not in ("Pf", "PF"):
            raise DepthIOError(f"{_name(p)}: not a PFM file (header {magic[:8]!r})")
        try:
            w_s, pos = _read_token(head, pos)
            h_s, pos = _read_token(head, pos)
            s_s, pos = _read_token(head, pos)
            w, h, scale = int(w_s), int(h_s), float(s_s)
        except ValueError:
            raise DepthIOError(f"{_name(p)}: malformed PFM header") from None
        pos += 1  # the single whitespace after the scale
        c = 3 if magic == "PF" else 1
        if w <= 0 or h <= 0 or w * h * c > _MAX_ELEMENTS or not np.isfinite(scale) or scale == 0:
            raise DepthIOError(f"{_name(p)}: absurd PFM header ({w} x {h}, scale {s_s})")
        need = w * h * c * 4
        if size - pos < need:
            raise DepthIOError(f"{_name(p)}: the file is truncated ({max(size - pos, 0)} of {need} data bytes)")
        fh.seek(pos)
        dt = "<f4" if scale < 0 else ">f4"
        a = np.fromfile(fh, dtype=dt, count=w * h * c).astype(np.float32)
    a = a.reshape((h, w, c) if c == 3 else (h, w))[::-1]
    return np.ascontiguousarray(a)


# ----------------------------------------------------------------------------- COLMAP
def write_colmap_array(path: str | os.PathLike, array) -> None:
    """Write a map in COLMAP's ``.bin`` array format; NaN becomes 0 (COLMAP's "no depth")."""
    a = _as_map(array, _name(path)).astype(np.float32)
    if a.ndim == 2:
        a = a[..., None]
    a = np.where(np.isfinite(a), a, 0).astype("<f4")
    h, w, c = a.shape
    with atomic_write(path, "wb") as f:
        f.write(f"{w}&{h}&{c}&".encode("ascii"))
        f.write(np.transpose(a, (1, 0, 2)).reshape(-1, order="F").tobytes())


def read_colmap_array(path: str | os.PathLike, *, zero_is_missing: bool = False) -> np.ndarray:
    """Read a COLMAP ``.bin`` array: ``(H, W)`` for one channel, else ``(H, W, C)``."""
    p = pathlib.Path(path)
    check_input_file(p, error=DepthIOError, what="a depth map")
    size = p.stat().st_size
    with open(p, "rb") as fh:
        head = fh.read(64)
        parts = head.split(b"&")
        if len(parts) < 4:
            raise DepthIOError(f"{_name(p)}: not a COLMAP array (no 'W&H&C&' header)")
        try:
            w, h, c = (int(x) for x in parts[:3])
        except ValueError:
            raise DepthIOError(f"{_name(p)}: not a COLMAP array (malformed 'W&H&C&' header)") from None
        off = sum(len(x) for x in parts[:3]) + 3
        if w <= 0 or h <= 0 or c <= 0 or w * h * c > _MAX_ELEMENTS:
            raise DepthIOError(f"{_name(p)}: absurd array size {w} x {h} x {c}")
        need = w * h * c * 4
        if size - off != need:
            raise DepthIOError(f"{_name(p)}: {size - off} data bytes, but {w} x {h} x {c} floats need {need}")
        fh.seek(off)
        a = np.fromfile(fh, dtype="<f4", count=w * h * c)
    a = np.transpose(a.reshape((w, h, c), order="F"), (1, 0, 2)).astype(np.float32)
    if zero_is_missing:
        a = np.where(a == 0, np.nan, a).astype(np.float32)
    return np.ascontiguousarray(a[..., 0] if c == 1 else a)


# ----------------------------------------------------------------------------- npy
def write_npy(path: str | os.PathLike, array) -> None:
    a = _as_map(array, _name(path))
    with atomic_write(path, "wb") as f:
        np.save(f, a, allow_pickle=False)


def read_npy(path: str | os.PathLike) -> np.ndarray:
    p = pathlib.Path(path)
    check_input_file(p, error=DepthIOError, what="a depth map")
    try:
        a = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DepthIOError(f"{_name(p)}: not a readable .npy file ({failure_reason(exc)})") from None
    if a.ndim not in (2, 3):
        raise DepthIOError(f"{_name(p)}: expected a 2-D map, got shape {a.shape}")
    return a


# ----------------------------------------------------------------------------- any
def read_depth(path: str | os.PathLike) -> np.ndarray:
    """Read a map by extension: ``.pfm``, ``.bin`` (COLMAP, 0 -> NaN) or ``.npy``."""
    ext = pathlib.Path(path).suffix.lower()
    if ext == ".pfm":
        return read_pfm(path)
    if ext == ".bin":
        return read_colmap_array(path, zero_is_missing=True)
    if ext == ".npy":
        return read_npy(path)
    raise DepthIOError(f"{_name(path)}: unknown depth map type {ext or '(no extension)'}; use .pfm, .bin or .npy")


def write_depth(path: str | os.PathLike, array) -> None:
    """Write a map by extension: ``.pfm``, ``.bin`` (COLMAP) or ``.npy``."""
    ext = pathlib.Path(path).suffix.lower()
    if ext == ".pfm":
        return write_pfm(path, array)
    if ext == ".bin":
        return write_colmap_array(path, array)
    if ext == ".npy":
        return write_npy(path, array)
    raise DepthIOError(f"{_name(path)}: cannot write {ext or 'files without an extension'}; use .pfm, .bin or .npy")


def _register() -> None:
    from .registry import register_reader

    def _samples(folder: pathlib.Path) -> list[pathlib.Path]:
        d = np.arange(35, dtype=np.float32).reshape(5, 7) / 7
        d[1, 2] = np.nan
        out = [folder / "d.pfm", folder / "n.pfm", folder / "d.bin"]
        write_pfm(out[0], d)
        write_pfm(out[1], np.stack([d, d, d], -1))
        write_colmap_array(out[2], d)
        return out

    register_reader("pfm", read_pfm, (".pfm",), make_samples=lambda f: _samples(f)[:2])
    register_reader("colmap array", read_colmap_array, (".bin",), make_samples=lambda f: _samples(f)[2:])


_register()
