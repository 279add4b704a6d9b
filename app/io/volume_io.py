"""3-D and 4-D volumes and displacement fields: NIfTI (nibabel), MetaImage, NRRD and DICOM
series (SimpleITK), NumPy ``.npy``/``.npz``.

Array order. Every reader returns the voxels in the file's own index order, not reoriented
to any anatomical frame, as ``[z, y, x]`` (3-D) or ``[t, z, y, x]`` (4-D) with ``x`` the
fastest-varying file index:

* NIfTI stores ``(i, j, k[, t])``; the array is ``data[k, j, i]`` (``[t, k, j, i]``), the
  voxel size ``pixdim`` reversed to (k, j, i); the affine is kept for writing fields back.
* MetaImage / NRRD / DICOM (SimpleITK): ``GetArrayFromImage`` order, already ``[k, j, i]``;
  the spacing reversed to (k, j, i).
* ``.npy``: as stored, taken as ``[z, y, x]`` / ``[t, z, y, x]``, spacing 1 mm. ``.npz``:
  the array ``volume`` (or ``frames``, or the only array), the spacing from ``spacing`` if
  present.

Displacement fields ``u`` (3, Z, Y, X), component i along array axis i in voxels, are
written as ``.npy`` (exactly that array; ``.npz`` adds ``spacing``) or as a NIfTI vector
image (``intent_code`` 1007, shape (i, j, k, 1, 3)): there the components follow the file's
axes (i, j, k) = (x, y, z), in mm (voxel size times voxels) unless ``units="voxels"``; the
header's description records the units and :func:`read_displacement` undoes both.

Every reader checks the sizes in a header against the file before it allocates and raises
:class:`VolumeIOError` (an :class:`~gpu_kernels.errors.InputError`) with one line for
anything malformed. Every writer is atomic (:mod:`app.io.atomic`).

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> v = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
>>> write_volume(d / "v.nii.gz", v, spacing=(2.0, 1.0, 0.5))
>>> vol = read_volume(d / "v.nii.gz")
>>> vol.data.shape, vol.spacing, bool((vol.data == v).all())
((2, 3, 4), (2.0, 1.0, 0.5), True)
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import struct
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.io.atomic import (
    OutputPathError,
    _part_prefix,
    atomic_write,
    check_output_file,
    errors_named_after,
    remove_stale_parts,
)
from app.io.inputs import check_input_file, failure_reason
from gpu_kernels.errors import InputError

__all__ = [
    "VolumeIOError",
    "Volume",
    "VOLUME_EXTENSIONS",
    "WRITE_EXTENSIONS",
    "FIELD_EXTENSIONS",
    "MAX_VOXELS",
    "volume_format",
    "read_volume",
    "write_volume",
    "read_displacement",
    "write_displacement",
    "check_output_path",
    "read_sequence",
    "npz_member",
]

#: What :func:`read_volume` reads (a DICOM series is given by its folder or by one of its files).
from .formats import VOLUME_EXTENSIONS  # noqa: E402 - declared there (no NumPy)

#: What :func:`write_volume` writes.
WRITE_EXTENSIONS = (".nii", ".nii.gz", ".mha", ".nrrd", ".npy", ".npz")
#: What :func:`write_displacement` writes and :func:`read_displacement` reads.
FIELD_EXTENSIONS = (".npy", ".npz", ".nii", ".nii.gz")
#: Largest number of voxels (all frames together) a reader accepts.
MAX_VOXELS = 1 << 32
_FIELD_DESCRIP = b"gpulab displacement ijk "


class VolumeIOError(InputError):
    """A volume or field file cannot be read or written. The message is one clear line."""


@dataclass
class Volume:
    """A volume read from a file.

    Attributes
    ----------
    data : ndarray
        ``[z, y, x]`` or ``[t, z, y, x]``, the file's dtype.
    spacing : tuple of 3 floats
        Voxel size (z, y, x) in mm.
    time_step : float or None
        Seconds (or the file's unit) between frames of a 4-D file.
    affine : ndarray (4, 4) or None
        NIfTI voxel-to-world matrix (i, j, k order), for writing results back.
    format : str
    path : Path
    """

    data: np.ndarray
    spacing: tuple
    time_step: float | None = None
    affine: Any = None
    format: str = ""
    path: Path | None = None
    meta: dict = field(default_factory=dict)

    @property
    def is_sequence(self) -> bool:
        return self.data.ndim == 4

    @property
    def frames(self) -> int:
        return self.data.shape[0] if self.data.ndim == 4 else 1


# --------------------------------------------------------------------------- helpers
def volume_format(path) -> str:
    """``nifti``, ``metaimage``, ``nrrd``, ``dicom``, ``npy`` or ``npz`` from the name."""
    p = Path(path)
    name = p.name.lower()
    if p.is_dir():
        return "dicom"
    if name.endswith(".nii.gz") or name.endswith(".nii") or name.endswith(".gz"):
        return "nifti"
    ext = p.suffix.lower()
    return {".mha": "metaimage", ".mhd": "metaimage", ".nrrd": "nrrd", ".nhdr": "nrrd", ".dcm": "dicom",
            ".ima": "dicom", ".npy": "npy", ".npz": "npz"}.get(ext, "")


def _err(path, msg) -> VolumeIOError:
    return VolumeIOError(f"{Path(path).name}: {msg}")


def _check_count(path, shape, itemsize, available: int | None, what="voxels"):
    n = 1
    for s in shape:
        if int(s) <= 0:
            raise _err(path, f"the header gives a size of {tuple(int(x) for x in shape)}: every size must be positive")
        n *= int(s)
    if n > MAX_VOXELS:
        raise _err(path, f"the header gives {n:,} {what}, more than gpulab reads ({MAX_VOXELS:,})")
    if available is not None and n * itemsize > available:
        raise _err(path, f"the file is truncated: the header needs {n * itemsize:,} bytes of data, "
                         f"the file holds {max(available, 0):,}")
    return n


def _spacing3(values, path) -> tuple:
    try:
        sp = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise _err(path, "the voxel size is not a number") from None
    if len(sp) != 3 or not all(np.isfinite(sp)) or any(s <= 0 for s in sp):
        sp = tuple(abs(s) if (np.isfinite(s) and s != 0) else 1.0 for s in (sp + (1.0, 1.0, 1.0))[:3])
    return sp


def _finish(path, data, spacing, fmt, **kw) -> Volume:
    data = np.asarray(data)
    if data.ndim == 4 and data.shape[0] == 1:
        data = data[0]
    if data.ndim not in (3, 4):
        raise _err(path, f"holds a {data.ndim}-D array of shape {data.shape}; a 3-D volume or a 4-D sequence is needed")
    if data.dtype.kind not in "uif" and data.dtype != np.bool_:
        raise _err(path, f"holds {data.dtype} values; real numbers are needed")
    if data.dtype == np.bool_:
        data = data.astype(np.uint8)
    if data.dtype.kind == "f" and not np.isfinite(data).all():
        raise _err(path, "contains NaN or infinite voxels")
    return Volume(np.ascontiguousarray(data), _spacing3(spacing, path), format=fmt, path=Path(path), **kw)


# --------------------------------------------------------------------------- NIfTI
def _gzip_isize(path) -> int | None:
    """Uncompressed size mod 2^32 from a gzip trailer (None if not readable)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(-4, os.SEEK_END)
            return struct.unpack("<I", fh.read(4))[0]
    except OSError:
        return None


def _nifti_header(raw: bytes, path):
    import nibabel as nib

    for cls in (nib.Nifti1Header, nib.Nifti2Header):
        try:
            return cls.from_fileobj(io.BytesIO(raw), check=False), cls
        except Exception:
            continue
    raise _err(path, "not a NIfTI file (no valid header)")


def _read_nifti(path) -> Volume:
    import nibabel as nib

    gz = str(path).lower().endswith(".gz")
    try:
        if gz:
            with gzip.open(path, "rb") as fh:
                head = fh.read(544)
        else:
            with open(path, "rb") as fh:
                head = fh.read(544)
    except Exception as exc:
        raise _err(path, f"not a readable NIfTI file ({failure_reason(exc)})") from None
    hdr, cls = _nifti_header(head, path)
    try:
        shape = tuple(int(s) for s in hdr.get_data_shape())
        itemsize = np.dtype(hdr.get_data_dtype()).itemsize
        offset = int(hdr.get_data_offset())
    except Exception:
        raise _err(path, "the NIfTI header is corrupt (shape, data type or offset)") from None
    if not 3 <= len(shape) <= 4:
        if len(shape) == 5 and shape[3] == 1:
            raise _err(path, "holds a vector image (a displacement field?): read it with read_displacement")
        raise _err(path, f"holds a {len(shape)}-D image of shape {shape}; a 3-D volume or a 4-D sequence is needed")
    n = _check_count(path, shape, itemsize, None if gz else os.path.getsize(path) - offset)
    need = offset + n * itemsize
    try:
        if gz:
            isize = _gzip_isize(path)
            if isize is not None and need < (1 << 32) and isize < need:
                raise _err(path, f"the file is truncated: the header needs {need:,} bytes, the compressed data holds {isize:,}")
            with gzip.open(path, "rb") as fh:
                raw = fh.read(need)
            if len(raw) < need:
                raise _err(path, f"the file is truncated: the header needs {need:,} bytes, the data holds {len(raw):,}")
            img = (nib.Nifti1Image if cls is nib.Nifti1Header else nib.Nifti2Image).from_bytes(raw)
        else:
            img = nib.load(str(path))
        data = np.asanyarray(img.dataobj)
    except VolumeIOError:
        raise
    except Exception as exc:
        raise _err(path, f"the voxel data cannot be read ({failure_reason(exc)})") from None
    zooms = tuple(float(z) for z in img.header.get_zooms())
    sp = tuple(reversed((zooms + (1.0, 1.0, 1.0))[:3]))
    dt = zooms[3] if len(zooms) > 3 and len(shape) == 4 else None
    data = np.transpose(data, (3, 2, 1, 0)) if data.ndim == 4 else np.transpose(data, (2, 1, 0))
    return _finish(path, data, sp, "nifti", time_step=dt, affine=np.asarray(img.affine, dtype=np.float64))


# --------------------------------------------------------------------------- SimpleITK formats
_SITK_WHAT = {"metaimage": "read MetaImage files", "nrrd": "read NRRD files", "dicom": "read DICOM series",
              "write": "write MetaImage or NRRD files"}


def _sitk(path, fmt):
    """SimpleITK, or a one-line error naming the extra that brings it (``gpulab[medical]``)."""
    try:
        import SimpleITK as sitk
    except ImportError:
        raise _err(path, f"install gpulab[medical] to {_SITK_WHAT.get(fmt, 'use SimpleITK')} "
                         "(SimpleITK is not installed)") from None
    return sitk


_MET_TYPES = {"MET_UCHAR": 1, "MET_CHAR": 1, "MET_USHORT": 2, "MET_SHORT": 2, "MET_UINT": 4, "MET_INT": 4,
              "MET_ULONG": 8, "MET_LONG": 8, "MET_ULONG_LONG": 8, "MET_LONG_LONG": 8, "MET_FLOAT": 4,
              "MET_DOUBLE": 8}
_NRRD_TYPES = {"uchar": 1, "unsigned char": 1, "uint8": 1, "uint8_t": 1, "signed char": 1, "char": 1, "int8": 1,
               "int8_t": 1, "short": 2, "short int": 2, "signed short": 2, "int16": 2, "int16_t": 2, "ushort": 2,
               "unsigned short": 2, "uint16": 2, "uint16_t": 2, "int": 4, "signed int": 4, "int32": 4,
               "int32_t": 4, "uint": 4, "unsigned int": 4, "uint32": 4, "uint32_t": 4, "longlong": 8,
               "long long": 8, "int64": 8, "int64_t": 8, "ulonglong": 8, "uint64": 8, "uint64_t": 8,
               "float": 4, "double": 8}


def _header_text(path, limit=65536) -> str:
    with open(path, "rb") as fh:
        head = fh.read(limit)
    return head.decode("latin-1")


def _header_data_file(path, name: str) -> Path:
    """The data file a MetaImage/NRRD header names, kept inside the header's folder."""
    from .paths import OutsidePathError, contained_path

    try:
        return contained_path(Path(path).parent, name.strip(), what="data file")
    except OutsidePathError as exc:
        raise _err(path, exc.user_message) from None


def _header_shape(path, fmt: str, ndim: tuple[str, str], sizes: tuple[str, str]) -> list[int]:
    """The sizes a MetaImage or NRRD text header declares: ``ndim``/``sizes`` are (the key as
    the message names it, its text); 3-D volumes and 4-D sequences only (one line otherwise)."""
    (nkey, ntext), (skey, stext) = ndim, sizes
    try:
        n = int(ntext)
        dims = [int(x) for x in stext.split()]
    except ValueError:
        raise _err(path, f"the {fmt} header's {nkey.strip(' =')} or {skey} is not a whole number") from None
    if not 3 <= n <= 4 or len(dims) != n:
        raise _err(path, f"{nkey}{n} with {skey} {dims}: a 3-D volume or 4-D sequence is needed")
    return dims


def _header_type(path, what: str, value: str, types: dict) -> str:
    if value not in types:
        raise _err(path, f"unsupported {what} {value or '(none)'}")
    return value


def _precheck_metaimage(path):
    """Validate a MetaImage header (sizes, type, data file) before SimpleITK reads it."""
    text = _header_text(path)
    fields: dict[str, str] = {}
    header_len = 0
    for line in text.splitlines(keepends=True):
        header_len += len(line.encode("latin-1"))
        if "=" not in line:
            raise _err(path, "not a MetaImage file: a header line has no '='")
        k, v = line.split("=", 1)
        fields[k.strip().lower()] = v.strip()
        if k.strip().lower() == "elementdatafile":
            break
    else:
        raise _err(path, "not a MetaImage file: no ElementDataFile line")
    dims = _header_shape(path, "MetaImage", ("NDims = ", fields.get("ndims", "0")), ("DimSize", fields.get("dimsize", "")))
    etype = _header_type(path, "ElementType", fields.get("elementtype", "").upper(), _MET_TYPES)
    nc = fields.get("elementnumberofchannels", "1")
    ncomp = int(nc) if nc.isdigit() and int(nc) > 0 else 1
    compressed = fields.get("compresseddata", "false").lower() == "true"
    datafile = fields.get("elementdatafile", "")
    if datafile.upper() == "LOCAL":
        available = os.path.getsize(path) - header_len
    else:
        if "%" in datafile or datafile.upper() == "LIST":
            raise _err(path, f"its data file {datafile!r} is missing or not a single file")
        dpath = _header_data_file(path, datafile)
        if not dpath.is_file():
            raise _err(path, f"its data file {datafile!r} is missing or not a single file")
        available = dpath.stat().st_size
    n = _check_count(path, dims + [ncomp], _MET_TYPES[etype], None if compressed else available)
    if compressed and n * _MET_TYPES[etype] > 2000 * max(available, 1):
        raise _err(path, "the header's size does not fit the compressed data (corrupt file?)")


def _precheck_nrrd(path):
    text = _header_text(path)
    if not text.startswith("NRRD000"):
        raise _err(path, "not a NRRD file (no NRRD magic)")
    fields: dict[str, str] = {}
    header_len = 0
    ended = False
    for line in text.splitlines(keepends=True):
        header_len += len(line.encode("latin-1"))
        s = line.strip()
        if s == "":
            ended = True
            break
        if s.startswith("#") or s.startswith("NRRD"):
            continue
        if ":" in s:
            k, v = s.split(":", 1)
            fields[k.strip().lower()] = v.lstrip("=").strip()
    sizes = _header_shape(path, "NRRD", ("dimension ", fields.get("dimension", "0")), ("sizes", fields.get("sizes", "")))
    t = _header_type(path, "NRRD type", fields.get("type", "").lower(), _NRRD_TYPES)
    enc = fields.get("encoding", "raw").lower()
    if "data file" in fields or "datafile" in fields:
        available = 0
        for key in ("data file", "datafile"):  # both spellings are NRRD; check each one given
            if key not in fields:
                continue
            df = fields[key]
            dpath = _header_data_file(path, df)
            if not dpath.is_file():
                raise _err(path, f"its data file {df!r} is missing")
            available = dpath.stat().st_size
    else:
        if not ended:
            raise _err(path, "the NRRD header does not end (no blank line)")
        available = os.path.getsize(path) - header_len
    raw = enc in ("raw",)
    n = _check_count(path, sizes, _NRRD_TYPES[t], available if raw else None)
    if not raw and n * _NRRD_TYPES[t] > 2000 * max(available, 1):
        raise _err(path, "the header's size does not fit the compressed data (corrupt file?)")


def _sitk_volume(path, img, fmt) -> Volume:
    import SimpleITK as sitk

    if img.GetNumberOfComponentsPerPixel() != 1:
        raise _err(path, f"has {img.GetNumberOfComponentsPerPixel()} components per voxel; a scalar volume is needed")
    dim = img.GetDimension()
    if dim not in (3, 4):
        raise _err(path, f"is {dim}-D; a 3-D volume or a 4-D sequence is needed")
    data = sitk.GetArrayFromImage(img)
    sp = img.GetSpacing()
    spacing = tuple(reversed(sp[:3]))
    dt = float(sp[3]) if dim == 4 else None
    return _finish(path, data, spacing, fmt, time_step=dt,
                   meta={"origin": tuple(img.GetOrigin()), "direction": tuple(img.GetDirection())})


def _read_sitk_file(path, fmt) -> Volume:
    sitk = _sitk(path, fmt)

    if fmt == "metaimage":
        _precheck_metaimage(path)
    elif fmt == "nrrd":
        _precheck_nrrd(path)
    try:
        reader = sitk.ImageFileReader()
        reader.SetFileName(str(path))
        reader.ReadImageInformation()
        size = reader.GetSize()
        _check_count(path, size, 1, None)
        img = reader.Execute()
    except VolumeIOError:
        raise
    except Exception as exc:
        raise _err(path, f"cannot be read as {fmt} ({_sitk_detail(exc)})") from None
    return _sitk_volume(path, img, fmt)


def _sitk_detail(exc: Exception) -> str:
    """The last non-empty line of a SimpleITK error (its reason), else a plain phrase."""
    msg = str(exc).strip().splitlines()
    return next((ln.strip() for ln in reversed(msg) if ln.strip()), failure_reason(exc))[:160]


def _read_dicom(path) -> Volume:
    sitk = _sitk(path, "dicom")

    p = Path(path)
    folder = p if p.is_dir() else p.parent
    try:
        ids = sitk.ImageSeriesReader.GetGDCMSeriesIDs(str(folder)) or ()
        if not ids:
            raise _err(path, "no DICOM series found" + ("" if p.is_dir() else " in its folder"))
        chosen = None
        for sid in ids:
            names = sitk.ImageSeriesReader.GetGDCMSeriesFileNames(str(folder), sid)
            if p.is_dir() or any(Path(n).resolve() == p.resolve() for n in names):
                chosen = names
                break
        if chosen is None:
            raise _err(path, "the file belongs to no readable DICOM series")
        if p.is_dir() and len(ids) > 1:
            raise _err(path, f"the folder holds {len(ids)} DICOM series: give one file of the series you want")
        reader = sitk.ImageSeriesReader()
        reader.SetFileNames(chosen)
        img = reader.Execute()
    except VolumeIOError:
        raise
    except Exception as exc:
        raise _err(path, f"cannot be read as a DICOM series ({_sitk_detail(exc)})") from None
    if img.GetDimension() == 2:
        raise _err(path, "the DICOM series has a single slice; a 3-D volume is needed")
    return _sitk_volume(path, img, "dicom")


# --------------------------------------------------------------------------- NumPy
def _npy_header(fh, path):
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh, max_header_size=100000)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh, max_header_size=100000)
        else:
            raise ValueError(f"version {version}")
    except Exception as exc:
        raise _err(path, f"not a valid NumPy array file ({failure_reason(exc)})") from None
    if dtype.hasobject:
        raise _err(path, "holds Python objects; numbers are needed")
    return shape, fortran, dtype


