"""Calibrated image sets for multi-view stereo: Middlebury ``*_par.txt`` folders and COLMAP
sparse models (text or binary), with optional per-image masks.

Readers return a :class:`gpu_kernels.mvs.camera.MVSScene`; every problem is a
:class:`SceneReadError` with one line that names the file (and the line) at fault.

* **Middlebury**: ``name k11 k12 k13 k21 k22 k23 k31 k32 k33 r11 .. r33 t1 t2 t3`` per line,
  projection ``K [R | t]``, images beside the file; a first line holding only the number of
  images is allowed. A ``README.txt`` beside it that states a bounding box (as the
  Middlebury sets do) sets ``scene.bbox``.
* **COLMAP**: ``cameras``, ``images`` and ``points3D`` as ``.txt`` or ``.bin``. COLMAP puts the
  pixel origin at the corner of the top-left pixel; gpulab at its centre, so ``cx, cy`` move
  by -0.5. Cameras with distortion (SIMPLE_RADIAL, RADIAL, OPENCV, FULL_OPENCV,
  OPENCV_FISHEYE) are undistorted to PINHOLE with OpenCV on reading (images and masks);
  other models raise. Seeds come from ``points3D`` with their tracks.
* **Masks**: a folder with one image per view, named ``<image file name>.png`` (COLMAP's
  convention) or ``<name>.<image extension>``; non-zero pixels are reconstructed.

Writers (for ``mvs-synth`` and the COLMAP benchmark): :func:`write_middlebury_par` and
:func:`write_colmap_text`; both write atomically.

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> from gpu_kernels.mvs.camera import look_at
>>> from app.io.scene_io import write_middlebury_par, parse_middlebury_par
>>> cam = look_at([0, 0, -2], [0, 0, 0], [0, -1, 0], focal=100, width=64, height=48)
>>> p = pathlib.Path(tempfile.mkdtemp()) / "s_par.txt"
>>> write_middlebury_par(p, ["v0.png"], [cam])
>>> names, K, R, t = parse_middlebury_par(p)
>>> names, bool(np.allclose(K[0], cam.K)), bool(np.allclose(t[0], cam.t))
(['v0.png'], True, True)
"""

from __future__ import annotations

import os
import pathlib
import re
import struct
from collections.abc import Callable, Sequence

import numpy as np

from app.io.atomic import atomic_write, write_lines
from app.io.image_io import IMAGE_EXTENSIONS, ImageReadError, read_image
from gpu_kernels.jobs import as_progress
from gpu_kernels.mvs.camera import Camera, MVSInputError, MVSScene

from .inputs import check_input_file, failure_reason
from .registry import input_kind

__all__ = [
    "SceneReadError",
    "COLMAP_MODELS",
    "SUPPORTED_COLMAP_MODELS",
    "read_scene",
    "read_middlebury",
    "parse_middlebury_par",
    "read_colmap",
    "read_colmap_model",
    "find_mask",
    "read_bbox_readme",
    "write_middlebury_par",
    "write_colmap_text",
    "qvec_to_rotmat",
    "rotmat_to_qvec",
]


class SceneReadError(MVSInputError):
    """A scene (cameras, images, masks, points) cannot be read. One clear line."""


#: COLMAP camera models: id -> (name, number of parameters).
COLMAP_MODELS = {
    0: ("SIMPLE_PINHOLE", 3), 1: ("PINHOLE", 4), 2: ("SIMPLE_RADIAL", 4), 3: ("RADIAL", 5),
    4: ("OPENCV", 8), 5: ("OPENCV_FISHEYE", 8), 6: ("FULL_OPENCV", 12), 7: ("FOV", 5),
    8: ("SIMPLE_RADIAL_FISHEYE", 4), 9: ("RADIAL_FISHEYE", 5), 10: ("THIN_PRISM_FISHEYE", 12),
    11: ("RAD_TAN_THIN_PRISM_FISHEYE", 16),
}
_MODEL_BY_NAME = {name: (mid, n) for mid, (name, n) in COLMAP_MODELS.items()}
#: The models gpulab reads (the distorted ones are undistorted to PINHOLE).
SUPPORTED_COLMAP_MODELS = ("SIMPLE_PINHOLE", "PINHOLE", "SIMPLE_RADIAL", "RADIAL", "OPENCV",
                           "FULL_OPENCV", "OPENCV_FISHEYE")

