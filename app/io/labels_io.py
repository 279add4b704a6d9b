"""Label images, region tables and BSDS ground truth for the image segmentation tool.

Label images (one integer per pixel, 0 = no region, regions 1..R):

``.png``
    16-bit grey. More than 65,535 labels do not fit: refused with a message that names
    the formats that hold them. Reading also takes 8-bit grey and colour-coded PNGs (the
    COCO panoptic convention: id = R + 256 G + 65536 B).
``.tif`` / ``.tiff``
    32-bit unsigned grey (tifffile).
``.npy``
    NumPy's own format, int32.

Region tables are CSV, one row per region with ``regionprops_table``-style columns
(``label, area, bbox-0, ..., moments_central-3-3``).

BSDS500 ground truth (``groundTruth/*.mat``, a 1 x K cell of structs with fields
``Segmentation`` and ``Boundaries``) is read by :func:`read_bsds_groundtruth`.

Writers are atomic (:func:`app.io.atomic.atomic_write`); readers raise
:class:`LabelsIOError` (an :class:`~gpu_kernels.errors.InputError`) with one clear line.

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> from app.io.labels_io import read_labels, write_labels
>>> p = write_labels(pathlib.Path(tempfile.mkdtemp()) / "labels.png", np.array([[1, 2], [3, 300]]))
>>> read_labels(p).tolist()
[[1, 2], [3, 300]]
"""

from __future__ import annotations

import csv
import io
import os
import pathlib

import numpy as np

from gpu_kernels.errors import InputError

from .atomic import OutputPathError, atomic_write, check_output_file, write_failure
from .inputs import check_input_file, failure_reason

__all__ = [
    "LABEL_EXTENSIONS",
    "PNG_MAX_LABEL",
    "LabelsIOError",
    "check_labels_output",
    "write_labels",
    "read_labels",
    "write_region_table",
    "read_region_table",
    "read_bsds_groundtruth",
]

from .formats import LABEL_EXTENSIONS  # noqa: E402 - declared there (no NumPy)

PNG_MAX_LABEL = 65535
MAX_PIXELS = 1 << 31


class LabelsIOError(InputError):
    """A label image, region table or ground-truth file cannot be read or written."""


def _name(path: pathlib.Path) -> str:
    return path.name or str(path)


def _ext(path: pathlib.Path) -> str:
    ext = path.suffix.lower()
    if ext not in LABEL_EXTENSIONS:
        raise LabelsIOError(
            f"{_name(path)}: unknown label format {ext or '(no extension)'!r}; use .png (16-bit), .tif (32-bit) or .npy")
    return ext


def check_labels_output(path: str | os.PathLike) -> pathlib.Path:
    """Check before any work that labels can be written at ``path``: a known extension,
    an existing writable folder, not a folder itself."""
    path = pathlib.Path(path)
    _ext(path)
    try:
        return check_output_file(path)
    except OutputPathError as e:
        raise LabelsIOError(str(e)) from None


def _check_labels(labels) -> np.ndarray:
    a = np.asarray(labels)
    if a.ndim != 2 or 0 in a.shape:
        raise LabelsIOError(f"labels must be a non-empty 2-D image, got shape {a.shape}")
    if a.dtype.kind not in "iub":
        raise LabelsIOError(f"labels must be integers, got {a.dtype}")
    if a.size and int(a.min()) < 0:
        raise LabelsIOError("labels must be >= 0")
    return a