def _read_npy(path) -> Volume:
    with open(path, "rb") as fh:
        shape, fortran, dtype = _npy_header(fh, path)
        start = fh.tell()
    _check_count(path, shape, dtype.itemsize, os.path.getsize(path) - start)
    try:
        data = np.load(path, mmap_mode="r", allow_pickle=False)
        data = np.array(data)
    except Exception as exc:
        raise _err(path, f"the array cannot be read ({failure_reason(exc)})") from None
    return _finish(path, data, (1.0, 1.0, 1.0), "npy")


def npz_member(zf, name, path) -> np.ndarray:
    """The array ``name`` of the open ``.npz`` ``zf``, its header checked against the data
    before anything is allocated (raises :class:`VolumeIOError`)."""
    info = zf.getinfo(name)
    with zf.open(name) as fh:
        head = fh.read(min(info.file_size, 100000 + 16))
    bio = io.BytesIO(head)
    shape, fortran, dtype = _npy_header(bio, path)
    _check_count(path, shape, dtype.itemsize, info.file_size - bio.tell())
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > 2000 * max(info.compress_size, 1):
        raise _err(path, "a member's size does not fit its compressed data (corrupt file?)")
    with zf.open(name) as fh:
        return np.lib.format.read_array(fh, allow_pickle=False)