_MAX_VIEWS = 100_000
_MAX_PAR_BYTES = 64 << 20  # 21 numbers a line: room for a million views
_MAX_POINTS = 200_000_000


def _name(p: pathlib.Path) -> str:
    return p.name or str(p)


# =============================================================================== Middlebury
def parse_middlebury_par(path: str | os.PathLike):
    """Parse a Middlebury ``*_par.txt``: returns ``(names, K (N,3,3), R (N,3,3), t (N,3))``."""
    path = pathlib.Path(path)
    check_input_file(path, error=SceneReadError, what="a camera file")
    if path.stat().st_size > _MAX_PAR_BYTES:
        raise SceneReadError(f"{_name(path)}: {path.stat().st_size:,} bytes is far too large for a camera file")
    try:
        text = path.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise SceneReadError(f"{_name(path)}: not a text file (Middlebury *_par.txt expected)") from None
    lines = [(i + 1, ln.strip()) for i, ln in enumerate(text.splitlines())]
    lines = [(i, ln) for i, ln in lines if ln and not ln.startswith("#")]
    if not lines:
        raise SceneReadError(f"{_name(path)}: the camera file is empty")
    declared = None
    first = lines[0][1].split()
    if len(first) == 1:
        if not first[0].isdigit():
            raise SceneReadError(f"{_name(path)} line {lines[0][0]}: expected the number of images "
                                 f"or 'name k11 .. t3', got {first[0]!r}")
        declared = int(first[0])
        lines = lines[1:]
    names, Ks, Rs, ts = [], [], [], []
    for lineno, ln in lines:
        tok = ln.split()
        if len(tok) != 22:
            raise SceneReadError(f"{_name(path)} line {lineno}: expected an image name and 21 numbers "
                                 f"(k11..k33 r11..r33 t1 t2 t3), got {len(tok)} fields")
        try:
            vals = np.array([float(x) for x in tok[1:]], dtype=np.float64)
        except ValueError:
            bad = next(x for x in tok[1:] if not _is_float(x))
            raise SceneReadError(f"{_name(path)} line {lineno}: {bad!r} is not a number") from None
        if not np.isfinite(vals).all():
            raise SceneReadError(f"{_name(path)} line {lineno}: NaN or infinite camera parameter")
        names.append(tok[0])
        Ks.append(vals[:9].reshape(3, 3))
        Rs.append(vals[9:18].reshape(3, 3))
        ts.append(vals[18:21])
    if not names:
        raise SceneReadError(f"{_name(path)}: no camera lines")
    if declared is not None and declared != len(names):
        raise SceneReadError(f"{_name(path)}: the first line says {declared} images but "
                             f"{len(names)} camera lines follow")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SceneReadError(f"{_name(path)}: image {dup} is listed twice")
    return names, np.array(Ks), np.array(Rs), np.array(ts)


def _is_float(x: str) -> bool:
    try:
        float(x)
        return True
    except ValueError:
        return False


def read_bbox_readme(folder: str | os.PathLike) -> np.ndarray | None:
    """The bounding box a Middlebury ``README.txt`` states, as ``(2, 3)`` (min, max), or None."""
    folder = pathlib.Path(folder)
    for cand in ("README.txt", "README", "readme.txt"):
        p = folder / cand
        if p.is_file():
            text = p.read_text(errors="replace")
            if "bounding box" not in text.lower():
                continue
            tail = text[text.lower().index("bounding box"):]
            groups = re.findall(r"\(\s*([-+0-9.eE]+)[\s,]+([-+0-9.eE]+)[\s,]+([-+0-9.eE]+)\s*\)", tail)
            if len(groups) >= 2:
                a = np.array(groups[:2], dtype=np.float64)
                return np.stack([a.min(0), a.max(0)])
    return None


def _load_image(path: pathlib.Path, what: str) -> np.ndarray:
    try:
        return read_image(path, mode="rgb")
    except ImageReadError as exc:
        raise SceneReadError(f"{what}: {exc.user_message}") from None


