"""Mesh file I/O for mesh segmentation: read meshes (PLY, OBJ, OFF and STL with our own
checked readers in :mod:`app.io.mesh_formats`, other formats through pymeshlab), write
coloured PLY, PSB ``.seg`` label files and one mesh per segment.

This module never imports Qt. Every write goes through :mod:`app.io.atomic`, so a failure
or a cancelled job leaves no partial file behind, and every writer validates its input
before it creates anything.

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> from app.io.mesh_io import write_colored_ply, read_mesh
>>> v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
>>> f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
>>> out = pathlib.Path(tempfile.mkdtemp()) / "tet.ply"
>>> _ = write_colored_ply(out, v, f, np.full((4, 3), 200, np.uint8))
>>> vv, ff = read_mesh(out)
>>> vv.shape, ff.shape
((4, 3), (4, 3))
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import struct
from collections.abc import Sequence

import numpy as np

from app.io import mesh_formats
from app.io.atomic import (
    OUTPUT_MARKER,
    OutputPathError,
    atomic_output_dir,
    atomic_write,
    check_output_file,
    check_writable_parent,
    hidden_prefix,
)
from app.io.inputs import check_input_file, failure_reason
from app.io.mesh_formats import MeshFile, MeshIOError

__all__ = [
    "MeshIOError",
    "MESH_EXTENSIONS",
    "check_output_path",
    "check_segments_dir",
    "SEGMENT_FORMATS",
    "read_mesh",
    "read_face_colors",
    "write_colored_ply",
    "write_mesh",
    "write_seg",
    "read_seg",
    "write_segments",
    "face_areas",
]

#: Extensions of the mesh formats :func:`read_mesh` reads (PLY, OBJ, OFF and STL with our own
#: readers, the rest with pymeshlab), and the formats :func:`write_segments` and
#: :func:`write_mesh` can write: declared in :mod:`app.io.formats` (no NumPy there).
from .formats import MESH_EXTENSIONS, SEGMENT_FORMATS  # noqa: E402


# ----------------------------------------------------------------------------- reading
def _name(path: pathlib.Path) -> str:
    """How messages name a file: by its name (a job may read a temporary copy)."""
    return path.name or str(path)


def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line
    return ""


def _pymeshlab_reason(exc: Exception) -> str:
    """The useful part of a pymeshlab load error ("Error details: ...")."""
    text = str(exc)
    m = re.search(r"Error details:\s*(.+)", text)
    if m:
        return m.group(1).strip()
    return _first_line(text) or failure_reason(exc)


def _nonfinite(bad: int, total: int) -> str:
    verb = "has" if bad == 1 else "have"
    return (f"{bad} of {total} vertices {verb} coordinates that are not finite numbers "
            "(NaN or infinity); fix or remove them")


def _read_own(path: pathlib.Path, name: str, ext: str, **kw) -> MeshFile:
    """One of our readers (:mod:`app.io.mesh_formats`), every failure one MeshIOError line."""
    try:
        return mesh_formats.READERS[ext](path, name, **kw)
    except MeshIOError:
        raise
    except MemoryError:
        raise MeshIOError(f"{name}: too large to read into memory") from None
    except OSError as exc:
        raise MeshIOError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    except (ValueError, IndexError, OverflowError, struct.error) as exc:
        # a safety net: the readers check what they read, so this is a bug, but a corrupt
        # file must still give one line and never take the application down
        reason = _first_line(str(exc)) or failure_reason(exc)
        raise MeshIOError(f"{name}: not a readable {ext[1:].upper()} mesh ({reason})") from None


def _read_pymeshlab(path: pathlib.Path, name: str, ext: str) -> tuple[np.ndarray, np.ndarray]:
    """Formats we do not parse ourselves (3MF, glTF, COLLADA, ...), read by pymeshlab in a
    child process (:mod:`app.io.pymeshlab_child`): its importers can crash on a bad file."""
    from app.io import pymeshlab_child

    got = pymeshlab_child.load(path, name, MeshIOError)
    if got.get("unknown_format"):
        raise MeshIOError(f"{name}: unknown mesh format {ext!r} (use one of {', '.join(MESH_EXTENSIONS)})")
    return got["vertices"], got["faces"]


def read_mesh(path, *, warnings: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read a triangle mesh.

    PLY, OBJ, OFF and STL are read by our own checked readers (:mod:`app.io.mesh_formats`);
    the other formats of :data:`MESH_EXTENSIONS` by pymeshlab. Quads and polygons are
    fan-triangulated in place. Vertex and face order are those of the file, so a PSB
    ``.seg`` file lines up with the faces (STL vertices are welded, in order of first
    appearance).

    Parameters
    ----------
    path : str or os.PathLike
    warnings : list, optional
        Non-fatal findings (skipped faces, unreferenced vertices, ...) are appended here.

    Returns
    -------
    vertices : (V, 3) float64
    faces : (F, 3) int64

    Raises
    ------
    MeshIOError
        The file is missing, empty, not a mesh, corrupt or truncated, has no faces, has
        faces that refer to vertices that do not exist, or has coordinates that are not
        finite numbers. The message is one line that names the file.
    """
    path = pathlib.Path(path)
    name = _name(path)
    check_input_file(path, error=MeshIOError, what="a mesh file", label=name)
    ext = path.suffix.lower()
    if not ext:
        raise MeshIOError(
            f"{name}: the file has no extension, so its mesh format is unknown "
            f"(use one of {', '.join(MESH_EXTENSIONS)})"
        )

    skipped = 0
    if ext in mesh_formats.READERS:
        got = _read_own(path, name, ext)
        vertices, faces, skipped = got.vertices, got.faces, got.skipped
    else:
        vertices, faces = _read_pymeshlab(path, name, ext)

    finite = np.isfinite(vertices).all(axis=1)
    if not finite.all():
        raise MeshIOError(f"{name}: {_nonfinite(int((~finite).sum()), len(vertices))}")
    if len(vertices) == 0:
        raise MeshIOError(f"{name}: the file holds no vertices; it is not a mesh")
    if len(faces) == 0:
        if skipped:
            raise MeshIOError(f"{name}: its only face has fewer than 3 vertices" if skipped == 1 else
                              f"{name}: none of its {skipped:,} faces has 3 or more vertices")
        raise MeshIOError(
            f"{name}: has {len(vertices):,} vert{'ex' if len(vertices) == 1 else 'ices'} but no faces; "
            "it is a point cloud, not a "
            "surface mesh, so it cannot be segmented"
        )
    if faces.min() < 0 or faces.max() >= len(vertices):
        raise MeshIOError(f"{name}: faces refer to vertices that do not exist")
    if warnings is not None:
        if skipped:
            warnings.append(f"{skipped:,} face{'s' if skipped != 1 else ''} of {name} could not be read "
                            f"(fewer than 3 vertices) and {'were' if skipped != 1 else 'was'} skipped")
        used = np.zeros(len(vertices), bool)
        used[faces.ravel()] = True
        n_unused = int((~used).sum())
        if n_unused:
            warnings.append(f"{n_unused} vert{'ices' if n_unused != 1 else 'ex'} of {name} belong"
                            f"{'s' if n_unused == 1 else ''} to no face")
    return vertices, faces


