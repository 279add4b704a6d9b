"""Robust NumPy readers for the mesh formats gpulab writes: PLY, OBJ, OFF and STL.

Why our own readers: a reader runs inside the desktop app, so it must never crash it.
pymeshlab (vcglib) segfaults on some corrupt files (an OBJ face index of 99999999999, for
one) and trusts the counts a header declares. These readers check every declared count
against the file size before they allocate anything, read no more of a binary file than
its header declares, and turn everything wrong into one :class:`MeshIOError` line that
names the file and says what is wrong.

The same contract for the four formats:

* vertices ``(V, 3) float64`` in file order; faces ``(F, 3) int64`` in file order, each
  polygon fan-triangulated in place (``a b c d`` gives ``a b c`` and ``a c d``), so a PSB
  ``.seg`` file lines up with the faces;
* a face with fewer than 3 vertices is skipped and counted (:attr:`MeshFile.skipped`); a
  face that repeats a vertex is kept (pymeshlab drops it, which shifts every later face);
* STL triangles are welded by exact coordinates, vertices in order of first appearance;
* an index outside the vertex list, a missing ``end_header``, a line with too few numbers,
  a token that is not a number, a file that ends early: one clear line each.

Vertices whose coordinates are NaN or infinite are returned as they are (for STL the reader
refuses them itself, per triangle); :func:`app.io.mesh_io.read_mesh` refuses them.

Example
-------
>>> import pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "quad.obj"
>>> _ = p.write_text("v 0 0 0\\nv 1 0 0\\nv 1 1 0\\nv 0 1 0\\nf 1 2 3 -1\\n")
>>> m = read_obj(p)
>>> m.faces.tolist()
[[0, 1, 2], [0, 2, 3]]
"""

from __future__ import annotations

import pathlib
import re
import struct
import sys
from dataclasses import dataclass

import numpy as np

from gpu_kernels.errors import InputError

__all__ = ["MeshIOError", "MeshFile", "read_ply", "read_ply_elements", "read_obj", "read_off", "read_stl", "READERS",
           "PLY_TYPES"]


class MeshIOError(InputError):
    """A mesh or label file cannot be read or written. The message is one clear line."""


@dataclass
class MeshFile:
    """What a reader found: the triangle mesh, and what it had to leave out."""

    vertices: np.ndarray              #: (V, 3) float64, file order
    faces: np.ndarray                 #: (F, 3) int64, file order, polygons fan-triangulated
    skipped: int = 0                  #: faces with fewer than 3 vertices, left out
    face_colors: np.ndarray | None = None  #: (F, 3) uint8 per triangle (PLY only), or None


# ----------------------------------------------------------------------------- common helpers
_WS = np.zeros(256, bool)
_WS[[9, 10, 11, 12, 13, 32]] = True          # what bytes.split() splits on
_TEXT_CHUNK = 1 << 24
_COMMENT = re.compile(rb"#[^\r\n]*")


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _short(token: bytes | str, width: int = 24) -> str:
    text = token.decode("latin-1") if isinstance(token, bytes) else token
    text = text.encode("unicode_escape").decode("ascii")
    return repr(text if len(text) <= width else text[:width] + "...")


class _Ctx:
    """The file being read: its name for messages, its format, its size."""

    def __init__(self, path: pathlib.Path, fmt: str, name: str | None = None, *, noun: str = "mesh",
                 error: type[InputError] | None = None):
        self.path = pathlib.Path(path)
        self.fmt = fmt
        self.name = name or self.path.name
        self.size = self.path.stat().st_size
        self.noun = noun
        self.error_class = error or MeshIOError

    def bad(self, reason: str) -> InputError:
        return self.error_class(f"{self.name}: not a readable {self.fmt} {self.noun} ({reason})")

    def error(self, text: str) -> InputError:
        return self.error_class(f"{self.name}: {text}")

    def too_many(self, declared: str) -> MeshIOError:
        return self.error(f"declares {declared} but the file is only {self.size:,} bytes; "
                          "it is truncated or corrupt")

    def ends_early(self, got: int, total: int, one: str, many: str | None = None) -> MeshIOError:
        return self.error(f"the file ends after {got:,} of its {_plural(total, one, many)}; it is truncated")

    def read_text(self, offset: int = 0) -> bytes:
        """The file from ``offset`` on, refusing NUL bytes (a text format has none) as soon
        as one is met, so a text file followed by gigabytes of zeros costs one chunk."""
        parts = []
        pos = offset
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            while True:
                chunk = fh.read(_TEXT_CHUNK)
                if not chunk:
                    break
                k = chunk.find(b"\0")
                if k >= 0:
                    raise self.bad(f"byte {pos + k:,} is a NUL byte: the file is binary or corrupt, "
                                   f"not {self.fmt} text")
                parts.append(chunk)
                pos += len(chunk)
        return b"".join(parts)