def _npz_spacing(sp, path) -> tuple:
    """The ``spacing`` array of an ``.npz``: 3 positive finite voxel sizes (z, y, x) in mm, or
    4 (t, z, y, x) whose last 3 are used; anything else is an error, not a silent 1 mm."""
    sp = np.asarray(sp)
    if sp.dtype.kind not in "uif" or sp.size not in (3, 4) or sp.ndim > 1:
        raise _err(path, f"its 'spacing' must hold 3 voxel sizes (z, y, x) in mm; it holds "
                         f"{sp.size} value{'' if sp.size == 1 else 's'} of type {sp.dtype}")
    vals = [float(v) for v in sp.ravel()[-3:]]
    bad = [v for v in vals if not np.isfinite(v) or v <= 0]
    if bad:
        raise _err(path, f"its 'spacing' {tuple(vals)} is not usable: voxel sizes must be finite and "
                         "greater than 0")
    return tuple(vals)


def _read_npz(path) -> Volume:
    try:
        zf = zipfile.ZipFile(path)
    except Exception as exc:
        raise _err(path, f"not a valid .npz (zip) file ({failure_reason(exc)})") from None
    with zf:
        try:
            names = {n[:-4] if n.endswith(".npy") else n: n for n in zf.namelist()}
            key = next((k for k in ("volume", "frames", "data", "image") if k in names), None)
            arrays = [k for k in names if k not in ("spacing", "time_step")]
            if key is None:
                if len(arrays) != 1:
                    raise _err(path, f"holds {len(arrays)} arrays ({', '.join(sorted(arrays)[:5])}); "
                                     "name the volume 'volume' or 'frames'")
                key = arrays[0]
            data = npz_member(zf, names[key], path)
            spacing = (1.0, 1.0, 1.0)
            if "spacing" in names:
                spacing = _npz_spacing(npz_member(zf, names["spacing"], path), path)
            dt = None
            if "time_step" in names:
                t = npz_member(zf, names["time_step"], path)
                dt = float(np.ravel(t)[0]) if t.size else None
        except VolumeIOError:
            raise
        except Exception as exc:
            raise _err(path, f"the arrays cannot be read ({failure_reason(exc)})") from None
    return _finish(path, data, spacing, "npz", time_step=dt)