def _scene_file(folder: pathlib.Path, name: str) -> pathlib.Path:
    """An image the scene file names, kept inside ``folder`` (see :mod:`app.io.paths`)."""
    from .paths import OutsidePathError, contained_path

    try:
        return contained_path(folder, name, what="image")
    except OutsidePathError as exc:
        raise SceneReadError(exc.user_message) from None


def find_mask(mask_dir: pathlib.Path, image_name: str) -> pathlib.Path | None:
    """The mask file of ``image_name`` in ``mask_dir`` (COLMAP's ``name.ext.png`` or ``stem.*``)."""
    p = _scene_file(mask_dir, image_name + ".png")
    if p.is_file():
        return p
    stem = pathlib.PurePath(image_name)
    base = mask_dir / stem.parent / stem.stem
    for ext in IMAGE_EXTENSIONS:
        for cand in (base.with_name(base.name + ext), base.with_name(base.name + "_mask" + ext)):
            if cand.is_file():
                return cand
    return None


def _read_masks(mask_dir, image_names: Sequence[str], shapes, progress=None) -> list:
    if mask_dir is None:
        return [None] * len(image_names)
    mask_dir = pathlib.Path(mask_dir)
    if not mask_dir.is_dir():
        raise SceneReadError(f"no such mask folder: {mask_dir}")
    masks, found = [], 0
    for name, shp in zip(image_names, shapes, strict=True):
        p = find_mask(mask_dir, name)
        if p is None:
            masks.append(None)
            continue
        try:
            m = read_image(p, mode="keep")
        except ImageReadError as exc:
            raise SceneReadError(f"mask of {name}: {exc.user_message}") from None
        if m.ndim == 3:
            m = m[..., :3].max(axis=2)
        if m.shape[:2] != tuple(shp[:2]):
            raise SceneReadError(f"mask {_name(p)} is {m.shape[1]} x {m.shape[0]} but image {name} is "
                                 f"{shp[1]} x {shp[0]}")
        masks.append(m > 0)
        found += 1
    if found == 0:
        raise SceneReadError(f"no mask in {mask_dir} matches an image name (expected e.g. "
                             f"{image_names[0]}.png)")
    return masks


def read_middlebury(par_path: str | os.PathLike, *, image_dir: str | os.PathLike | None = None,
                    mask_dir: str | os.PathLike | None = None, progress=None) -> MVSScene:
    """Read a Middlebury MVS scene: the ``*_par.txt`` file and the images it names.

    The images are looked up in ``image_dir`` (default: the folder of the par file).
    """
    progress = as_progress(progress)
    par_path = pathlib.Path(par_path)
    names, Ks, Rs, ts = parse_middlebury_par(par_path)
    folder = pathlib.Path(image_dir) if image_dir is not None else par_path.parent
    images, cams = [], []
    for i, name in enumerate(names):
        progress.update(i / len(names), f"reading image {i + 1}/{len(names)}")
        p = _scene_file(folder, name)
        if not p.is_file():
            raise SceneReadError(f"{_name(par_path)} names image {name}, but {p} does not exist")
        img = _load_image(p, f"image {name}")
        h, w = img.shape[:2]
        try:
            cams.append(Camera(Ks[i], Rs[i], ts[i], w, h))
        except MVSInputError as exc:
            raise SceneReadError(f"{_name(par_path)}, camera of {name}: {exc}") from None
        images.append(img)
    masks = _read_masks(mask_dir, names, [im.shape for im in images])
    progress.update(1.0, "scene read")
    return MVSScene(names=[pathlib.PurePath(n).stem for n in names], cameras=cams, images=images,
                    masks=masks, bbox=read_bbox_readme(par_path.parent),
                    meta={"format": "middlebury", "path": str(par_path), "files": list(names)})


def write_middlebury_par(path: str | os.PathLike, names: Sequence[str], cameras: Sequence[Camera],
                         *, count_line: bool = True) -> None:
    """Write cameras as a Middlebury ``*_par.txt`` (atomically)."""
    lines = [str(len(names))] if count_line else []
    for n, c in zip(names, cameras, strict=True):
        vals = list(c.K.reshape(-1)) + list(c.R.reshape(-1)) + list(c.t)
        lines.append(n + " " + " ".join(f"{v:.17g}" for v in vals))
    write_lines(path, lines)