def _lines(data: bytes, comments: bool) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Normalised text and its lines: comments (``#`` to the end of the line) removed if
    asked, CR/CRLF turned into LF, blank lines and leading/trailing blanks dropped. Returns
    the text, the start of each line and the position of its closing newline."""
    if comments and b"#" in data:
        data = _COMMENT.sub(b"", data)
    ends = _clean_line_ends(data)
    if ends is not None:  # already normalised (the usual file): no per-line Python
        text = data if data.endswith(b"\n") else data + b"\n"
        if not data.endswith(b"\n"):
            ends = np.append(ends, len(data))
    else:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        text = b"\n".join([line for line in map(bytes.strip, data.split(b"\n")) if line])
        if text:
            text += b"\n"
        a = np.frombuffer(text, np.uint8)
        ends = np.flatnonzero(a == 10)
    starts = np.empty_like(ends)
    if len(ends):
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
    return text, starts, ends


def _compiled():
    """:mod:`app.io._text_numba` once numba is loaded in this process (the mesh tool loads it for
    its cuts) AND its passes are compiled, else None: a reader never imports numba and never waits
    for a compile or for numba's disk cache (0.7 s with the cache, 20 s without it on 2 cores:
    review B, session 10). The first read that finds numba loaded starts the compile in a thread and reads with NumPy; later reads take the compiled passes."""
    if not COMPILED_TEXT or "numba" not in sys.modules:
        return None
    try:
        from app.io import _text_numba
    except Exception:  # noqa: BLE001 - numba broken: NumPy's passes
        return None
    if _text_numba.ready():
        return _text_numba
    _text_numba.warm_up_in_background()
    return None


#: the compiled passes of :func:`_compiled` (False: NumPy's only; tests and A/Bs)
COMPILED_TEXT = True


def _tokens_per_line(block: bytes, n_lines: int) -> np.ndarray:
    """Number of whitespace-separated tokens on each line of ``block`` (lines end in LF)."""
    a = np.frombuffer(block, np.uint8)
    kc = _compiled()
    if kc is not None:
        return kc.tokens_per_line(a, int(n_lines))
    ws = _WS[a]
    first = ~ws
    first[1:] &= ws[:-1]
    # tokens started up to each line's LF, differenced (one pass; no search per token)
    upto = np.cumsum(first, dtype=np.int64)
    lf = np.flatnonzero(a == 10)
    at_lf = upto[lf]
    per = np.empty(lf.size + 1, dtype=np.int64)
    per[:lf.size] = np.diff(at_lf, prepend=0)
    per[lf.size] = (upto[-1] if upto.size else 0) - (at_lf[-1] if lf.size else 0)  # after the last LF
    out = np.zeros(n_lines, dtype=np.int64)
    m = min(n_lines, per.size)
    out[:m] = per[:m]
    return out


def _numbers(block: bytes, n: int, dtype) -> np.ndarray | None:
    """The ``n`` whitespace-separated numbers of ``block``, or None if a token is not one.

    Integers beyond int64 saturate (they then fail the range checks)."""
    if n == 0:
        return np.empty(0, dtype)
    kc = _compiled()
    if kc is not None and np.dtype(dtype) in (np.int64, np.float64):
        a = np.frombuffer(block, np.uint8)
        ok, out = (kc.parse_ints(a, int(n)) if np.dtype(dtype) == np.int64
                   else kc.parse_floats(a, int(n), kc._P10))
        if ok:   # (else NumPy's parse decides: a token outside the exact fast path, or a bad one)
            return out
    try:
        out = np.fromstring(block, dtype=dtype, sep=" ")
    except ValueError:
        return None
    return out if out.size == n else None


def _clean_line_ends(data: bytes) -> np.ndarray | None:
    """The LF positions of ``data`` if :func:`_lines` would leave it as it is (no CR, no blank
    line, no line that starts or ends with a blank), else None."""
    if not data or b"\r" in data:
        return None
    a = np.frombuffer(data, np.uint8)
    if _WS[a[0]] or (a[-1] != 10 and _WS[a[-1]]):
        return None
    lf = np.flatnonzero(a == 10)
    if lf.size:
        if _WS[a[lf - 1]].any():          # a line ends with a blank (or is empty)
            return None
        nxt = lf[:-1] + 1 if lf[-1] == a.size - 1 else lf + 1
        if _WS[a[nxt]].any():             # a line starts with a blank (or is empty)
            return None
    return lf



def _first_bad_token(block: bytes, kind) -> tuple[int, bytes] | None:
    """Index and text of the first token of ``block`` that ``kind`` (int or float) refuses."""
    for i, tok in enumerate(block.split()):
        try:
            kind(tok)
        except ValueError:
            return i, tok
    return None


def _line_of_token(counts: np.ndarray, k: int) -> int:
    """0-based line holding token ``k``, given the tokens per line."""
    return int(np.searchsorted(np.cumsum(counts), k, side="right"))


def _gather(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``values[starts[i] : starts[i] + counts[i]]`` for every i, concatenated."""
    total = int(counts.sum())
    first = np.cumsum(counts) - counts
    pos = np.repeat(starts - first, counts) + np.arange(total)
    return values[pos]


def _check_range(ctx: _Ctx, flat: np.ndarray, counts: np.ndarray, nv: int, shown=None) -> None:
    """Every vertex index in ``[0, nv)``; else one line naming the first face that is not."""
    bad = (flat < 0) | (flat >= nv)
    if bad.any():
        k = int(np.argmax(bad))
        face = _line_of_token(counts, k) + 1
        value = (shown if shown is not None else flat)[k]
        value = int(value) if float(value).is_integer() else value
        raise ctx.error(f"faces refer to vertices that do not exist (face {face:,} uses vertex {value:,}; "
                        f"the file has {_plural(nv, 'vertex', 'vertices')})")