def write_labels(path: str | os.PathLike, labels) -> pathlib.Path:
    """Write a label image in the format the extension names (see the module docstring)."""
    path = pathlib.Path(path)
    ext = _ext(path)
    a = _check_labels(labels)
    top = int(a.max()) if a.size else 0
    if ext == ".png":
        if top > PNG_MAX_LABEL:
            raise LabelsIOError(
                f"{_name(path)}: {top:,} labels do not fit a 16-bit PNG (at most {PNG_MAX_LABEL:,}); "
                "write .tif (32-bit) or .npy instead, or merge small regions (a larger minimum size)")
        import cv2

        ok, buf = cv2.imencode(".png", np.ascontiguousarray(a.astype(np.uint16)))
        if not ok:
            raise LabelsIOError(f"{_name(path)}: the PNG encoder failed")
        data = buf.tobytes()
    elif ext in (".tif", ".tiff"):
        if top >= 2**32:
            raise LabelsIOError(f"{_name(path)}: labels above 4,294,967,295 do not fit a 32-bit TIFF; write .npy")
        import tifffile

        bio = io.BytesIO()
        tifffile.imwrite(bio, a.astype(np.uint32), photometric="minisblack", compression="zlib")
        data = bio.getvalue()
    else:
        bio = io.BytesIO()
        dt = np.int32 if top < 2**31 else np.int64
        np.save(bio, a.astype(dt), allow_pickle=False)
        data = bio.getvalue()
    try:
        with atomic_write(path, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise LabelsIOError(write_failure(path, exc)) from None
    return path


def _png_size(path: pathlib.Path) -> tuple[int, int] | None:
    """(width, height) from the PNG header without decoding (Pillow), or None."""
    try:
        from PIL import Image

        Image.MAX_IMAGE_PIXELS = None  # checked here, with a clear message
        with Image.open(path) as im:
            return int(im.size[0]), int(im.size[1])
    except Exception:  # noqa: BLE001 - not a PNG Pillow can parse
        return None


def read_labels(path: str | os.PathLike) -> np.ndarray:
    """Read a label image (.png 8/16-bit grey, .tif integer grey, .npy 2-D integer)."""
    path = pathlib.Path(path)
    ext = _ext(path)
    check_input_file(path, error=LabelsIOError, what="a label image")
    try:
        if ext == ".npy":
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
            if arr.ndim != 2 or arr.dtype.kind not in "iub":
                raise LabelsIOError(f"{_name(path)}: expected a 2-D integer array, got {arr.dtype} {arr.shape}")
            arr = np.array(arr)
        elif ext == ".png":
            import cv2

            size = _png_size(path)
            if size is None:
                raise LabelsIOError(f"{_name(path)}: not a readable PNG (corrupt or truncated)")
            if size[0] * size[1] > MAX_PIXELS:
                raise LabelsIOError(f"{_name(path)}: the image is too large ({size[0]} x {size[1]})")
            arr = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
            if arr is None and not str(path).isascii():  # OpenCV's imread wants an ASCII path
                arr = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
            if arr is None:
                raise LabelsIOError(f"{_name(path)}: not a readable PNG (corrupt or truncated)")
            if arr.ndim == 3:  # colour-coded ids (COCO panoptic): R + 256 G + 65536 B; alpha ignored
                bgr = arr[..., :3].astype(np.int64)
                arr = bgr[..., 2] + 256 * bgr[..., 1] + 65536 * bgr[..., 0]
        else:
            import tifffile

            with tifffile.TiffFile(path) as tf:
                if not tf.pages:
                    raise LabelsIOError(f"{_name(path)}: the TIFF file holds no image")
                page = tf.pages[0]
                shape = tuple(int(s) for s in page.shape)
                if len(shape) != 2:
                    raise LabelsIOError(f"{_name(path)}: a label TIFF must be one grey plane, got shape {shape}")
                if shape[0] * shape[1] > MAX_PIXELS:
                    raise LabelsIOError(f"{_name(path)}: the image is too large ({shape[0]} x {shape[1]})")
                arr = page.asarray()
            if arr.dtype.kind not in "iu":
                raise LabelsIOError(f"{_name(path)}: label TIFFs hold integers, this one {arr.dtype}")
    except LabelsIOError:
        raise
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a bad file for the user
        raise LabelsIOError(f"{_name(path)}: cannot read labels ({failure_reason(exc)})") from None
    if arr.ndim != 2:
        raise LabelsIOError(f"{_name(path)}: expected one grey plane of labels, got shape {arr.shape}")
    if 0 in arr.shape:
        raise LabelsIOError(f"{_name(path)}: the label image is empty ({arr.shape[0]} x {arr.shape[1]})")
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int32)
    if arr.dtype.kind == "i" and arr.size and int(arr.min()) < 0:
        raise LabelsIOError(f"{_name(path)}: negative labels")
    top = int(arr.max()) if arr.size else 0
    return arr.astype(np.int32 if top < 2**31 else np.int64)


# --------------------------------------------------------------------------- region table
def _columns(table: dict) -> dict:
    cols = {}
    for name, v in table.items():
        a = np.asarray(v)
        if a.ndim == 1:
            cols[name] = a
        elif a.ndim == 2:
            for i in range(a.shape[1]):
                cols[f"{name}-{i}"] = a[:, i]
        elif a.ndim == 3:
            for i in range(a.shape[1]):
                for j in range(a.shape[2]):
                    cols[f"{name}-{i}-{j}"] = a[:, i, j]
        else:
            raise LabelsIOError(f"region table column {name!r} has {a.ndim} dimensions")
    lengths = {len(c) for c in cols.values()}
    if len(lengths) > 1:
        raise LabelsIOError(f"region table columns differ in length: {sorted(lengths)}")
    return cols