# =============================================================================== COLMAP
def qvec_to_rotmat(q) -> np.ndarray:
    """COLMAP quaternion ``(w, x, y, z)`` to a rotation matrix."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * y * y - 2 * z * z, 2 * x * y - 2 * w * z, 2 * z * x + 2 * w * y],
        [2 * x * y + 2 * w * z, 1 - 2 * x * x - 2 * z * z, 2 * y * z - 2 * w * x],
        [2 * z * x - 2 * w * y, 2 * y * z + 2 * w * x, 1 - 2 * x * x - 2 * y * y]])


def rotmat_to_qvec(R) -> np.ndarray:
    """Rotation matrix to a COLMAP quaternion ``(w, x, y, z)`` with ``w >= 0``."""
    Rxx, Ryx, Rzx, Rxy, Ryy, Rzy, Rxz, Ryz, Rzz = np.asarray(R, dtype=np.float64).flat
    K = np.array([
        [Rxx - Ryy - Rzz, 0, 0, 0],
        [Ryx + Rxy, Ryy - Rxx - Rzz, 0, 0],
        [Rzx + Rxz, Rzy + Ryz, Rzz - Rxx - Ryy, 0],
        [Ryz - Rzy, Rzx - Rxz, Rxy - Ryx, Rxx + Ryy + Rzz]]) / 3.0
    vals, vecs = np.linalg.eigh(K)
    q = vecs[[3, 0, 1, 2], np.argmax(vals)]
    return -q if q[0] < 0 else q


class _Reader:
    """Bounds-checked little-endian reads from a bytes buffer."""

    def __init__(self, data: bytes, name: str):
        self.data, self.pos, self.name = data, 0, name

    def need(self, n: int, what: str):
        if self.pos + n > len(self.data):
            raise SceneReadError(f"{self.name}: the file is truncated (reading {what})")

    def unpack(self, fmt: str, what: str):
        n = struct.calcsize("<" + fmt)
        self.need(n, what)
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += n
        return v

    def array(self, dtype, count: int, what: str) -> np.ndarray:
        dt = np.dtype(dtype)
        n = dt.itemsize * count
        self.need(n, what)
        a = np.frombuffer(self.data, dtype=dt, count=count, offset=self.pos)
        self.pos += n
        return a

    def cstring(self, what: str) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise SceneReadError(f"{self.name}: the file is truncated (reading {what})")
        s = self.data[self.pos:end].decode("utf-8", errors="replace")
        self.pos = end + 1
        return s

    def count(self, what: str, min_bytes_each: int, limit: int) -> int:
        (n,) = self.unpack("Q", what)
        left = len(self.data) - self.pos
        if n > limit or n * min_bytes_each > left:
            raise SceneReadError(f"{self.name}: the header says {n:,} {what}, more than the file can hold "
                                 f"(corrupt or not a COLMAP file)")
        return int(n)


def _check_model(name: str, model: str, params, path_name: str, cam_id) -> None:
    if model not in _MODEL_BY_NAME:
        raise SceneReadError(f"{path_name}: camera {cam_id} has unknown model {model!r}")
    n = _MODEL_BY_NAME[model][1]
    if len(params) != n:
        raise SceneReadError(f"{path_name}: camera {cam_id} ({model}) needs {n} parameters, got {len(params)}")


def _text_records(p: pathlib.Path):
    """``(line number, tokens)`` of each line of a COLMAP text file that is not blank or a comment."""
    for lineno, ln in enumerate(p.read_text(errors="replace").splitlines(), 1):
        ln = ln.strip()
        if ln and not ln.startswith("#"):
            yield lineno, ln.split()


def _read_cameras_text(p: pathlib.Path) -> dict:
    cams = {}
    for lineno, tok in _text_records(p):
        try:
            cid, model, w, h = int(tok[0]), tok[1], int(tok[2]), int(tok[3])
            params = [float(x) for x in tok[4:]]
        except (ValueError, IndexError):
            raise SceneReadError(f"{_name(p)} line {lineno}: expected CAMERA_ID MODEL WIDTH HEIGHT PARAMS") from None
        _check_model(_name(p), model, params, f"{_name(p)} line {lineno}", cid)
        cams[cid] = (model, w, h, np.array(params))
    return cams


def _read_cameras_bin(p: pathlib.Path) -> dict:
    r = _Reader(p.read_bytes(), _name(p))
    n = r.count("cameras", 24, _MAX_VIEWS)
    cams = {}
    for _ in range(n):
        cid, mid, w, h = r.unpack("iiQQ", "a camera")
        if mid not in COLMAP_MODELS:
            raise SceneReadError(f"{_name(p)}: camera {cid} has unknown model id {mid}")
        model, k = COLMAP_MODELS[mid]
        params = r.array("<f8", k, "camera parameters").copy()
        cams[cid] = (model, int(w), int(h), params)
    return cams


def _read_images_text(p: pathlib.Path) -> dict:
    imgs = {}
    lines = p.read_text(errors="replace").splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i].strip()
        lineno = i + 1
        i += 1
        if not ln or ln.startswith("#"):
            continue
        tok = ln.split()
        if len(tok) < 10:
            raise SceneReadError(f"{_name(p)} line {lineno}: expected IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME")
        try:
            iid = int(tok[0])
            q = np.array([float(x) for x in tok[1:5]])
            t = np.array([float(x) for x in tok[5:8]])
            cid = int(tok[8])
        except ValueError:
            raise SceneReadError(f"{_name(p)} line {lineno}: malformed image line") from None
        name = " ".join(tok[9:])
        # the points2D line follows (possibly empty); its ids are not needed
        if i < len(lines):
            i += 1
        imgs[iid] = (q, t, cid, name)
    return imgs


def _read_images_bin(p: pathlib.Path) -> dict:
    r = _Reader(p.read_bytes(), _name(p))
    n = r.count("images", 64 + 8 + 1, _MAX_VIEWS)
    imgs = {}
    for _ in range(n):
        vals = r.unpack("i7di", "an image")
        iid, q, t, cid = vals[0], np.array(vals[1:5]), np.array(vals[5:8]), vals[8]
        name = r.cstring("an image name")
        (npts,) = r.unpack("Q", "the number of 2-D points")
        if npts * 24 > len(r.data) - r.pos:
            raise SceneReadError(f"{_name(p)}: image {name} claims {npts:,} 2-D points, more than the file holds")
        r.pos += 24 * int(npts)
        imgs[iid] = (q, t, cid, name)
    return imgs


def _read_points_text(p: pathlib.Path):
    xyz, rgb, tracks = [], [], []
    for lineno, tok in _text_records(p):
        try:
            xyz.append([float(x) for x in tok[1:4]])
            rgb.append([int(x) for x in tok[4:7]])
            tr = np.array([int(x) for x in tok[8:]], dtype=np.int64)
        except (ValueError, IndexError):
            raise SceneReadError(f"{_name(p)} line {lineno}: malformed 3-D point line") from None
        if len(xyz[-1]) != 3 or len(rgb[-1]) != 3:
            raise SceneReadError(f"{_name(p)} line {lineno}: malformed 3-D point line")
        tracks.append(tr[0::2])
    return (np.array(xyz, dtype=np.float64).reshape(-1, 3), np.array(rgb, dtype=np.uint8).reshape(-1, 3),
            tracks)


def _read_points_bin(p: pathlib.Path):
    r = _Reader(p.read_bytes(), _name(p))
    n = r.count("3-D points", 43 + 8, _MAX_POINTS)
    xyz = np.empty((n, 3))
    rgb = np.empty((n, 3), np.uint8)
    tracks = []
    for k in range(n):
        vals = r.unpack("Q3d3BdQ", "a 3-D point")
        xyz[k] = vals[1:4]
        rgb[k] = vals[4:7]
        tl = vals[8]
        if tl * 8 > len(r.data) - r.pos:
            raise SceneReadError(f"{_name(p)}: a track claims {tl:,} entries, more than the file holds")
        tr = r.array("<i4", 2 * int(tl), "a track")
        tracks.append(tr[0::2].astype(np.int64))
    return xyz, rgb, tracks


def _model_file(folder: pathlib.Path, stem: str) -> tuple[pathlib.Path, bool] | None:
    for ext, binary in ((".bin", True), (".txt", False)):
        p = folder / (stem + ext)
        if p.is_file():
            return p, binary
    return None


def read_colmap_model(model_dir: str | os.PathLike):
    """Read a COLMAP sparse model folder (``.bin`` preferred over ``.txt``).

    Returns ``(cameras, images, points)``: ``cameras`` maps id to ``(model, width, height,
    params)``, ``images`` maps id to ``(qvec, tvec, camera_id, name)`` and ``points`` is
    ``(xyz (N,3), rgb (N,3), tracks)`` with each track the image ids that see the point, or
    None when there is no points3D file.
    """
    d = pathlib.Path(model_dir)
    if not d.is_dir():
        raise SceneReadError(f"no such COLMAP model folder: {d}")
    cf = _model_file(d, "cameras")
    imf = _model_file(d, "images")
    if cf is None or imf is None:
        raise SceneReadError(f"{d} is not a COLMAP model: cameras.bin/.txt and images.bin/.txt are needed")
    try:
        cams = _read_cameras_bin(cf[0]) if cf[1] else _read_cameras_text(cf[0])
        imgs = _read_images_bin(imf[0]) if imf[1] else _read_images_text(imf[0])
        pf = _model_file(d, "points3D")
        pts = None
        if pf is not None:
            pts = _read_points_bin(pf[0]) if pf[1] else _read_points_text(pf[0])
    except (struct.error, UnicodeDecodeError) as exc:
        raise SceneReadError(f"{d}: corrupt COLMAP model ({failure_reason(exc)})") from None
    if not imgs:
        raise SceneReadError(f"{d}: the COLMAP model has no images")
    for iid, (_, _, cid, name) in imgs.items():
        if cid not in cams:
            raise SceneReadError(f"{d}: image {name} (id {iid}) uses camera {cid}, which is not in the model")
    return cams, imgs, pts


def _pinhole_K(model: str, params: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(K in COLMAP's corner convention, OpenCV distortion or None)."""
    p = params
    if model in ("SIMPLE_PINHOLE", "SIMPLE_RADIAL", "RADIAL"):
        f, cx, cy = p[0], p[1], p[2]
        fx = fy = f
    else:
        fx, fy, cx, cy = p[0], p[1], p[2], p[3]
    K = np.array([[fx, 0, cx], [0, fy, cy], [0, 0, 1.0]])
    dist = None
    if model == "SIMPLE_RADIAL":
        dist = np.array([p[3], 0, 0, 0])
    elif model == "RADIAL":
        dist = np.array([p[3], p[4], 0, 0])
    elif model == "OPENCV":
        dist = np.array(p[4:8])
    elif model == "FULL_OPENCV":
        dist = np.array(p[4:12])
    elif model == "OPENCV_FISHEYE":
        dist = np.array(p[4:8])
    if dist is not None and not np.any(dist):
        dist = None
    return K, dist


