"""Optical-flow files: Middlebury ``.flo`` and KITTI 16-bit PNG, read and write.

A flow is an ``(H, W, 2)`` float32 array of ``(u, v)``: ``u`` along the image's columns,
``v`` along its rows, ``IMG2(x + f(x)) = IMG1(x)`` (Middlebury's convention), with a boolean
``(H, W)`` mask of the pixels whose flow is known.

- ``.flo`` (Middlebury): the float 202021.25 (the bytes ``PIEH``), int32 width, int32
  height, then ``H * W`` interleaved float32 ``u, v`` pairs, little-endian. A value above
  1e9 in magnitude (or NaN) means unknown.
- KITTI PNG: a 3-channel 16-bit PNG; channel 1 is ``u * 64 + 2**15``, channel 2
  ``v * 64 + 2**15``, channel 3 is 1 where the flow is known and 0 elsewhere.

Readers check the header against the file size before allocating and raise
:class:`FlowFileError` (an :class:`~gpu_kernels.errors.InputError`) with one line; writers
are atomic (:func:`app.io.atomic.atomic_write`).

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> from app.io.flow_io import read_flow, write_flow
>>> flow = np.zeros((2, 3, 2), np.float32); flow[..., 0] = 1.5
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> p = write_flow(d / "f.flo", flow)
>>> back, valid = read_flow(p)
>>> back.shape, float(back[0, 0, 0]), bool(valid.all())
((2, 3, 2), 1.5, True)
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from gpu_kernels.errors import InputError

from .atomic import atomic_write, write_failure
from .inputs import check_input_file

__all__ = [
    "FLOW_EXTENSIONS",
    "FlowFileError",
    "FLO_TAG",
    "UNKNOWN_FLOW",
    "read_flow",
    "write_flow",
    "read_flo",
    "write_flo",
    "read_kitti_png",
    "write_kitti_png",
    "as_flow",
]

FLOW_EXTENSIONS = (".flo", ".png")
FLO_TAG = 202021.25
#: written for unknown flow in .flo files; any value above UNKNOWN_THRESHOLD is unknown on reading
UNKNOWN_FLOW = 1e10
UNKNOWN_THRESHOLD = 1e9
#: the largest width or height accepted (a sanity bound on headers)
MAX_SIDE = 1 << 17
KITTI_SCALE = 64.0
KITTI_OFFSET = 2.0**15


class FlowFileError(InputError):
    """A flow file cannot be read or written. The message is one clear line."""


def _name(path: Path) -> str:
    return path.name or str(path)


def _check_readable(path) -> Path:
    return check_input_file(path, error=FlowFileError, what="a flow file")


def as_flow(flow, valid=None) -> tuple[np.ndarray, np.ndarray]:
    """Normalise ``flow`` to an (H, W, 2) float32 array and ``valid`` to an (H, W) bool mask.

    ``flow`` may be (H, W, 2), (2, H, W) or a pair ``(u, v)``; non-finite entries are unknown.
    """
    if isinstance(flow, (tuple, list)) and len(flow) == 2:
        u, v = (np.asarray(c, dtype=np.float32) for c in flow)
        if u.shape != v.shape or u.ndim != 2:
            raise FlowFileError(f"u and v must be 2-D arrays of one shape, got {u.shape} and {v.shape}")
        f = np.stack([u, v], axis=-1)
    else:
        f = np.asarray(flow, dtype=np.float32)
        if f.ndim == 3 and f.shape[0] == 2 and f.shape[-1] != 2:
            f = np.moveaxis(f, 0, -1)
        if f.ndim != 3 or f.shape[-1] != 2:
            raise FlowFileError(f"a flow must be (H, W, 2), (2, H, W) or (u, v), got shape {f.shape}")
    if f.shape[0] < 1 or f.shape[1] < 1:
        raise FlowFileError(f"the flow has no pixels ({f.shape[1]} x {f.shape[0]})")
    ok = np.isfinite(f).all(axis=-1) & (np.abs(f) < UNKNOWN_THRESHOLD).all(axis=-1)
    if valid is not None:
        valid = np.asarray(valid).astype(bool)
        if valid.shape != f.shape[:2]:
            raise FlowFileError(f"the valid mask is {valid.shape[1]} x {valid.shape[0]}, "
                                f"the flow {f.shape[1]} x {f.shape[0]}")
        ok &= valid
    return np.ascontiguousarray(f), ok


# ------------------------------------------------------------------ .flo
def read_flo(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read a Middlebury ``.flo`` file: ``(flow (H, W, 2) float32, valid (H, W) bool)``.

    Unknown flow (magnitude above 1e9, or NaN) is set to 0 in ``flow`` and False in ``valid``.
    """
    path = _check_readable(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 12:
            raise FlowFileError(f"{_name(path)}: truncated .flo header ({len(head)} of 12 bytes)")
        tag, w, h = struct.unpack("<fii", head)
        if tag != FLO_TAG:
            raise FlowFileError(f"{_name(path)}: not a Middlebury .flo file (the header does not start with PIEH)")
        if not (0 < w <= MAX_SIDE and 0 < h <= MAX_SIDE):
            raise FlowFileError(f"{_name(path)}: absurd flow size {w} x {h} in the header")
        need = 12 + 8 * w * h
        if size < need:
            raise FlowFileError(f"{_name(path)}: the file is truncated ({size:,} bytes; a {w} x {h} flow "
                                f"needs {need:,})")
        if size > need:
            raise FlowFileError(f"{_name(path)}: {size - need:,} unexpected bytes after the {w} x {h} flow")
        data = np.fromfile(f, dtype="<f4", count=2 * w * h)
    flow = data.reshape(h, w, 2).astype(np.float32)
    valid = np.isfinite(flow).all(axis=-1) & (np.abs(flow) < UNKNOWN_THRESHOLD).all(axis=-1)
    flow[~valid] = 0.0
    return flow, valid


def write_flo(path: str | os.PathLike, flow, valid=None) -> Path:
    """Write a Middlebury ``.flo`` file atomically; unknown pixels get 1e10."""
    f, ok = as_flow(flow, valid)
    path = Path(path)
    out = f.astype("<f4", copy=True)
    out[~ok] = UNKNOWN_FLOW
    h, w = out.shape[:2]
    try:
        with atomic_write(path, "wb") as fh:
            fh.write(struct.pack("<fii", FLO_TAG, w, h))
            fh.write(out.tobytes())
    except OSError as exc:
        raise FlowFileError(write_failure(path, exc)) from None
    return path


# ------------------------------------------------------------------ KITTI PNG
def read_kitti_png(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read a KITTI 16-bit flow PNG: ``(flow (H, W, 2) float32, valid (H, W) bool)``."""
    from .image_io import ImageReadError, read_image

    path = _check_readable(path)
    try:
        img = read_image(path, mode="keep")
    except ImageReadError as exc:
        raise FlowFileError(str(exc)) from None
    if img.dtype != np.uint16 or img.ndim != 3 or img.shape[2] < 3:
        raise FlowFileError(f"{_name(path)}: not a KITTI flow PNG (it must be 16-bit with 3 channels, "
                            f"this is {img.dtype} with shape {img.shape})")
    uv = (img[..., :2].astype(np.float32) - np.float32(KITTI_OFFSET)) / np.float32(KITTI_SCALE)
    valid = img[..., 2] > 0
    uv[~valid] = 0.0
    return np.ascontiguousarray(uv), valid


def write_kitti_png(path: str | os.PathLike, flow, valid=None) -> Path:
    """Write a KITTI 16-bit flow PNG atomically (values clipped to +-512 px, 1/64 px steps)."""
    from .image_io import ImageReadError, write_image

    f, ok = as_flow(flow, valid)
    enc = np.clip(np.rint(f * np.float32(KITTI_SCALE) + np.float32(KITTI_OFFSET)), 0, 65535).astype(np.uint16)
    img = np.zeros(f.shape[:2] + (3,), np.uint16)
    img[..., :2] = enc
    img[..., :2][~ok] = 0
    img[..., 2] = ok
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise FlowFileError(f"{_name(path)}: KITTI flow files are .png")
    try:
        return Path(write_image(path, img))
    except ImageReadError as exc:
        raise FlowFileError(str(exc)) from None
    except OSError as exc:
        raise FlowFileError(write_failure(path, exc)) from None


# ------------------------------------------------------------------ dispatch
def _kind(path: Path) -> str:
    ext = path.suffix.lower()
    if ext == ".flo":
        return "flo"
    if ext == ".png":
        return "kitti"
    raise FlowFileError(f"{_name(path)}: unknown flow file type {ext or '(no extension)'}; "
                        f"use .flo (Middlebury) or .png (KITTI)")


def read_flow(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read a ``.flo`` or KITTI ``.png`` flow: ``(flow (H, W, 2) float32, valid (H, W) bool)``."""
    path = Path(path)
    return read_flo(path) if _kind(path) == "flo" else read_kitti_png(path)


def write_flow(path: str | os.PathLike, flow, valid=None) -> Path:
    """Write a flow as ``.flo`` or KITTI ``.png`` (by the extension), atomically."""
    path = Path(path)
    return write_flo(path, flow, valid) if _kind(path) == "flo" else write_kitti_png(path, flow, valid)


# ------------------------------------------------------------------ fuzz registry
def _sample_flows(folder: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    f = (rng.standard_normal((12, 17, 2)) * 5).astype(np.float32)
    valid = rng.random((12, 17)) > 0.2
    return [write_flo(folder / "a.flo", f, valid), write_flo(folder / "b.flo", f[:1, :3])]


def _register() -> None:
    from .registry import register_reader

    # (KITTI flows are PNG files: the image reader's fuzzing covers their decoding)
    register_reader("flo flow", read_flo, (".flo",), make_samples=_sample_flows)


_register()
