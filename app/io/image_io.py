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

import numpy as np

from gpu_kernels.errors import InputError

from .atomic import atomic_write
from .inputs import check_input_file, failure_reason
from .registry import natural_key

__all__ = [
    "IMAGE_EXTENSIONS",
    "ImageReadError",
    "read_image",
    "write_image",
    "list_images",
    "to_gray",
]

#: Extensions read and written here (lower case, with the dot).
from .formats import IMAGE_EXTENSIONS  # noqa: E402 - declared there (no NumPy)

#: Refuse images with more pixels than this before decoding them (1 gigapixel).
MAX_PIXELS = 1 << 30
#: Refuse images of fewer pixels: a 1 x 1 image has nothing to segment or match (one row or
#: column is still an image: imseg segments it).
MIN_PIXELS = 2


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


def _tiff_layout(arr: np.ndarray, axes: str, path: pathlib.Path) -> np.ndarray:
    """An (H, W) or (H, W, C) array from a TIFF series of any axis order.

    tifffile writes an (H, W, C) array with C > 4 as H pages of W x C ("QYX"), and planar
    channels as C pages ("SYX" or "QYX"): the sample axis is the one tifffile names S or C,
    else the small one (at most 16) of a 3-D series, at either end."""
    keep = [i for i, n in enumerate(arr.shape) if n != 1]
    if len(keep) < 2:
        keep = list(range(arr.ndim))[-2:]
    axes = "".join(axes[i] for i in keep) if len(axes) == arr.ndim else ""
    arr = arr.reshape([arr.shape[i] for i in keep])
    if arr.ndim == 2:
        return arr
    if arr.ndim == 3:
        named = [i for i, a in enumerate(axes) if a in "SC"]
        if len(named) == 1:
            return np.moveaxis(arr, named[0], -1)
        h0, h1, h2 = arr.shape
        if h2 <= 16 and h2 < min(h0, h1):
            return arr                      # (H, W, C), stored one row per page
        if h0 <= 16 and h0 < min(h1, h2):
            return np.moveaxis(arr, 0, -1)  # planar channels
        raise ImageReadError(f"{_name(path)}: the TIFF holds a stack of {h0:,} images of {h2:,} x {h1:,} "
                             "pixels; gpulab reads one image: save the one you want on its own")
    raise ImageReadError(f"{_name(path)}: the TIFF holds a {arr.ndim}-D array of shape {arr.shape}; "
                         "gpulab reads one 2-D image (grey or colour)")


def _read_tiff(path: pathlib.Path) -> np.ndarray:
    import tifffile

    with tifffile.TiffFile(path) as tf:
        if not tf.pages or not tf.series:
            raise ImageReadError(f"{_name(path)}: the TIFF file holds no image")
        series = tf.series[0]
        shape = tuple(int(s) for s in series.shape)
        if int(np.prod(shape, dtype=np.int64)) > 4 * MAX_PIXELS:
            raise ImageReadError(f"{_name(path)}: the image is too large ({' x '.join(map(str, shape))})")
        arr = series.asarray()
        axes = str(series.axes)
    return _tiff_layout(np.asarray(arr), axes, path)


#: the first bytes of each format read here
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"),
    (b"II+\x00", "TIFF"), (b"MM\x00+", "TIFF"), (b"BM", "BMP"),
)


def _sniff(path: pathlib.Path) -> str | None:
    """The format the file's first bytes announce (PNG, JPEG, TIFF, BMP), or None."""
    with open(path, "rb") as fh:
        head = fh.read(16)
    for magic, fmt in _MAGIC:
        if head.startswith(magic):
            return fmt
    return None


def _looks_like_text(path: pathlib.Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(512)
    if not head or b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


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
    check_input_file(path, error=ImageReadError, what="an image")
    size = path.stat().st_size
    ext = path.suffix.lower()
    if ext not in IMAGE_EXTENSIONS:
        raise ImageReadError(f"{_name(path)}: unsupported image type {ext or '(no extension)'}; "
                             f"gpulab reads {', '.join(IMAGE_EXTENSIONS)}")
    # refuse what is no image at all from its first bytes, before any decoder library loads
    # (a text file named .png took 4 s in the window: Pillow tried each of its plugins)
    kind = _sniff(path)
    if kind is None:
        what = "a text file" if _looks_like_text(path) else "no image format gpulab reads (PNG, JPEG, TIFF, BMP)"
        raise ImageReadError(f"{_name(path)}: not an image: the file is {what}, whatever its "
                             f"{ext} name says")
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
        if kind == "TIFF":
            arr = _read_tiff(path)
        elif kind == "PNG":
            arr = _read_palette_png(path)
        if arr is None:
            arr = _read_cv2(path)
    except ImageReadError:
        raise
    except MemoryError:
        raise ImageReadError(f"{_name(path)}: the image is too large to read into memory") from None
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a corrupt file to the user
        why = failure_reason(exc)   # the generic "the file is corrupt" would only repeat the line
        why = "" if why == "the file is corrupt" else f" ({why})"
        raise ImageReadError(f"{_name(path)}: not a readable image: the file is corrupt or not a "
                             f"{ext.lstrip('.').upper()} file{why}") from None
    arr = np.asarray(arr)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[..., 0]
    if arr.ndim == 3 and arr.shape[2] == 2:  # grey + alpha
        arr = arr[..., 0]
    if arr.ndim == 3 and arr.shape[2] not in (3, 4):
        raise ImageReadError(f"{_name(path)}: the image has {arr.shape[2]} channels per pixel; gpulab reads "
                             "grey, grey + alpha, RGB and RGBA images")
    if arr.ndim not in (2, 3):
        raise ImageReadError(f"{_name(path)}: unsupported image layout {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ImageReadError(f"{_name(path)}: the image has no pixels ({arr.shape[1]} x {arr.shape[0]})")
    if arr.shape[0] * arr.shape[1] < MIN_PIXELS:
        raise ImageReadError(f"{_name(path)}: the image is a single pixel, too small to process "
                             f"(at least {MIN_PIXELS} pixels)")
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


def list_images(folder: str | os.PathLike) -> list[pathlib.Path]:
    """The image files in ``folder`` (not recursive), in natural order (frame2 before frame10)."""
    d = pathlib.Path(folder)
    if not d.is_dir():
        raise ImageReadError(f"no such folder: {d}")
    files = [p for p in d.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
    if not files:
        raise ImageReadError(f"{d}: the folder holds no images ({', '.join(IMAGE_EXTENSIONS)})")
    return sorted(files, key=natural_key)


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