def write_region_table(path: str | os.PathLike, table: dict) -> pathlib.Path:
    """Write region features as CSV: ``table`` maps names to per-region arrays (1-D, or
    2-D/3-D arrays split into ``name-i`` / ``name-i-j`` columns, as ``regionprops_table``)."""
    path = pathlib.Path(path)
    if path.suffix.lower() != ".csv":
        raise LabelsIOError(f"{_name(path)}: the region table is written as .csv")
    cols = _columns(table)
    names = list(cols)
    n = len(next(iter(cols.values()))) if cols else 0

    def fmt(v) -> str:
        if isinstance(v, np.integer | int):
            return str(int(v))
        f = float(v)
        return str(int(f)) if f.is_integer() and abs(f) < 2**53 else f"{f:.10g}"

    try:
        with atomic_write(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(names)
            for i in range(n):
                w.writerow([fmt(cols[c][i]) for c in names])
    except OSError as exc:
        raise LabelsIOError(write_failure(path, exc)) from None
    return path


def read_region_table(path: str | os.PathLike) -> dict:
    """Read a CSV region table back into float64 columns (``label`` and ``area`` as int64)."""
    path = pathlib.Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError as exc:
        raise LabelsIOError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not rows:
        raise LabelsIOError(f"{_name(path)}: the file is empty")
    names, body = rows[0], rows[1:]
    try:
        data = np.array(body, dtype=np.float64).reshape(len(body), len(names))
    except ValueError:
        raise LabelsIOError(f"{_name(path)}: not a numeric region table") from None
    out = {}
    for i, name in enumerate(names):
        out[name] = data[:, i].astype(np.int64) if name in ("label", "area") else data[:, i]
    return out


# --------------------------------------------------------------------------- BSDS
def read_bsds_groundtruth(path: str | os.PathLike) -> list[tuple[np.ndarray, np.ndarray]]:
    """The human segmentations of one BSDS500 image: ``[(segmentation, boundaries), ...]``,
    segmentation int32 (regions from 1), boundaries bool."""
    path = pathlib.Path(path)
    check_input_file(path, error=LabelsIOError, what="a ground-truth file")
    try:
        from scipy.io import loadmat

        m = loadmat(path)
    except Exception as exc:  # noqa: BLE001
        raise LabelsIOError(f"{_name(path)}: not a readable MATLAB file ({failure_reason(exc)})") from None
    gt = m.get("groundTruth")
    if gt is None or gt.dtype != object or gt.size == 0:
        raise LabelsIOError(f"{_name(path)}: no 'groundTruth' cell array (not a BSDS500 ground-truth file)")
    out = []
    for cell in gt.ravel():
        try:
            seg = np.asarray(cell["Segmentation"][0, 0])
            bnd = np.asarray(cell["Boundaries"][0, 0])
        except (KeyError, IndexError, ValueError, TypeError):
            raise LabelsIOError(f"{_name(path)}: a ground truth lacks Segmentation or Boundaries") from None
        if seg.ndim != 2 or seg.shape != bnd.shape or 0 in seg.shape:
            raise LabelsIOError(f"{_name(path)}: malformed ground truth (shapes {seg.shape}, {bnd.shape})")
        out.append((seg.astype(np.int32), bnd.astype(bool)))
    return out


# --------------------------------------------------------------------------- registry
def _sample_labels(folder: pathlib.Path) -> list[pathlib.Path]:
    rng = np.random.default_rng(0)
    small = rng.integers(0, 300, (20, 24))
    big = rng.integers(0, 100_000, (12, 10))
    return [write_labels(folder / "labels.png", small), write_labels(folder / "labels.tif", big),
            write_labels(folder / "labels.npy", small)]


def _sample_groundtruth(folder: pathlib.Path) -> list[pathlib.Path]:
    from scipy.io import savemat

    gt = np.empty((1, 2), dtype=object)
    for i in range(2):
        seg = (np.indices((12, 16)).sum(0) // (4 + i) + 1).astype(np.uint16)
        gt[0, i] = {"Segmentation": seg, "Boundaries": np.zeros_like(seg, dtype=np.uint8)}
    path = folder / "groundtruth.mat"
    savemat(path, {"groundTruth": gt})
    return [path]


def _register() -> None:
    from .registry import register_reader

    register_reader("labels", read_labels, LABEL_EXTENSIONS, make_samples=_sample_labels)
    register_reader("bsds-groundtruth", read_bsds_groundtruth, (".mat",), make_samples=_sample_groundtruth)


_register()
