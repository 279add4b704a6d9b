"""Image files for every image tool: PNG, JPEG, TIFF and BMP, 8 or 16 bit (and float TIFF),
grey, RGB or RGBA, read into NumPy arrays in RGB(A) channel order.

This module never imports Qt. Readers raise :class:`ImageReadError` (an
:class:`~gpu_kernels.errors.InputError`) with one clear line for a missing, empty, corrupt
or zero-sized file; writers go through :func:`app.io.atomic.atomic_write`, so a failure
leaves nothing behind.

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> from app.io.image_io import read_image, write_image
>>> img = (np.arange(12, dtype=np.uint16).reshape(2, 2, 3) * 5000)
>>> p = write_image(pathlib.Path(tempfile.mkdtemp()) / "a.png", img)
>>> back = read_image(p)
>>> back.dtype, back.shape, bool((back == img).all())
(dtype('uint16'), (2, 2, 3), True)
"""

from __future__ import annotations

import os
import pathlib
import re

import numpy as np

from gpu_kernels.errors import InputError

from .atomic import atomic_write

__all__ = [
    "IMAGE_EXTENSIONS",
    "ImageReadError",
    "read_image",
    "write_image",
    "list_images",
    "to_gray",
]

#: Extensions read and written here (lower case, with the dot).
IMAGE_EXTENSIONS: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp")

#: Refuse images with more pixels than this before decoding them (1 gigapixel).
MAX_PIXELS = 1 << 30


class ImageReadError(InputError):
    """An image file cannot be read or written. The message is one clear line."""


def _name(path: pathlib.Path) -> str:
    return path.name or str(path)


def _header_size(path: pathlib.Path) -> tuple[int, int] | None:
    """(width, height) from the file header without decoding pixels (Pillow), or None."""
    try:
        from PIL import Image

        Image.MAX_IMAGE_PIXELS = None  # we check ourselves, with a clear message
        with Image.open(path) as im:
            return int(im.size[0]), int(im.size[1])
    except Exception:  # noqa: BLE001 - Pillow cannot parse it; the decoder below decides
        return None


def _read_tiff(path: pathlib.Path) -> np.ndarray:
    import tifffile

    with tifffile.TiffFile(path) as tf:
        if not tf.pages:
            raise ImageReadError(f"{_name(path)}: the TIFF file holds no image")
        page = tf.pages[0]
        shape = tuple(int(s) for s in page.shape)
        if int(np.prod(shape, dtype=np.int64)) > 4 * MAX_PIXELS:
            raise ImageReadError(f"{_name(path)}: the image is too large ({' x '.join(map(str, shape))})")
        arr = page.asarray()
    if arr.ndim == 3 and arr.shape[0] in (3, 4) and arr.shape[-1] not in (3, 4):
        arr = np.moveaxis(arr, 0, -1)  # planar RGB
    return arr


def _read_cv2(path: pathlib.Path) -> np.ndarray:
    import cv2

    data = np.fromfile(path, dtype=np.uint8)
    arr = cv2.imdecode(data, cv2.IMREAD_UNCHANGED | cv2.IMREAD_ANYDEPTH | cv2.IMREAD_ANYCOLOR)
    if arr is None:
        raise ImageReadError(f"{_name(path)}: not a readable image (corrupt or unsupported format)")
    if arr.ndim == 3:
        if arr.shape[2] == 3:
            arr = arr[..., ::-1]
        elif arr.shape[2] == 4:
            arr = arr[..., [2, 1, 0, 3]]
    return np.ascontiguousarray(arr)


def _read_palette_png(path: pathlib.Path) -> np.ndarray | None:
    """Palette and 1/2/4-bit images through Pillow (OpenCV would drop the palette's alpha)."""
    from PIL import Image

    with Image.open(path) as im:
        if im.mode in ("P", "PA"):
            return np.asarray(im.convert("RGBA" if "transparency" in im.info or im.mode == "PA" else "RGB"))
        if im.mode == "1":
            return np.asarray(im.convert("L"))
    return None