def _polygons(flat: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """Fan-triangulate polygons given as their indices back to back and their sizes.

    Returns the triangles (T, 3) int64 in polygon order, the number of polygons with fewer
    than 3 vertices (left out), and for each triangle the polygon it comes from."""
    flat = np.asarray(flat, np.int64)
    counts = np.asarray(counts, np.int64)
    if len(counts) and (counts == 3).all():
        return flat.reshape(-1, 3), 0, np.arange(len(counts))
    keep = counts >= 3
    skipped = int((~keep).sum())
    if skipped:
        flat = flat[np.repeat(keep, counts)]
        poly_ids = np.flatnonzero(keep)
        counts = counts[keep]
    else:
        poly_ids = np.arange(len(counts))
    ntri = counts - 2
    starts = np.cumsum(counts) - counts
    owner = np.repeat(np.arange(len(counts)), ntri)
    j = np.arange(int(ntri.sum())) - np.repeat(np.cumsum(ntri) - ntri, ntri) + 1
    s = starts[owner]
    tris = np.stack([flat[s], flat[s + j], flat[s + j + 1]], axis=1) if len(s) else np.empty((0, 3), np.int64)
    return tris, skipped, poly_ids[owner]


def _as_index(ctx: _Ctx, values: np.ndarray, what: str) -> np.ndarray:
    """Integer-valued floats (ASCII data parsed as numbers) to int64, refusing fractions."""
    if values.dtype.kind == "f":
        frac = ~np.isfinite(values) | (values != np.floor(values))
        if frac.any():
            raise ctx.bad(f"{what} {_short(repr(float(values[int(np.argmax(frac))])))} is not a whole number")
        values = np.clip(values, -(2.0 ** 62), 2.0 ** 62)
    return values.astype(np.int64)


# ----------------------------------------------------------------------------- PLY
#: the one table of PLY property types (meshes and point clouds): PLY name -> NumPy code
PLY_TYPES = _PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
    "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
    "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
    "float": "f4", "float32": "f4", "double": "f8", "float64": "f8",
    "int64": "i8", "uint64": "u8",
}
_STRUCT = {"i1": "b", "u1": "B", "i2": "h", "u2": "H", "i4": "i", "u4": "I", "i8": "q", "u8": "Q"}
_FACE_LISTS = ("vertex_indices", "vertex_index")
_COLORS = ("red", "green", "blue")
_HEADER_MAX = 1 << 20


@dataclass
class _Prop:
    name: str
    type: str                   # numpy code of the value (of the items, for a list)
    count_type: str | None = None  # numpy code of a list's count; None for a scalar


@dataclass
class _Elem:
    name: str
    count: int
    props: list[_Prop]

    @property
    def what(self) -> tuple[str, str]:
        return {"vertex": ("vertex", "vertices"), "face": ("face", "faces")}.get(
            self.name, (f"{self.name!r} element", f"{self.name!r} elements"))


def _ply_header(ctx: _Ctx, head: bytes) -> tuple[str, list[_Elem], int]:
    if not re.match(rb"ply[ \t]*(\r\n|\n|\r)", head):
        raise ctx.bad("it does not start with a 'ply' line")
    m = re.search(rb"(?m)^[ \t]*end_header[ \t]*(\r\n|\n|\r|\Z)", head)
    if m is None:
        within = "" if len(head) < _HEADER_MAX else f" in its first {_HEADER_MAX >> 20} MB"
        raise ctx.bad(f"no 'end_header' line{within}: the header is truncated or corrupt")
    fmt = None
    elems: list[_Elem] = []
    for raw in head[:m.start()].decode("latin-1").splitlines()[1:]:
        parts = raw.split()
        if not parts or parts[0] in ("comment", "obj_info"):
            continue
        key = parts[0]
        if key == "format":
            if len(parts) != 3 or parts[1] not in ("ascii", "binary_little_endian", "binary_big_endian"):
                raise ctx.bad(f"unknown format line {_short(raw.strip(), 40)}")
            fmt = parts[1]
        elif key == "element":
            if len(parts) != 3 or not parts[2].isdigit():
                raise ctx.bad(f"bad element line {_short(raw.strip(), 40)}")
            elems.append(_Elem(parts[1], int(parts[2]), []))
        elif key == "property":
            if not elems:
                raise ctx.bad("a property comes before any element")
            if len(parts) == 5 and parts[1] == "list":
                ct, it = _PLY_TYPES.get(parts[2]), _PLY_TYPES.get(parts[3])
                if ct is None or it is None or ct[0] == "f":
                    raise ctx.bad(f"bad list property {_short(raw.strip(), 40)}")
                elems[-1].props.append(_Prop(parts[4], it, ct))
            elif len(parts) == 3 and parts[1] in _PLY_TYPES:
                elems[-1].props.append(_Prop(parts[2], _PLY_TYPES[parts[1]]))
            else:
                raise ctx.bad(f"bad property line {_short(raw.strip(), 40)}")
        else:
            raise ctx.bad(f"unknown header line {_short(raw.strip(), 40)}")
    if fmt is None:
        raise ctx.bad("the header has no 'format' line")
    names = [e.name for e in elems]
    for e in elems:
        if names.count(e.name) > 1:
            raise ctx.bad(f"the header declares the element {e.name!r} twice")
        props = [p.name for p in e.props]
        for p in props:
            if props.count(p) > 1:
                raise ctx.bad(f"the header declares the property {p!r} of {e.what[1]} twice")
    return fmt, elems, m.end()


def _ply_check_sizes(ctx: _Ctx, fmt: str, elems: list[_Elem], offset: int) -> None:
    """Refuse declared counts the file is too small to hold (each value takes at least its
    size in binary, at least one character and a separator in ASCII)."""
    room = ctx.size - offset
    need = 0
    for i, e in enumerate(elems):
        if fmt == "ascii":
            per = 2 * len(e.props)
        else:
            per = sum(np.dtype(p.count_type or p.type).itemsize for p in e.props)
        need += e.count * per
        if need > room:
            if e.count * per > room or i == 0:
                declared = _plural(e.count, *e.what)
            else:
                parts = [_plural(x.count, *x.what) for x in elems[:i + 1] if x.count]
                declared = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
            raise ctx.too_many(declared)