# --------------------------------------------------------------------------- public readers
def read_volume(path) -> Volume:
    """Read a 3-D volume or a 4-D sequence (see the module text for the array order).

    Raises
    ------
    VolumeIOError
        Missing, empty, truncated, corrupt or unsupported files (one line).
    """
    p = Path(path)
    fmt = volume_format(p)
    check_input_file(p, error=VolumeIOError, what="a volume file", allow_dir=fmt == "dicom")
    if not fmt:
        raise _err(p, f"unknown volume format {p.suffix or '(no extension)'}: use one of {', '.join(VOLUME_EXTENSIONS)} "
                      "or a DICOM folder")
    try:
        if fmt == "nifti":
            return _read_nifti(p)
        if fmt in ("metaimage", "nrrd"):
            return _read_sitk_file(p, fmt)
        if fmt == "dicom":
            return _read_dicom(p)
        if fmt == "npy":
            return _read_npy(p)
        return _read_npz(p)
    except VolumeIOError:
        raise
    except MemoryError:
        raise _err(p, "does not fit in memory") from None
    except Exception as exc:  # zlib, gzip, zip, struct, nibabel, SimpleITK errors: a corrupt file
        raise _err(p, f"cannot be read ({failure_reason(exc)})") from None


def read_displacement(path, shape=None) -> np.ndarray:
    """A displacement field (3, Z, Y, X) in voxels from ``.npy``/``.npz`` or a NIfTI vector
    image written by :func:`write_displacement` (``shape`` checks the volume size)."""
    p = Path(path)
    check_input_file(p, error=VolumeIOError, what="a displacement file")
    fmt = volume_format(p)
    if fmt == "npy":
        with open(p, "rb") as fh:
            sh, _f, dt = _npy_header(fh, p)
            start = fh.tell()
        _check_count(p, sh, dt.itemsize, os.path.getsize(p) - start, what="values")
        try:
            u = np.array(np.load(p, mmap_mode="r", allow_pickle=False))
        except Exception as exc:
            raise _err(p, f"the array cannot be read ({failure_reason(exc)})") from None
    elif fmt == "npz":
        try:
            with zipfile.ZipFile(p) as zf:
                names = {n[:-4] if n.endswith(".npy") else n: n for n in zf.namelist()}
                key = next((k for k in ("displacement", "field", "u", "flow") if k in names), None)
                if key is None:
                    arr = [k for k in names if k != "spacing"]
                    if len(arr) != 1:
                        raise _err(p, "name the field 'displacement' in the .npz")
                    key = arr[0]
                u = npz_member(zf, names[key], p)
        except VolumeIOError:
            raise
        except Exception as exc:
            raise _err(p, f"not a readable .npz ({failure_reason(exc)})") from None
    elif fmt == "nifti":
        import nibabel as nib

        try:
            img = nib.load(str(p))
            sh = img.header.get_data_shape()
            _check_count(p, sh, 4, None, what="values")
            arr = np.asarray(img.dataobj, dtype=np.float32)
        except VolumeIOError:
            raise
        except Exception as exc:
            raise _err(p, f"not a readable NIfTI field ({failure_reason(exc)})") from None
        if arr.ndim == 5 and arr.shape[3] == 1:
            arr = arr[:, :, :, 0, :]
        if arr.ndim != 4 or arr.shape[3] != 3:
            raise _err(p, f"holds an image of shape {arr.shape}, not a 3-component vector field")
        descrip = bytes(img.header["descrip"].tobytes()).rstrip(b"\0")
        units_mm = not descrip.startswith(_FIELD_DESCRIP) or descrip.endswith(b"mm")
        zooms = np.asarray(img.header.get_zooms()[:3], dtype=np.float32)
        if units_mm:
            arr = arr / zooms.reshape(1, 1, 1, 3)
        # (i, j, k, comp i/j/k) -> (comp z/y/x, k, j, i)
        u = np.transpose(arr[..., ::-1], (3, 2, 1, 0))
    else:
        raise _err(p, f"unknown field format {p.suffix or '(no extension)'}: use one of {', '.join(FIELD_EXTENSIONS)}")
    u = np.ascontiguousarray(u, dtype=np.float32)
    if u.ndim != 4 or u.shape[0] != 3:
        raise _err(p, f"holds an array of shape {u.shape}; a displacement field must be (3, Z, Y, X)")
    if shape is not None and tuple(u.shape[1:]) != tuple(shape):
        raise _err(p, f"the field is {tuple(u.shape[1:])} voxels but the volumes are {tuple(shape)}")
    if not np.isfinite(u).all():
        raise _err(p, "the field contains NaN or infinite values")
    return u