def to_gray(img: np.ndarray) -> np.ndarray:
    """ITU-R 601 luma of an RGB(A) image, in the input's dtype (grey images pass through)."""
    a = np.asarray(img)
    if a.ndim == 2:
        return a
    rgb = a[..., :3].astype(np.float32)
    y = rgb @ np.array([0.299, 0.587, 0.114], np.float32)
    if np.issubdtype(a.dtype, np.integer):
        info = np.iinfo(a.dtype)
        return np.clip(np.rint(y), info.min, info.max).astype(a.dtype)
    return y.astype(a.dtype)


def read_image(path: str | os.PathLike, *, mode: str = "keep") -> np.ndarray:
    """Read an image file into an array.

    Parameters
    ----------
    path : path-like
        PNG, JPEG, TIFF or BMP.
    mode : {"keep", "gray", "rgb"}
        ``keep`` returns what the file holds: ``(H, W)`` for grey, ``(H, W, 3)`` RGB or
        ``(H, W, 4)`` RGBA. ``gray`` converts colour to luma; ``rgb`` drops alpha and
        repeats a grey channel three times.

    Returns
    -------
    numpy.ndarray
        The file's dtype (``uint8``, ``uint16``, or ``float32`` for float TIFF), RGB order.

    Raises
    ------
    ImageReadError
        Missing, empty, corrupt, zero-sized or absurdly large files, and unknown modes.
    """
    if mode not in ("keep", "gray", "rgb"):
        raise ImageReadError(f"unknown image mode {mode!r}: use keep, gray or rgb")
    path = pathlib.Path(path)
    if not path.exists():
        raise ImageReadError(f"no such file: {path}")
    if path.is_dir():
        raise ImageReadError(f"{path} is a folder, not an image")
    size = path.stat().st_size
    if size == 0:
        raise ImageReadError(f"{_name(path)}: the file is empty")
    ext = path.suffix.lower()
    if ext not in IMAGE_EXTENSIONS:
        raise ImageReadError(f"{_name(path)}: unsupported image type {ext or '(no extension)'}; "
                             f"gpulab reads {', '.join(IMAGE_EXTENSIONS)}")
    wh = _header_size(path)
    if wh is not None:
        w, h = wh
        if w <= 0 or h <= 0:
            raise ImageReadError(f"{_name(path)}: the image has no pixels ({w} x {h})")
        if w * h > MAX_PIXELS:
            raise ImageReadError(f"{_name(path)}: the image is too large ({w:,} x {h:,} pixels)")
        # no PNG/JPEG/BMP/TIFF of w x h pixels is much larger than its raw pixels (4 channels of
        # 32 bits at most); a larger file is corrupt or carries a huge tail: refuse it unread
        if size > 2 * 16 * w * h + (64 << 20):
            raise ImageReadError(f"{_name(path)}: the file ({size:,} bytes) is far larger than a "
                                 f"{w:,} x {h:,} image can be; it is corrupt")
    try:
        arr = None
        if ext in (".tif", ".tiff"):
            arr = _read_tiff(path)
        elif ext == ".png":
            arr = _read_palette_png(path)
        if arr is None:
            arr = _read_cv2(path)
    except ImageReadError:
        raise
    except MemoryError:
        raise ImageReadError(f"{_name(path)}: the image is too large to read into memory") from None
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a corrupt file to the user
        raise ImageReadError(f"{_name(path)}: not a readable image: the file is corrupt or not a "
                             f"{ext.lstrip('.').upper()} file ({type(exc).__name__})") from None
    arr = np.asarray(arr)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[..., 0]
    if arr.ndim == 3 and arr.shape[2] == 2:  # grey + alpha
        arr = arr[..., 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise ImageReadError(f"{_name(path)}: unsupported image layout {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ImageReadError(f"{_name(path)}: the image has no pixels ({arr.shape[1]} x {arr.shape[0]})")
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8) * 255
    elif arr.dtype.kind == "f":
        arr = arr.astype(np.float32)
        if not np.isfinite(arr).all():
            raise ImageReadError(f"{_name(path)}: the image has NaN or infinite pixel values")
    elif arr.dtype not in (np.uint8, np.uint16):
        if arr.dtype.kind in "iu" and arr.size and arr.min() >= 0 and arr.max() <= 65535:
            arr = arr.astype(np.uint16)
        else:
            raise ImageReadError(f"{_name(path)}: unsupported pixel type {arr.dtype}")
    if mode == "gray":
        arr = to_gray(arr)
    elif mode == "rgb":
        arr = np.repeat(arr[..., None], 3, axis=2) if arr.ndim == 2 else arr[..., :3]
    return np.ascontiguousarray(arr)


def write_image(path: str | os.PathLike, array) -> pathlib.Path:
    """Write ``array`` as an image, atomically; the format comes from the extension.

    ``.png``: uint8 or uint16, grey/RGB/RGBA. ``.tif``/``.tiff``: any integer or float dtype.
    ``.jpg``/``.bmp``: uint8. Other dtypes raise :class:`ImageReadError` before anything is
    written.
    """
    path = pathlib.Path(path)
    a = np.asarray(array)
    ext = path.suffix.lower()
    if ext not in IMAGE_EXTENSIONS:
        raise ImageReadError(f"{_name(path)}: cannot write {ext or 'files without an extension'}; "
                             f"use one of {', '.join(IMAGE_EXTENSIONS)}")
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (1, 3, 4)) or a.size == 0:
        raise ImageReadError(f"{_name(path)}: cannot write an array of shape {a.shape} as an image")
    if a.dtype == np.bool_:
        a = a.astype(np.uint8) * 255
    if ext in (".tif", ".tiff"):
        import tifffile

        with atomic_write(path, "wb") as fh:
            tifffile.imwrite(fh, a, photometric="rgb" if a.ndim == 3 and a.shape[2] >= 3 else "minisblack")
        return path
    allowed = (np.uint8, np.uint16) if ext == ".png" else (np.uint8,)
    if a.dtype not in allowed:
        raise ImageReadError(f"{_name(path)}: {ext} holds {' or '.join(np.dtype(t).name for t in allowed)} "
                             f"pixels, not {a.dtype}; use .tif for other types")
    import cv2

    if a.ndim == 3 and a.shape[2] == 3:
        a = a[..., ::-1]
    elif a.ndim == 3 and a.shape[2] == 4:
        a = a[..., [2, 1, 0, 3]]
    ok, buf = cv2.imencode(".jpg" if ext == ".jpeg" else ext, np.ascontiguousarray(a))
    if not ok:
        raise ImageReadError(f"{_name(path)}: could not encode the image")
    with atomic_write(path, "wb") as fh:
        fh.write(buf.tobytes())
    return path