class _BinFile:
    """Reads byte ranges of a file, never past its end (a short file is a clear error)."""

    def __init__(self, fh, ctx: _Ctx):
        self.fh, self.ctx = fh, ctx

    def read(self, pos: int, n: int, e: _Elem) -> bytes:
        if pos + n > self.ctx.size:
            raise self.ctx.error(f"the file ends inside its {e.what[1]} ({e.count:,} declared); "
                                 "it is truncated")
        self.fh.seek(pos)
        data = self.fh.read(n)
        if len(data) != n:
            raise self.ctx.error(f"the file ends inside its {e.what[1]}; it is truncated")
        return data


def _ply_binary_lists(f: _BinFile, e: _Elem, pos: int, end: str, want) -> tuple[dict, int]:
    """An element with list properties: one block read when every record has the counts of
    the first (the usual case: all triangles), else a record-by-record walk."""
    ctx = f.ctx
    out: dict = {}
    if e.count == 0:
        return out, pos
    # the first record gives the counts to try
    q = pos
    first_counts = []
    for p in e.props:
        if p.count_type is None:
            q += np.dtype(p.type).itemsize
            continue
        cs = np.dtype(p.count_type).itemsize
        c = int(np.frombuffer(f.read(q, cs, e), end + p.count_type)[0])
        if c < 0:
            raise ctx.bad(f"the first {e.what[0]} has a list of {c} items")
        first_counts.append(c)
        q += cs + c * np.dtype(p.type).itemsize
    rec = q - pos
    if e.count * rec <= ctx.size - pos:
        fields = []
        li = 0
        for i, p in enumerate(e.props):
            if p.count_type is None:
                fields.append((f"s{i}", end + p.type))
            else:
                fields.append((f"n{i}", end + p.count_type))
                if first_counts[li]:
                    fields.append((f"l{i}", end + p.type, (first_counts[li],)))
                li += 1
        dt = np.dtype(fields)
        arr = np.frombuffer(f.read(pos, e.count * rec, e), dt)
        li = 0
        same = True
        for i, p in enumerate(e.props):
            if p.count_type is not None:
                same &= bool((arr[f"n{i}"] == first_counts[li]).all())
                li += 1
        if same:
            li = 0
            for i, p in enumerate(e.props):
                if p.count_type is None:
                    if p.name in want:
                        out[p.name] = arr[f"s{i}"]
                else:
                    c = first_counts[li]
                    li += 1
                    if p.name in want:
                        items = arr[f"l{i}"].reshape(-1) if c else np.empty(0, end + p.type)
                        out[p.name] = (items, np.full(e.count, c, np.int64))
            return out, pos + e.count * rec
    return _ply_binary_walk(f, e, pos, end, want)


def _ply_binary_walk(f: _BinFile, e: _Elem, pos: int, end: str, want) -> tuple[dict, int]:
    """Record by record (lists of varying length): positions first, values gathered after."""
    ctx = f.ctx
    limit = ctx.size
    buf = bytearray()
    base = pos

    def ensure(upto: int) -> None:
        if upto > limit:
            raise ctx.error(f"the file ends inside its {e.what[1]} ({e.count:,} declared); it is truncated")
        have = base + len(buf)
        if upto > have:
            n = min(max(upto - have, 1 << 20), limit - have)
            buf.extend(f.read(have, n, e))

    layout = []
    for p in e.props:
        if p.count_type is None:
            layout.append((False, np.dtype(p.type).itemsize, None, 0, p.name))
        else:
            cs = np.dtype(p.count_type).itemsize
            layout.append((True, cs, struct.Struct(("<" if end == "<" else ">") + _STRUCT[p.count_type]),
                           np.dtype(p.type).itemsize, p.name))
    scal_pos: dict[str, list[int]] = {p.name: [] for p in e.props if p.count_type is None and p.name in want}
    list_pos: dict[str, tuple[list[int], list[int]]] = {
        p.name: ([], []) for p in e.props if p.count_type is not None and p.name in want}
    q = pos
    for k in range(e.count):
        for is_list, size, st, isz, name in layout:
            if not is_list:
                if name in scal_pos:
                    scal_pos[name].append(q)
                q += size
                continue
            ensure(q + size)
            c = st.unpack_from(buf, q - base)[0]
            if c < 0:
                raise ctx.bad(f"{e.what[0]} {k + 1:,} has a list of {c} items")
            q += size
            if name in list_pos:
                list_pos[name][0].append(q)
                list_pos[name][1].append(c)
            q += c * isz
            if q > limit:
                ensure(q)
    ensure(q)
    raw = np.frombuffer(bytes(buf), np.uint8)
    types = {p.name: p.type for p in e.props}

    def take(positions: np.ndarray, code: str) -> np.ndarray:
        isz = np.dtype(code).itemsize
        if len(positions) == 0:
            return np.empty(0, end + code)
        idx = (positions - base)[:, None] + np.arange(isz)
        return np.ascontiguousarray(raw[idx]).view(end + code).reshape(-1)

    out: dict = {}
    for name, ps in scal_pos.items():
        out[name] = take(np.asarray(ps, np.int64), types[name])
    for name, (starts, counts) in list_pos.items():
        isz = np.dtype(types[name]).itemsize
        s = np.asarray(starts, np.int64)
        c = np.asarray(counts, np.int64)
        first = np.cumsum(c) - c
        item_pos = np.repeat(s, c) + isz * (np.arange(int(c.sum())) - np.repeat(first, c))
        out[name] = (take(item_pos, types[name]), c)
    return out, q