def read_sequence(path, **kw):
    """An echo study (:class:`app.io.echo_study.EchoStudy`): a 4-D file, a 3-D file paired
    with the next of its folder (or ``moving=``), a folder of frames, a DICOM series or a
    synthetic sequence folder, with its ground truth. See :func:`app.io.echo_study.read_sequence`."""
    from .echo_study import read_sequence as _read_sequence

    return _read_sequence(path, **kw)


# --------------------------------------------------------------------------- writers
def check_output_path(path, extensions=WRITE_EXTENSIONS) -> Path:
    """Check before any work that a file of a supported type can be written at ``path``."""
    p = Path(path)
    name = p.name.lower()
    if not any(name.endswith(e) for e in extensions):
        raise VolumeIOError(f"{p}: unsupported output type: use one of {', '.join(extensions)}")
    try:
        return check_output_file(p)
    except OutputPathError as e:
        raise VolumeIOError(str(e)) from None


@contextlib.contextmanager
def _atomic_named(path: Path):
    """A temporary path with ``path``'s extension next to it, moved onto ``path`` on success
    (for libraries that pick the format from the file name)."""
    name = path.name
    ext = ".nii.gz" if name.lower().endswith(".nii.gz") else path.suffix
    remove_stale_parts(path.parent, name)
    with errors_named_after(path):
        fd, tmp = tempfile.mkstemp(prefix=_part_prefix(name), suffix=f".part{ext}", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb") as g:
            os.fsync(g.fileno())
        os.chmod(tmp_path, 0o644)
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise


def _nifti_bytes(img, gz: bool) -> bytes:
    raw = img.to_bytes()
    return gzip.compress(raw, compresslevel=6) if gz else raw


def _affine_for(spacing, affine):
    if affine is not None:
        a = np.asarray(affine, dtype=np.float64)
        if a.shape != (4, 4) or not np.isfinite(a).all():
            raise VolumeIOError("the affine must be a finite 4 x 4 matrix")
        return a
    sz, sy, sx = spacing
    return np.diag([sx, sy, sz, 1.0])


def write_volume(path, data, *, spacing=(1.0, 1.0, 1.0), affine=None, time_step=None) -> None:
    """Write a ``[z, y, x]`` volume or ``[t, z, y, x]`` sequence (format from the extension)."""
    p = check_output_path(path)
    a = np.asarray(data)
    if a.ndim not in (3, 4):
        raise VolumeIOError(f"{p.name}: a volume must be 3-D or 4-D, not {a.ndim}-D {a.shape}")
    if a.dtype.kind not in "uif":
        raise VolumeIOError(f"{p.name}: cannot write {a.dtype} voxels")
    sp = _spacing3(spacing, p)
    name = p.name.lower()
    if name.endswith(".npy"):
        with atomic_write(p, "wb") as fh:
            np.save(fh, np.ascontiguousarray(a))
    elif name.endswith(".npz"):
        extra = {} if time_step is None else {"time_step": np.float64(time_step)}
        with atomic_write(p, "wb") as fh:
            np.savez_compressed(fh, volume=a, spacing=np.asarray(sp, dtype=np.float64), **extra)
    elif name.endswith(".nii") or name.endswith(".nii.gz"):
        import nibabel as nib

        arr = np.transpose(a, (3, 2, 1, 0)) if a.ndim == 4 else np.transpose(a, (2, 1, 0))
        img = nib.Nifti1Image(np.ascontiguousarray(arr), _affine_for(sp, affine))
        zooms = (sp[2], sp[1], sp[0]) + ((float(time_step or 1.0),) if a.ndim == 4 else ())
        img.header.set_zooms(zooms)
        img.header.set_xyzt_units("mm", "sec")
        with atomic_write(p, "wb") as fh:
            fh.write(_nifti_bytes(img, name.endswith(".gz")))
    else:
        sitk = _sitk(p, "write")
        img = sitk.GetImageFromArray(np.ascontiguousarray(a), isVector=False)
        spc = [sp[2], sp[1], sp[0]] + ([float(time_step or 1.0)] if a.ndim == 4 else [])
        img.SetSpacing(spc)
        with _atomic_named(p) as tmp:
            sitk.WriteImage(img, str(tmp), True)


def write_displacement(path, u, *, spacing=(1.0, 1.0, 1.0), affine=None, units: str = "mm") -> None:
    """Write a displacement field (3, Z, Y, X) in voxels: ``.npy`` (as is), ``.npz`` (with
    ``spacing``) or a NIfTI vector image (components along the file's i, j, k axes, in
    ``units`` "mm" or "voxels")."""
    p = check_output_path(path, FIELD_EXTENSIONS)
    a = np.asarray(u, dtype=np.float32)
    if a.ndim != 4 or a.shape[0] != 3:
        raise VolumeIOError(f"{p.name}: a displacement field must be (3, Z, Y, X), not {a.shape}")
    if units not in ("mm", "voxels"):
        raise VolumeIOError(f"units must be 'mm' or 'voxels', not {units!r}")
    sp = _spacing3(spacing, p)
    name = p.name.lower()
    if name.endswith(".npy"):
        with atomic_write(p, "wb") as fh:
            np.save(fh, np.ascontiguousarray(a))
    elif name.endswith(".npz"):
        with atomic_write(p, "wb") as fh:
            np.savez_compressed(fh, displacement=a, spacing=np.asarray(sp, dtype=np.float64))
    else:
        import nibabel as nib

        comp = a[::-1]                      # (x, y, z) = (i, j, k)
        if units == "mm":
            comp = comp * np.asarray([sp[2], sp[1], sp[0]], dtype=np.float32).reshape(3, 1, 1, 1)
        arr = np.transpose(comp, (3, 2, 1, 0))[:, :, :, None, :]   # (i, j, k, 1, 3)
        img = nib.Nifti1Image(np.ascontiguousarray(arr, dtype=np.float32), _affine_for(sp, affine))
        img.header.set_intent("vector", (), name="displacement")
        img.header.set_zooms((sp[2], sp[1], sp[0], 1.0, 1.0))
        img.header.set_xyzt_units("mm", "sec")
        img.header["descrip"] = _FIELD_DESCRIP + units.encode()
        with atomic_write(p, "wb") as fh:
            fh.write(_nifti_bytes(img, name.endswith(".gz")))


# --------------------------------------------------------------------------- fuzz-test registration
def _make_samples(folder: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    v = rng.integers(0, 255, size=(6, 7, 8), dtype=np.uint8)
    out = []
    for name in ("s.nii", "s.nii.gz", "s.mha", "s.nrrd", "s.npy", "s.npz"):
        write_volume(folder / name, v, spacing=(2.0, 1.0, 0.5))
        out.append(folder / name)
    return out


try:  # the reader fuzz test of the framework
    from app.io.registry import register_reader

    register_reader("volume", read_volume, (".nii", ".gz", ".mha", ".nrrd", ".npy", ".npz"),
                    make_samples=_make_samples)
except ImportError:  # pragma: no cover - older framework
    pass