def _natural_key(p: pathlib.Path):
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", p.name)]


def list_images(folder: str | os.PathLike) -> list[pathlib.Path]:
    """The image files in ``folder`` (not recursive), in natural order (frame2 before frame10)."""
    d = pathlib.Path(folder)
    if not d.is_dir():
        raise ImageReadError(f"no such folder: {d}")
    files = [p for p in d.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
    if not files:
        raise ImageReadError(f"{d}: the folder holds no images ({', '.join(IMAGE_EXTENSIONS)})")
    return sorted(files, key=_natural_key)


# ----------------------------------------------------------------------------- fuzz registry
def _sample_images(folder: pathlib.Path) -> list[pathlib.Path]:
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)
    grey16 = rng.integers(0, 65535, (20, 18), dtype=np.uint16)
    rgba = rng.integers(0, 255, (16, 16, 4), dtype=np.uint8)
    return [write_image(folder / "rgb.png", rgb), write_image(folder / "grey16.png", grey16),
            write_image(folder / "rgba.png", rgba), write_image(folder / "rgb.jpg", rgb),
            write_image(folder / "rgb.bmp", rgb), write_image(folder / "grey16.tif", grey16),
            write_image(folder / "float.tif", rng.random((10, 12)).astype(np.float32))]


def _register() -> None:
    from .registry import register_reader

    register_reader("image", read_image, IMAGE_EXTENSIONS, make_samples=_sample_images)


_register()