def _ply_binary(ctx: _Ctx, elems: list[_Elem], offset: int, end: str, wants: dict) -> dict:
    out: dict = {}
    pos = offset
    with open(ctx.path, "rb") as fh:
        f = _BinFile(fh, ctx)
        for e in elems:
            want = wants.get(e.name, ())
            if any(p.count_type for p in e.props):
                out[e.name], pos = _ply_binary_lists(f, e, pos, end, want)
                continue
            dt = np.dtype([(f"s{i}", end + p.type) for i, p in enumerate(e.props)])
            n = e.count * dt.itemsize
            if not any(p.name in want for p in e.props):
                if pos + n > ctx.size:
                    raise ctx.error(f"the file ends inside its {e.what[1]} ({e.count:,} declared); "
                                    "it is truncated")
                pos += n
                continue
            arr = np.frombuffer(f.read(pos, n, e), dt)
            out[e.name] = {p.name: arr[f"s{i}"] for i, p in enumerate(e.props) if p.name in want}
            pos += n
    return out


def _ply_ascii(ctx: _Ctx, elems: list[_Elem], offset: int, wants: dict) -> dict:
    body = ctx.read_text(offset)
    a = np.frombuffer(body, np.uint8)
    ws = _WS[a]
    n_tokens = int((~ws[:1]).sum()) + int((~ws[1:] & ws[:-1]).sum()) if len(a) else 0
    vals = _numbers(body, n_tokens, np.float64)
    if vals is None:
        found = _first_bad_token(body, float)
        what = f"value {found[0] + 1:,} of the data, {_short(found[1])}," if found else "a value"
        raise ctx.bad(f"{what} is not a number")
    out: dict = {}
    p = 0
    nvals = len(vals)
    for e in elems:
        want = wants.get(e.name, ())
        res: dict = {}
        if not any(x.count_type for x in e.props):
            n = e.count * len(e.props)
            if p + n > nvals:
                got = (nvals - p) // max(1, len(e.props))
                raise ctx.ends_early(got, e.count, *e.what)
            block = vals[p:p + n].reshape(e.count, len(e.props))
            for i, x in enumerate(e.props):
                if x.name in want:
                    res[x.name] = block[:, i]
            p += n
            out[e.name] = res
            continue
        if e.count == 0:
            out[e.name] = res
            continue
        # the first record gives the counts to try
        q = p
        first_counts = []
        for x in e.props:
            if x.count_type is None:
                q += 1
                continue
            if q >= nvals:
                raise ctx.ends_early(0, e.count, *e.what)
            c = vals[q]
            if not (np.isfinite(c) and c == int(c) and 0 <= c <= nvals):
                raise ctx.bad(f"the first {e.what[0]} has a list of {_short(repr(float(c)))} items")
            first_counts.append(int(c))
            q += 1 + int(c)
        rec = q - p
        done = False
        if p + e.count * rec <= nvals:
            block = vals[p:p + e.count * rec].reshape(e.count, rec)
            col = 0
            li = 0
            cols = {}
            same = True
            for x in e.props:
                if x.count_type is None:
                    cols[x.name] = (col, None)
                    col += 1
                else:
                    c = first_counts[li]
                    li += 1
                    same &= bool((block[:, col] == c).all())
                    cols[x.name] = (col + 1, c)
                    col += 1 + c
            if same:
                for x in e.props:
                    if x.name not in want:
                        continue
                    c0, c = cols[x.name]
                    if c is None:
                        res[x.name] = block[:, c0]
                    else:
                        res[x.name] = (block[:, c0:c0 + c].reshape(-1), np.full(e.count, c, np.int64))
                p += e.count * rec
                done = True
        if not done:
            res, p = _ply_ascii_walk(ctx, vals, p, e, want)
        out[e.name] = res
    return out


def _ply_ascii_walk(ctx: _Ctx, vals: np.ndarray, p: int, e: _Elem, want) -> tuple[dict, int]:
    nvals = len(vals)
    scal: dict[str, list[int]] = {x.name: [] for x in e.props if x.count_type is None and x.name in want}
    lists: dict[str, tuple[list[int], list[int]]] = {
        x.name: ([], []) for x in e.props if x.count_type is not None and x.name in want}
    layout = [(x.count_type is not None, x.name) for x in e.props]
    q = p
    for k in range(e.count):
        for is_list, name in layout:
            if q >= nvals:
                raise ctx.ends_early(k, e.count, *e.what)
            if not is_list:
                if name in scal:
                    scal[name].append(q)
                q += 1
                continue
            c = vals[q]
            if not (np.isfinite(c) and c == int(c) and 0 <= c <= nvals):
                raise ctx.bad(f"{e.what[0]} {k + 1:,} has a list of {_short(repr(float(c)))} items")
            c = int(c)
            q += 1
            if name in lists:
                lists[name][0].append(q)
                lists[name][1].append(c)
            q += c
        if q > nvals:
            raise ctx.ends_early(k, e.count, *e.what)
    res: dict = {name: vals[np.asarray(ps, np.int64)] for name, ps in scal.items()}
    for name, (starts, counts) in lists.items():
        c = np.asarray(counts, np.int64)
        res[name] = (_gather(vals, np.asarray(starts, np.int64), c), c)
    return res, q