def read_face_colors(path) -> np.ndarray | None:
    """Per-face RGB colours (F, 3) uint8 of a mesh file (one row per triangle, in the order
    of :func:`read_mesh`), or None if it has none. PLY ``red``/``green``/``blue`` face
    properties are read by our PLY reader, other formats by pymeshlab."""
    path = pathlib.Path(path)
    name = _name(path)
    check_input_file(path, error=MeshIOError, what="a mesh file", label=name)
    if path.suffix.lower() == ".ply":
        return _read_own(path, name, ".ply", colors=True).face_colors
    from app.io import pymeshlab_child

    got = pymeshlab_child.load(path, name, MeshIOError)
    if got.get("unknown_format"):
        raise MeshIOError(f"{name}: unknown mesh format {path.suffix!r}")
    return got.get("face_colors")


# ----------------------------------------------------------------------------- validation
def _check_mesh(vertices, faces) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(vertices)
    f = np.asarray(faces)
    if v.ndim != 2 or v.shape[1] != 3:
        raise MeshIOError(f"vertices must have shape (V, 3), not {v.shape}")
    if f.ndim != 2 or f.shape[1] != 3:
        raise MeshIOError(f"faces must have shape (F, 3), not {f.shape}")
    if not np.issubdtype(f.dtype, np.integer):
        raise MeshIOError(f"faces must be integers, not {f.dtype}")
    if len(f) == 0:
        raise MeshIOError("the mesh has no faces")
    if f.min() < 0 or f.max() >= len(v):
        raise MeshIOError("faces refer to vertices that do not exist")
    v = np.asarray(v, dtype=np.float64)
    if not np.isfinite(v).all():
        raise MeshIOError("vertex coordinates contain NaN or infinity")
    return v, f.astype(np.int64, copy=False)