def _undistort(img: np.ndarray, K_cv: np.ndarray, dist: np.ndarray, fisheye: bool, nearest: bool = False):
    import cv2

    h, w = img.shape[:2]
    interp = cv2.INTER_NEAREST if nearest else cv2.INTER_LINEAR
    if fisheye:
        m1, m2 = cv2.fisheye.initUndistortRectifyMap(K_cv, dist, np.eye(3), K_cv, (w, h), cv2.CV_32FC1)
    else:
        m1, m2 = cv2.initUndistortRectifyMap(K_cv, dist, np.eye(3), K_cv, (w, h), cv2.CV_32FC1)
    src = img.astype(np.uint8) if img.dtype == np.bool_ else img
    out = cv2.remap(src, m1, m2, interp, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return out.astype(bool) if img.dtype == np.bool_ else out


def _find_image_dir(model_dir: pathlib.Path, first_name: str) -> pathlib.Path | None:
    cands = [model_dir / "images", model_dir.parent / "images", model_dir.parent.parent / "images",
             model_dir.parent, model_dir]
    for c in cands:
        if (c / first_name).is_file():
            return c
    return None


def read_colmap(model_dir: str | os.PathLike, *, image_dir: str | os.PathLike | None = None,
                mask_dir: str | os.PathLike | None = None, progress=None) -> MVSScene:
    """Read a COLMAP model and its images; undistort where the camera model has distortion.

    ``image_dir`` defaults to an ``images`` folder in, beside or above the model folder.
    Views are in the order of their image ids.
    """
    progress = as_progress(progress)
    model_dir = pathlib.Path(model_dir)
    cams, imgs, pts = read_colmap_model(model_dir)
    order = sorted(imgs)
    first = imgs[order[0]][3]
    folder = pathlib.Path(image_dir) if image_dir is not None else _find_image_dir(model_dir, first)
    if folder is None:
        raise SceneReadError(f"cannot find the images of {model_dir} (looked for {first} in images/ next to "
                             f"the model): pass the image folder")
    for cid, (model, _, _, _) in cams.items():
        if model not in SUPPORTED_COLMAP_MODELS:
            raise SceneReadError(f"camera {cid} uses the {model} model, which gpulab cannot undistort; "
                                 f"run COLMAP's image_undistorter first (supported: "
                                 f"{', '.join(SUPPORTED_COLMAP_MODELS)})")
    names, cameras, images, files = [], [], [], []
    undistorted = 0
    dists = []
    for k, iid in enumerate(order):
        q, t, cid, name = imgs[iid]
        progress.update(k / len(order), f"reading image {k + 1}/{len(order)}")
        model, w, h, params = cams[cid]
        p = _scene_file(folder, name)
        if not p.is_file():
            raise SceneReadError(f"the model names image {name}, but {p} does not exist")
        img = _load_image(p, f"image {name}")
        if img.shape[0] != h or img.shape[1] != w:
            raise SceneReadError(f"image {name} is {img.shape[1]} x {img.shape[0]} but camera {cid} says {w} x {h}")
        K, dist = _pinhole_K(model, params)
        K_cv = K.copy()
        K_cv[0, 2] -= 0.5
        K_cv[1, 2] -= 0.5
        if dist is not None:
            img = _undistort(img, K_cv, dist, model == "OPENCV_FISHEYE")
            undistorted += 1
        dists.append((K_cv, dist, model == "OPENCV_FISHEYE"))
        try:
            cam = Camera(K_cv, qvec_to_rotmat(q), t, w, h)
        except MVSInputError as exc:
            raise SceneReadError(f"camera of {name}: {exc}") from None
        names.append(pathlib.PurePath(name).stem)
        cameras.append(cam)
        images.append(img)
        files.append(name)
    if len(set(names)) != len(names):
        # images of the same stem in different folders: keep the relative path as the name
        names = [str(pathlib.PurePath(f).with_suffix("")).replace("/", "_") for f in files]
    masks = _read_masks(mask_dir, files, [im.shape for im in images])
    masks = [m if m is None or d[1] is None else _undistort(m, d[0], d[1], d[2], nearest=True)
             for m, d in zip(masks, dists, strict=True)]
    points = point_views = colors = None
    if pts is not None and len(pts[0]):
        idx = {iid: k for k, iid in enumerate(order)}
        points, colors = pts[0], pts[1]
        point_views = [np.array([idx[i] for i in tr if i in idx], dtype=np.int32) for tr in pts[2]]
    progress.update(1.0, "scene read")
    return MVSScene(names=names, cameras=cameras, images=images, masks=masks, points=points,
                    point_views=point_views, point_colors=colors,
                    meta={"format": "colmap", "path": str(model_dir), "files": files,
                          "undistorted": undistorted})


def write_colmap_text(folder: str | os.PathLike, names: Sequence[str], cameras: Sequence[Camera], *,
                      points: np.ndarray | None = None, point_views: Sequence | None = None) -> None:
    """Write a COLMAP text model (PINHOLE cameras, one per image; empty points2D lines; the
    points' tracks name the 0-based ``point_views`` as image ids with point2D index 0)."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_write(folder / "cameras.txt", "w") as f:
        f.write("# CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]\n")
        for i, c in enumerate(cameras):
            K = c.K
            f.write(f"{i + 1} PINHOLE {c.width} {c.height} {K[0, 0]:.10g} {K[1, 1]:.10g} "
                    f"{K[0, 2] + 0.5:.10g} {K[1, 2] + 0.5:.10g}\n")
    with atomic_write(folder / "images.txt", "w") as f:
        f.write("# IMAGE_ID, QW, QX, QY, QZ, TX, TY, TZ, CAMERA_ID, NAME\n# POINTS2D[] as (X, Y, POINT3D_ID)\n")
        for i, (n, c) in enumerate(zip(names, cameras, strict=True)):
            q = rotmat_to_qvec(c.R)
            f.write(f"{i + 1} {q[0]:.17g} {q[1]:.17g} {q[2]:.17g} {q[3]:.17g} "
                    f"{c.t[0]:.17g} {c.t[1]:.17g} {c.t[2]:.17g} {i + 1} {n}\n\n")
    with atomic_write(folder / "points3D.txt", "w") as f:
        f.write("# POINT3D_ID, X, Y, Z, R, G, B, ERROR, TRACK[] as (IMAGE_ID, POINT2D_IDX)\n")
        if points is not None:
            for k, X in enumerate(np.asarray(points).reshape(-1, 3)):
                track = "" if point_views is None else "".join(f" {int(v) + 1} 0" for v in point_views[k])
                f.write(f"{k + 1} {X[0]:.10g} {X[1]:.10g} {X[2]:.10g} 128 128 128 0{track}\n")


# =============================================================================== any scene
def read_scene(path: str | os.PathLike, *, image_dir=None, mask_dir=None,
               progress: Callable | None = None) -> MVSScene:
    """Read a scene given as a Middlebury par file or a COLMAP model folder.

    A folder holding exactly one ``*_par.txt`` (and no COLMAP model) is read as Middlebury.
    """
    p = pathlib.Path(path)
    if not p.exists():
        raise SceneReadError(f"no such scene: {p}")
    # a FIFO or a device: refused unopened, as by every reader
    check_input_file(p, error=SceneReadError, what="a scene", allow_dir=True, label=str(p))
    if p.is_file():
        if p.name in ("cameras.txt", "images.txt", "cameras.bin", "images.bin", "points3D.txt", "points3D.bin"):
            return read_colmap(p.parent, image_dir=image_dir, mask_dir=mask_dir, progress=progress)
        if p.suffix.lower() in IMAGE_EXTENSIONS:
            # one picture of a scene: not a camera file (read as one, it got "line 1: expected an
            # image name and 21 numbers"); say what to open instead, naming the scene file beside it
            pars = sorted(q.name for q in p.parent.glob("*_par.txt"))
            beside = (f": open {pars[0]} beside it (or its folder)" if len(pars) == 1 else
                      ": open the scene's *_par.txt (Middlebury) or its COLMAP model folder")
            raise SceneReadError(f"{p.name} is an image, not a scene; a scene is its cameras and "
                                 f"images{beside}")
        return read_middlebury(p, image_dir=image_dir, mask_dir=mask_dir, progress=progress)
    if _model_file(p, "cameras") is not None:
        return read_colmap(p, image_dir=image_dir, mask_dir=mask_dir, progress=progress)
    for sub in input_kind("scene").folder_subdirs:   # sparse/0, sparse, dense/sparse
        if _model_file(p / sub, "cameras") is not None:
            return read_colmap(p / sub, image_dir=image_dir, mask_dir=mask_dir, progress=progress)
    pars = sorted(p.glob("*_par.txt"))
    if len(pars) == 1:
        return read_middlebury(pars[0], image_dir=image_dir, mask_dir=mask_dir, progress=progress)
    if len(pars) > 1:
        raise SceneReadError(f"{p} holds {len(pars)} *_par.txt files: name the one to use")
    raise SceneReadError(f"{p} is neither a Middlebury par file nor a COLMAP model folder "
                         f"(cameras/images .txt or .bin)")


def _register() -> None:
    from gpu_kernels.mvs.camera import look_at

    from .registry import register_reader

    def _samples(folder: pathlib.Path) -> list[pathlib.Path]:
        cams = [look_at([2 * np.cos(a), 2 * np.sin(a), 1], [0, 0, 0], [0, 0, 1], focal=500, width=640, height=480)
                for a in (0.0, 0.4, 0.8)]
        out = [folder / "cams_par.txt", folder / "nocount_par.txt"]
        write_middlebury_par(out[0], ["a.png", "b.png", "c.png"], cams)
        write_middlebury_par(out[1], ["a.png", "b.png", "c.png"], cams, count_line=False)
        return out

    register_reader("middlebury cameras", parse_middlebury_par, ("_par.txt",), make_samples=_samples)


_register()