def read_ply_elements(path, wants, *, name: str | None = None, noun: str = "mesh",
                      error: type[InputError] | None = None, faces: bool = True) -> tuple[dict, dict, _Ctx]:
    """The one PLY parser (meshes and point clouds, :mod:`app.io.ply_points_io`): the header
    checked against the file size, then the properties named in ``wants`` (``{element:
    property names}``; a ``callable(elems)`` may build it from the header) of every element.

    Returns ``(elements by name, {element: {property: values or (items, counts)}}, ctx)``.
    Vertices must have scalar ``x``, ``y``, ``z``; with ``faces``, a ``face`` element must
    hold a ``vertex_indices`` (or ``vertex_index``) list. Errors are ``error`` (default
    :class:`MeshIOError`) with one line that says the file is not a readable PLY ``noun``.
    """
    ctx = _Ctx(path, "PLY", name, noun=noun, error=error)
    with open(ctx.path, "rb") as fh:
        head = fh.read(_HEADER_MAX)
    fmt, elems, offset = _ply_header(ctx, head)
    _ply_check_sizes(ctx, fmt, elems, offset)
    by_name = {e.name: e for e in elems}
    if "vertex" not in by_name:
        raise ctx.bad("the header declares no 'vertex' element")
    vprops = {p.name: p for p in by_name["vertex"].props}
    for axis in "xyz":
        if axis not in vprops or vprops[axis].count_type is not None:
            raise ctx.bad(f"its vertices have no '{axis}' property")
    if faces and "face" in by_name and not any(p.count_type is not None and p.name in _FACE_LISTS
                                               for p in by_name["face"].props):
        raise ctx.bad("its faces have no 'vertex_indices' list")
    wants = wants(by_name) if callable(wants) else wants
    if fmt == "ascii":
        data = _ply_ascii(ctx, elems, offset, wants)
    else:
        data = _ply_binary(ctx, elems, offset, "<" if fmt == "binary_little_endian" else ">", wants)
    return by_name, data, ctx


def read_ply(path, name: str | None = None, *, colors: bool = False) -> MeshFile:
    """Read a PLY file: ascii, binary_little_endian or binary_big_endian; any vertex layout
    (x, y, z of any numeric type); faces from a ``vertex_indices`` (or ``vertex_index``) list
    of any count and index type; every other element and property skipped. With ``colors``,
    per-face ``red``/``green``/``blue`` come back as :attr:`MeshFile.face_colors`."""
    flist = None

    def wants(by_name):
        nonlocal flist
        out = {"vertex": {"x", "y", "z"}}
        if "face" in by_name:
            flist = next(p.name for p in by_name["face"].props if p.count_type is not None and p.name in _FACE_LISTS)
            out["face"] = {flist, *(_COLORS if colors else ())}
        return out

    by_name, data, ctx = read_ply_elements(path, wants, name=name)
    vert, face = by_name["vertex"], by_name.get("face")
    v = data["vertex"]
    with np.errstate(invalid="ignore"):          # signalling NaNs: refused by read_mesh
        vertices = np.stack([np.asarray(v[a], np.float64) for a in "xyz"], axis=1) if vert.count else \
            np.empty((0, 3), np.float64)
    if face is None or face.count == 0:
        return MeshFile(vertices, np.empty((0, 3), np.int64))
    flat, counts = data["face"][flist]
    flat = _as_index(ctx, np.asarray(flat), "vertex index")
    _check_range(ctx, flat, counts, len(vertices))
    tris, skipped, owner = _polygons(flat, counts)
    fc = None
    if colors and all(c in data["face"] for c in _COLORS):
        rgb = np.stack([np.asarray(data["face"][c]) for c in _COLORS], axis=1)
        if rgb.dtype.kind == "f" and rgb.size and np.nanmax(rgb) <= 1.0:
            rgb = np.rint(rgb * 255)
        fc = np.clip(np.nan_to_num(rgb), 0, 255).astype(np.uint8)[owner]
    return MeshFile(vertices, tris, skipped, fc)


# ----------------------------------------------------------------------------- OBJ
def read_obj(path, name: str | None = None) -> MeshFile:
    """Read the ``v`` and ``f`` records of a Wavefront OBJ file (every other record is
    ignored). Face corners may be ``a``, ``a/b``, ``a//c`` or ``a/b/c``; negative indices
    count back from the last vertex read so far."""
    ctx = _Ctx(path, "OBJ", name)
    text, starts, ends = _lines(ctx.read_text(), comments=True)
    a = np.frombuffer(text, np.uint8)
    if len(starts) == 0:
        raise ctx.bad("it has no vertex ('v') or face ('f') lines")
    c0 = a[starts]
    c1 = a[starts + 1]             # every line ends in LF, so this is the LF at worst
    is_v = (c0 == ord("v")) & _WS[c1]
    is_f = (c0 == ord("f")) & _WS[c1]
    nv, nf = int(is_v.sum()), int(is_f.sum())
    if nv == 0 and nf == 0:
        raise ctx.bad("it has no vertex ('v') or face ('f') lines")
    lengths = ends - starts + 1
    blanked = a.copy()
    blanked[starts] = 32          # the record letter becomes a blank

    vertices = np.empty((0, 3), np.float64)
    if nv:
        block = blanked[np.repeat(is_v, lengths)].tobytes()
        per = _tokens_per_line(block, nv)
        if per.min() < 3:
            i = int(np.argmin(per))
            raise ctx.bad(f"vertex {i + 1:,} has {per[i]} coordinate{'s' if per[i] != 1 else ''}, not 3")
        vals = _numbers(block, int(per.sum()), np.float64)
        if vals is None:
            found = _first_bad_token(block, float)
            where = f"vertex {_line_of_token(per, found[0]) + 1:,} has {_short(found[1])}" if found else \
                "a vertex has a coordinate"
            raise ctx.bad(f"{where}, which is not a number")
        if (per == 3).all():
            vertices = vals.reshape(nv, 3)
        else:
            vertices = vals[(np.cumsum(per) - per)[:, None] + np.arange(3)]
    if nf == 0:
        return MeshFile(vertices, np.empty((0, 3), np.int64))
    block = blanked[np.repeat(is_f, lengths)].tobytes()
    if b"/" in block:
        block = re.sub(rb"/[^\s]*", b"", block)
    per = _tokens_per_line(block, nf)
    vals = _numbers(block, int(per.sum()), np.int64)
    if vals is None:
        found = _first_bad_token(block, int)
        where = f"face {_line_of_token(per, found[0]) + 1:,} has {_short(found[1])}" if found else \
            "a face has a corner"
        raise ctx.bad(f"{where}, which is not a vertex index")
    if (vals == 0).any():
        k = int(np.argmax(vals == 0))
        raise ctx.bad(f"face {_line_of_token(per, k) + 1:,} uses vertex index 0 (OBJ indices start at 1)")
    if (vals < 0).any():
        before = np.cumsum(is_v)[is_f]           # vertices read before each face line
        flat = np.where(vals > 0, vals - 1, np.repeat(before, per) + vals)
    else:
        flat = vals - 1
    _check_range(ctx, flat, per, nv, shown=vals)
    tris, skipped, _ = _polygons(flat, per)
    return MeshFile(vertices, tris, skipped)