def _check_colors(colors, n: int, what: str = "face colours") -> np.ndarray:
    c = np.asarray(colors)
    if c.ndim != 2 or c.shape[0] != n or c.shape[1] not in (3, 4):
        raise MeshIOError(f"{what} must have shape ({n}, 3), not {c.shape}")
    if c.dtype != np.uint8:
        if np.issubdtype(c.dtype, np.floating) and c.size and float(np.nanmax(c)) <= 1.0:
            c = np.rint(c * 255)
        c = np.clip(c, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(c[:, :3])


def _check_labels(labels, n_faces: int | None = None) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise MeshIOError(f"labels must be one integer per face, not an array of shape {lab.shape}")
    if lab.size and not np.issubdtype(lab.dtype, np.integer):
        if not np.all(np.isfinite(lab)) or not np.all(lab == np.round(lab)):
            raise MeshIOError("labels must be integers")
    lab = lab.astype(np.int64)
    if n_faces is not None and len(lab) != n_faces:
        raise MeshIOError(f"there are {len(lab)} labels for {n_faces} faces")
    if lab.size and lab.min() < 0:
        raise MeshIOError("labels must be 0 or more")
    return lab


def check_output_path(path: str | os.PathLike) -> pathlib.Path:
    """Check that a file can be written at ``path`` (not a folder; its folder exists and
    is writable) before any work starts. Raises :class:`MeshIOError` with one clear line."""
    try:
        return check_output_file(path)
    except OutputPathError as e:
        raise MeshIOError(str(e)) from None


# ----------------------------------------------------------------------------- writers
def _ply_bytes(v: np.ndarray, f: np.ndarray, face_colors: np.ndarray | None,
               face_quality: np.ndarray | None = None, comments=()) -> bytes:
    """Binary little-endian PLY: double x,y,z; uchar-count int vertex_indices; uchar rgb;
    float quality."""
    header = [
        "ply",
        "format binary_little_endian 1.0",
        "comment written by gpulab",
        *(f"comment {c}" for c in comments),
        f"element vertex {len(v)}",
        "property double x",
        "property double y",
        "property double z",
        f"element face {len(f)}",
        "property list uchar int vertex_indices",
    ]
    fields = [("n", "u1"), ("idx", "<i4", (3,))]
    if face_colors is not None:
        header += ["property uchar red", "property uchar green", "property uchar blue"]
        fields += [("rgb", "u1", (3,))]
    if face_quality is not None:
        header.append("property float quality")
        fields += [("q", "<f4")]
    header.append("end_header")
    vrec = np.ascontiguousarray(v, dtype="<f8")
    frec = np.empty(len(f), dtype=np.dtype(fields))
    frec["n"] = 3
    frec["idx"] = f
    if face_colors is not None:
        frec["rgb"] = face_colors
    if face_quality is not None:
        frec["q"] = face_quality
    return ("\n".join(header) + "\n").encode("ascii") + vrec.tobytes() + frec.tobytes()


def _obj_bytes(v: np.ndarray, f: np.ndarray) -> bytes:
    lines = ["# written by gpulab"]
    lines += [f"v {x:.17g} {y:.17g} {z:.17g}" for x, y, z in v]
    lines += [f"f {a} {b} {c}" for a, b, c in (f + 1)]
    return ("\n".join(lines) + "\n").encode("ascii")


def _off_bytes(v: np.ndarray, f: np.ndarray) -> bytes:
    lines = ["OFF", f"{len(v)} {len(f)} 0"]
    lines += [f"{x:.17g} {y:.17g} {z:.17g}" for x, y, z in v]
    lines += [f"3 {a} {b} {c}" for a, b, c in f]
    return ("\n".join(lines) + "\n").encode("ascii")


def _stl_bytes(v: np.ndarray, f: np.ndarray) -> bytes:
    tri = v[f]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
    rec = np.zeros(len(f), dtype=np.dtype([("n", "<f4", (3,)), ("v", "<f4", (3, 3)), ("attr", "<u2")]))
    rec["n"] = n
    rec["v"] = tri
    head = b"binary STL written by gpulab".ljust(80, b" ")
    return head + np.uint32(len(f)).tobytes() + rec.tobytes()


def _mesh_bytes(fmt: str, v, f, face_colors=None) -> bytes:
    if fmt == "ply":
        return _ply_bytes(v, f, face_colors)
    if fmt == "obj":
        return _obj_bytes(v, f)
    if fmt == "off":
        return _off_bytes(v, f)
    if fmt == "stl":
        return _stl_bytes(v, f)
    raise MeshIOError(f"cannot write {fmt!r} meshes (use one of {', '.join(SEGMENT_FORMATS)})")


def write_colored_ply(path, vertices, faces, face_colors, *, face_quality=None,
                      comments=()) -> pathlib.Path:
    """Write a binary PLY with per-face ``red``/``green``/``blue`` uchar properties and,
    optionally, a per-face ``float quality`` (MeshLab shows it through Render ▸ Color ▸ Per
    Face Quality) and header comments.

    MeshLab, pymeshlab and pyvista (VTK) read the colours back. The file appears
    atomically: either the whole file is written or none at all.
    """
    v, f = _check_mesh(vertices, faces)
    c = _check_colors(face_colors, len(f))
    q = None
    if face_quality is not None:
        q = np.asarray(face_quality, dtype=np.float32).reshape(-1)
        if len(q) != len(f):
            raise MeshIOError(f"{len(q)} face quality values for {len(f)} faces")
        if not np.isfinite(q).all():
            raise MeshIOError("the face quality contains NaN or infinite values")
    if any("\n" in str(cm) for cm in comments):
        raise MeshIOError("a PLY comment cannot contain a line break")
    path = check_output_path(path)
    data = _ply_bytes(v, f, c, q, comments)
    with atomic_write(path, "wb") as fh:
        fh.write(data)
    return path


def write_mesh(path, vertices, faces, face_colors=None) -> pathlib.Path:
    """Write a triangle mesh as PLY (with optional face colours), OBJ, OFF or STL."""
    path = pathlib.Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in SEGMENT_FORMATS:
        raise MeshIOError(f"{path}: cannot write {fmt or 'extension-less'} files "
                          f"(use .{', .'.join(SEGMENT_FORMATS)})")
    v, f = _check_mesh(vertices, faces)
    c = _check_colors(face_colors, len(f)) if face_colors is not None else None
    path = check_output_path(path)
    data = _mesh_bytes(fmt, v, f, c)
    with atomic_write(path, "wb") as fh:
        fh.write(data)
    return path


def write_seg(path, labels, n_faces: int | None = None) -> pathlib.Path:
    """Write labels in the Princeton Segmentation Benchmark format.

    One integer per line; line ``i`` holds the segment id of face ``i``; ids start at 0.
    """
    lab = _check_labels(labels, n_faces)
    if lab.size == 0:
        raise MeshIOError("there are no labels to write")
    path = check_output_path(path)
    text = "\n".join(map(str, lab.tolist())) + "\n"
    with atomic_write(path, "wb") as fh:
        fh.write(text.encode("ascii"))
    return path


#: Largest ``.seg`` file :func:`read_seg` reads: one line per face, so 256 MB is tens of
#: millions of faces, far beyond what the segmentation handles.
SEG_MAX_BYTES = 256 * 1024 * 1024


def read_seg(path, n_faces: int | None = None) -> np.ndarray:
    """Read a PSB ``.seg`` file: (F,) int64 labels, one per line.

    Raises :class:`MeshIOError` (one line naming the file) for a missing, empty, oversized
    or binary file, a line that is not a whole number, a negative label, or a label count
    that does not match ``n_faces``.
    """
    path = pathlib.Path(path)
    name = _name(path)
    check_input_file(path, error=MeshIOError, what="a .seg file", label=name, allow_empty=True)
    try:
        size = path.stat().st_size
        if size > SEG_MAX_BYTES:
            raise MeshIOError(f"{name}: the file is {size / 2**20:,.0f} MB; a .seg label file (one line per "
                              f"face) of more than {SEG_MAX_BYTES >> 20} MB is not one")
        data = path.read_bytes()
    except OSError as exc:
        raise MeshIOError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    a = np.frombuffer(data, np.uint8)
    if a.size and (a.max() >= 128 or (a == 0).any()):
        raise MeshIOError(f"{name}: not a .seg label file (it holds binary data, not one integer per line)")
    ws = mesh_formats._WS[a]
    n_tokens = int((~ws[:1]).sum() + (~ws[1:] & ws[:-1]).sum()) if a.size else 0
    if n_tokens == 0:
        raise MeshIOError(f"{name}: the file is empty")
    lab = None
    try:
        lab = np.fromstring(data, dtype=np.int64, sep=" ")
    except ValueError:
        pass
    bound = np.iinfo(np.int64)
    if lab is None or lab.size != n_tokens or (lab.size and (lab.max() == bound.max or lab.min() == bound.min)):
        where = ""
        for i, line in enumerate(data.splitlines(), 1):
            for tok in line.split():
                if not re.fullmatch(rb"[+-]?\d{1,18}", tok):
                    where = f"; line {i:,} holds {tok[:20].decode('ascii')!r}"
                    break
            if where:
                break
        raise MeshIOError(f"{name}: not a .seg label file (expected one integer per line{where})")
    if lab.min() < 0:
        raise MeshIOError(f"{name}: labels must be 0 or more (line {int(np.argmax(lab < 0)) + 1:,} "
                          f"holds {int(lab.min())})")
    if n_faces is not None and len(lab) != n_faces:
        raise MeshIOError(f"{name}: {len(lab)} labels for a mesh of {n_faces} faces")
    return lab


def submesh(vertices, faces, mask) -> tuple[np.ndarray, np.ndarray]:
    """The faces where ``mask`` is true, with unused vertices removed and reindexed."""
    f = np.asarray(faces)[np.asarray(mask, bool)]
    used, inverse = np.unique(f.ravel(), return_inverse=True)
    return np.asarray(vertices)[used], inverse.reshape(-1, 3).astype(np.int64)


_SEGMENT_FILE = re.compile(r"segment_\d+\.(ply|obj|off|stl)")


def check_segments_dir(directory) -> pathlib.Path:
    """Check, before any work, that :func:`write_segments` can fill ``directory``: a new
    folder in a writable folder, an empty one, or one of earlier segment files (replaced)."""
    directory = pathlib.Path(directory)
    if directory.exists() and not directory.is_dir():
        raise MeshIOError(f"{directory}: a file has that name; give a folder")
    if directory.is_dir():
        foreign = [p.name for p in directory.iterdir()
                   if not _SEGMENT_FILE.fullmatch(p.name) and p.name != OUTPUT_MARKER]
        if foreign:
            raise MeshIOError(
                f"{directory}: the folder holds other files ({foreign[0]}, ...); choose a new or "
                "empty folder (a folder of earlier segment files is replaced)"
            )
    check_writable_parent(directory, directory, MeshIOError)
    return directory


def write_segments(
    directory,
    vertices,
    faces,
    labels,
    fmt: str = "ply",
    *,
    colors: Sequence | np.ndarray | None = None,
    prefix: str = "segment_",
) -> list[pathlib.Path]:
    """Write each segment as its own mesh, ``segment_000.ply`` and so on.

    Unused vertices are removed from each piece. ``colors`` (K, 3) uint8, one per label,
    paints each PLY piece in its cluster colour. The folder is filled atomically: it is
    built under a temporary name and renamed into place, so a failure leaves nothing.
    Labels with no faces get no file; the file number is the label id.
    """
    fmt = fmt.lower().lstrip(".")
    if fmt not in SEGMENT_FORMATS:
        raise MeshIOError(f"cannot write {fmt!r} segments (use one of {', '.join(SEGMENT_FORMATS)})")
    v, f = _check_mesh(vertices, faces)
    lab = _check_labels(labels, len(f))
    directory = check_segments_dir(directory)
    ids = np.unique(lab)
    col = None
    if colors is not None:
        col = np.asarray(colors)
        if col.ndim != 2 or col.shape[0] <= int(ids.max()):
            raise MeshIOError(f"colors must have one row per label (at least {int(ids.max()) + 1})")
        col = _check_colors(col, col.shape[0], "segment colours")
    width = max(3, len(str(int(ids.max()))))
    written: list[pathlib.Path] = []
    # A folder of earlier segment files is replaced only once the new one is complete:
    # build the new set under a staging name, then swap.
    replace = directory.is_dir()
    stage = f"{hidden_prefix(directory.name)}{os.getpid()}"   # a long name: within NAME_MAX
    target = directory.with_name(f"{stage}.new") if replace else directory
    with atomic_output_dir(target) as tmp:
        tmp = pathlib.Path(tmp)
        for k in ids:
            sv, sf = submesh(v, f, lab == k)
            fc = None
            if col is not None and fmt == "ply":
                fc = np.repeat(col[k][None, :], len(sf), axis=0)
            name = f"{prefix}{int(k):0{width}d}.{fmt}"
            (tmp / name).write_bytes(_mesh_bytes(fmt, sv, sf, fc))
            written.append(directory / name)
    if replace:
        old = directory.with_name(f"{stage}.old")
        os.replace(directory, old)
        try:
            os.replace(target, directory)
        except BaseException:
            os.replace(old, directory)
            shutil.rmtree(target, ignore_errors=True)
            raise
        shutil.rmtree(old, ignore_errors=True)
    return written


def face_areas(vertices, faces) -> np.ndarray:
    """Area of each triangle, (F,) float64.

    Computed on the mesh centred and scaled to unit size, then scaled back, so that far-out
    coordinates (1e200) give large areas (or inf) instead of overflow warnings and NaN."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces)
    if v.size == 0 or f.size == 0:
        return np.zeros(len(f), np.float64)
    centre = np.median(v, axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = float(np.abs(v - centre).max())
        if not np.isfinite(scale) or scale == 0:
            scale = 1.0
        tri = (v[f] - centre) / scale
        a = 0.5 * np.sqrt(np.square(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])).sum(axis=1))
        return a * scale * scale


# ----------------------------------------------------------------------------- fuzz registry
_CUBE_V = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], float)
#: the bottom as two triangles, the other sides as quads: both list lengths in one file
_CUBE_F = [[0, 3, 2], [0, 2, 1], [4, 5, 6, 7], [0, 1, 5, 4], [2, 3, 7, 6], [3, 0, 4, 7], [1, 2, 6, 5]]


def _cube_variants(folder: pathlib.Path) -> list[pathlib.Path]:
    """A unit cube of quads and triangles in the variants our readers handle beyond what
    :func:`write_mesh` writes: ASCII and big-endian PLY with extra properties and elements,
    OBJ with ``a/b/c`` and negative indices, COFF with comments, ASCII STL."""
    v, faces = _CUBE_V, _CUBE_F
    out = []
    head = ["ply", "format ascii 1.0", "comment cube", f"element vertex {len(v)}", "property float x",
            "property float y", "property float z", "property uchar alpha", f"element face {len(faces)}",
            "property list uchar int vertex_indices", "property uchar red", "property uchar green",
            "property uchar blue", "end_header"]
    rows = [f"{x:g} {y:g} {z:g} 255" for x, y, z in v]
    rows += [f"{len(f)} {' '.join(map(str, f))} {40 * i} 100 200" for i, f in enumerate(faces)]
    out.append(folder / "cube-ascii.ply")
    out[-1].write_text("\n".join(head + rows) + "\n")

    head = ["ply", "format binary_big_endian 1.0", f"element vertex {len(v)}", "property uchar flags",
            "property double x", "property float y", "property int z", f"element face {len(faces)}",
            "property list ushort uint vertex_index", "property float quality", "element edge 2",
            "property int vertex1", "property int vertex2", "end_header"]
    vrec = np.zeros(len(v), np.dtype([("flags", "u1"), ("x", ">f8"), ("y", ">f4"), ("z", ">i4")]))
    vrec["x"], vrec["y"], vrec["z"] = v[:, 0], v[:, 1], v[:, 2]
    body = vrec.tobytes()
    for f in faces:
        body += np.array([len(f)], ">u2").tobytes() + np.asarray(f, ">u4").tobytes()
        body += np.array([0.5], ">f4").tobytes()
    body += np.array([[0, 1], [1, 2]], ">i4").tobytes()
    out.append(folder / "cube-big-endian.ply")
    out[-1].write_bytes(("\n".join(head) + "\n").encode("ascii") + body)

    lines = ["# a cube", "mtllib cube.mtl", "o cube"]
    lines += [f"v {x:g} {y:g} {z:g}" for x, y, z in v[:4]]
    lines += ["vt 0 0", "vn 0 0 -1", "f 1/1/1 4/1/1 3/1/1", "f -4//1 -2//1 -3//1"]
    lines += [f"v {x:g} {y:g} {z:g}" for x, y, z in v[4:]]
    lines += ["g sides", "usemtl grey", "s off"]
    lines += ["f " + " ".join(f"{i + 1}/1" for i in f) for f in faces[2:]]
    out.append(folder / "cube.obj")
    out[-1].write_text("\n".join(lines) + "\n")

    lines = ["COFF # colours per vertex", f"{len(v)} {len(faces)} 0"]
    lines += [f"{x:g} {y:g} {z:g} 0.5 0.5 0.5 1" for x, y, z in v]
    lines += ["# faces, with colours"]
    lines += [f"{len(f)} {' '.join(map(str, f))} 255 0 0" for f in faces]
    out.append(folder / "cube.off")
    out[-1].write_text("\n".join(lines) + "\n")

    lines = ["solid cube"]
    for f in faces:
        for k in range(1, len(f) - 1):
            lines += ["  facet normal 0 0 0", "    outer loop"]
            lines += [f"      vertex {x:e} {y:e} {z:e}" for x, y, z in v[[f[0], f[k], f[k + 1]]]]
            lines += ["    endloop", "  endfacet"]
    lines.append("endsolid cube")
    out.append(folder / "cube-ascii.stl")
    out[-1].write_text("\n".join(lines) + "\n")
    return out


def _sample_meshes(folder: pathlib.Path) -> list[pathlib.Path]:
    """A small closed mesh (an octahedron) in every format :func:`write_mesh` writes, and a
    cube in the other variants of these formats (:func:`_cube_variants`)."""
    v = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    f = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    out = [write_colored_ply(folder / "octa-colored.ply", v, f, np.full((8, 3), 100, np.uint8))]
    out += [write_mesh(folder / f"octa.{ext}", v, f) for ext in SEGMENT_FORMATS]
    return out + _cube_variants(folder)


def _sample_seg(folder: pathlib.Path) -> list[pathlib.Path]:
    return [write_seg(folder / "labels.seg", np.arange(40) % 3)]


def _register() -> None:
    from app.io.registry import register_reader

    register_reader("mesh", read_mesh, (".ply", ".obj", ".off", ".stl"), make_samples=_sample_meshes)
    register_reader("seg labels", read_seg, (".seg",), make_samples=_sample_seg)


_register()