# ----------------------------------------------------------------------------- OFF
_OFF_KEY = re.compile(rb"(ST)?(C)?(N)?(C)?(4)?(n)?OFF")


def read_off(path, name: str | None = None) -> MeshFile:
    """Read an OFF file (also COFF, NOFF, CNOFF, STOFF headers; the counts may follow the
    keyword on its line; ``#`` comments; per-vertex extras and per-face colours ignored)."""
    ctx = _Ctx(path, "OFF", name)
    text, starts, ends = _lines(ctx.read_text(), comments=True)
    n_lines = len(starts)
    if n_lines == 0:
        raise ctx.bad("it holds no data")
    head = text[starts[0]:ends[0]].split()
    key = _OFF_KEY.fullmatch(head[0])
    if key is None:
        raise ctx.bad("it does not start with an OFF header line")
    if key.group(5) or key.group(6):
        raise ctx.bad(f"{head[0].decode('latin-1')} files (not 3-D) are not supported")
    counts = head[1:]
    line = 1
    if not counts:
        if n_lines < 2:
            raise ctx.bad("the line with the vertex and face counts is missing")
        counts = text[starts[1]:ends[1]].split()
        line = 2
    if len(counts) < 2 or not all(t.isdigit() for t in counts[:2]):
        raise ctx.bad("the line after the header does not give the vertex and face counts")
    nv, nf = int(counts[0]), int(counts[1])
    if nv * 6 > ctx.size:           # "0 0 0\n" at least
        raise ctx.too_many(_plural(nv, "vertex", "vertices"))
    if nv * 6 + nf * 2 > ctx.size:  # "0\n" at least
        raise ctx.too_many(f"{_plural(nv, 'vertex', 'vertices')} and {_plural(nf, 'face')}")
    if line + nv > n_lines:
        raise ctx.ends_early(n_lines - line, nv, "vertex", "vertices")
    vertices = np.empty((0, 3), np.float64)
    extra = None  # (the first longer vertex line where a plain OFF's vertex lines differ in length)
    if nv:
        block = text[starts[line]:ends[line + nv - 1] + 1]
        per = _tokens_per_line(block, nv)
        if per.min() < 3:
            i = int(np.argmin(per))
            raise ctx.bad(f"vertex {i + 1:,} has {per[i]} number{'s' if per[i] != 1 else ''}, not 3")
        if not any(key.group(g) for g in (1, 2, 3, 4)) and per.max() > 3 and per.min() < per.max():
            # (lines of unequal length: not per-vertex extras such as a colour on every line)
            i = int(np.argmax(per > 3))
            extra = ctx.bad(f"vertex {i + 1:,} has {per[i]} numbers, 3 expected")
        vals = _numbers(block, int(per.sum()), np.float64)
        if vals is None:
            found = _first_bad_token(block, float)
            where = f"vertex {_line_of_token(per, found[0]) + 1:,} has {_short(found[1])}" if found else \
                "a vertex has a value"
            raise ctx.bad(f"{where}, which is not a number")
        vertices = vals.reshape(nv, 3) if (per == 3).all() else \
            vals[(np.cumsum(per) - per)[:, None] + np.arange(3)]
    line += nv
    if line + nf > n_lines:
        # (a plain OFF's vertex line with extra numbers, e.g. two vertices on one line: the file is short of
        # lines because a vertex line holds more than one vertex, not because it is truncated)
        raise extra or ctx.ends_early(n_lines - line, nf, "face")
    if nf == 0:
        return MeshFile(vertices, np.empty((0, 3), np.int64))
    block = text[starts[line]:ends[line + nf - 1] + 1]
    per = _tokens_per_line(block, nf)
    total = int(per.sum())
    vals = _numbers(block, total, np.int64)
    if vals is None:                 # face colours may be fractions
        vals = _numbers(block, total, np.float64)
        if vals is None:
            found = _first_bad_token(block, float)
            where = f"face {_line_of_token(per, found[0]) + 1:,} has {_short(found[1])}" if found else \
                "a face has a value"
            raise ctx.bad(f"{where}, which is not a number")
    first = np.cumsum(per) - per
    sizes = _as_index(ctx, vals[first], "face size")
    short = (sizes < 0) | (sizes > per - 1)
    if short.any():
        i = int(np.argmax(short))
        raise ctx.bad(f"face {i + 1:,} declares {sizes[i]:,} vertices but its line holds "
                      f"{per[i] - 1} number{'s' if per[i] != 2 else ''} after that")
    if (sizes == 3).all() and (per == 4).all():
        flat = vals.reshape(nf, 4)[:, 1:].reshape(-1)
    else:
        flat = _gather(vals, first + 1, sizes)
    flat = _as_index(ctx, flat, "vertex index")
    _check_range(ctx, flat, sizes, nv)
    tris, skipped, _ = _polygons(flat, sizes)
    return MeshFile(vertices, tris, skipped)


# ----------------------------------------------------------------------------- STL
_STL_RECORD = np.dtype([("n", "<f4", (3,)), ("v", "<f4", (9,)), ("attr", "<u2")])
_STL_WORDS = (b"solid", b"endsolid", b"facet", b"endfacet", b"outer", b"endloop", b"vertex")


def _weld(corners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge equal corner coordinates; vertices in order of first appearance."""
    c = np.ascontiguousarray(corners + 0.0, np.float64)   # -0.0 and 0.0 are one vertex
    if len(c) == 0:
        return np.empty((0, 3), np.float64), np.empty((0, 3), np.int64)
    keys = c.view(np.dtype((np.void, 24))).reshape(-1)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return c[first[order]], rank[inverse.reshape(-1)].reshape(-1, 3).astype(np.int64)


def _stl_triangles(ctx: _Ctx, corners: np.ndarray) -> MeshFile:
    n = len(corners) // 3
    bad = ~np.isfinite(corners.reshape(n, 9)).all(axis=1)
    if bad.any():
        k = int(bad.sum())
        raise ctx.error(f"{k} of {n} triangles have coordinates that are not finite numbers (NaN or "
                        "infinity); fix or remove them")
    v, f = _weld(corners)
    return MeshFile(v, f)


def _starts_with(a: np.ndarray, starts: np.ndarray, word: bytes) -> np.ndarray:
    """Which lines (given their starts) begin with ``word`` followed by a blank or LF."""
    ok = np.ones(len(starts), bool)
    last = len(a) - 1
    for k, ch in enumerate(word):
        ok &= a[np.minimum(starts + k, last)] == ch
    return ok & _WS[a[np.minimum(starts + len(word), last)]]


def read_stl(path, name: str | None = None) -> MeshFile:
    """Read a binary STL (the triangle count must match the file size exactly) or an ASCII
    one; equal corners are welded into one vertex, in order of first appearance."""
    ctx = _Ctx(path, "STL", name)
    with open(ctx.path, "rb") as fh:
        head = fh.read(1024)
    n = int(np.frombuffer(head[80:84], "<u4")[0]) if len(head) >= 84 else -1
    if n >= 0 and 84 + 50 * n == ctx.size:
        with open(ctx.path, "rb") as fh:
            fh.seek(84)
            data = fh.read(50 * n)
        if len(data) != 50 * n:
            raise ctx.error("the file is shorter than it was a moment ago; it is being written")
        rec = np.frombuffer(data, _STL_RECORD)
        with np.errstate(invalid="ignore"):      # a signalling NaN is refused just after
            corners = rec["v"].reshape(-1, 3).astype(np.float64)
        return _stl_triangles(ctx, corners)
    if head.lstrip()[:5].lower() == b"solid" and b"\0" not in head:
        return _read_stl_ascii(ctx)
    if n < 0:
        raise ctx.bad(f"it is {ctx.size} bytes: too short for a binary STL and it does not start with 'solid'")
    raise ctx.error(f"as a binary STL it declares {n:,} triangles ({84 + 50 * n:,} bytes) but the file is "
                    f"{ctx.size:,} bytes, and it does not start with 'solid' like an ASCII STL; it is "
                    "truncated or corrupt")


def _read_stl_ascii(ctx: _Ctx) -> MeshFile:
    text, starts, ends = _lines(ctx.read_text().lower(), comments=False)
    a = np.frombuffer(text, np.uint8)
    kinds = {w: _starts_with(a, starts, w) for w in _STL_WORDS}
    known = np.zeros(len(starts), bool)
    for m in kinds.values():
        known |= m
    if not known.all():
        i = int(np.argmin(known))
        raise ctx.bad(f"unexpected line {_short(text[starts[i]:ends[i]], 32)}")
    if not kinds[b"endsolid"][-1]:
        raise ctx.error("the ASCII STL ends without 'endsolid'; it is truncated")
    facets = np.flatnonzero(kinds[b"facet"])
    corners = np.flatnonzero(kinds[b"vertex"])
    if len(facets) == 0:
        return MeshFile(np.empty((0, 3), np.float64), np.empty((0, 3), np.int64))
    per_facet = np.diff(np.searchsorted(corners, np.r_[facets, len(starts)]))
    if corners[0] < facets[0] or (per_facet != 3).any():
        i = int(np.argmax(per_facet != 3))
        raise ctx.bad(f"facet {i + 1:,} has {per_facet[i]} vertices, not 3")
    lengths = ends - starts + 1
    blanked = a.copy()
    for k in range(6):
        blanked[starts[corners] + k] = 32        # "vertex" becomes blanks
    block = blanked[np.repeat(kinds[b"vertex"], lengths)].tobytes()
    per = _tokens_per_line(block, len(corners))
    if (per != 3).any():
        i = int(np.argmax(per != 3))
        raise ctx.bad(f"a vertex line of facet {i // 3 + 1:,} has {per[i]} numbers, not 3")
    vals = _numbers(block, 3 * len(corners), np.float64)
    if vals is None:
        found = _first_bad_token(block, float)
        where = f"facet {found[0] // 9 + 1:,} has {_short(found[1])}" if found else "a vertex has a value"
        raise ctx.bad(f"{where}, which is not a number")
    return _stl_triangles(ctx, vals.reshape(-1, 3))


#: Our reader for each extension.
READERS = {".ply": read_ply, ".obj": read_obj, ".off": read_off, ".stl": read_stl}
