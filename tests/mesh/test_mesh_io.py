"""Mesh file I/O: reading anything pymeshlab reads with clear errors, coloured PLY, PSB
.seg labels, one mesh per segment, atomic writes, and the bundled samples."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.io import mesh_io
from app.io.mesh_io import (
    MeshIOError,
    read_face_colors,
    read_mesh,
    read_seg,
    write_colored_ply,
    write_mesh,
    write_seg,
    write_segments,
)
from gpu_kernels.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "resources" / "samples"


def tetra():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    return v, f


def two_tetras():
    """Two tetrahedra sharing no vertex, labelled 0 and 1."""
    v, f = tetra()
    v2 = np.vstack([v, v + [3, 0, 0]])
    f2 = np.vstack([f, f + 4])
    return v2, f2, np.array([0, 0, 0, 0, 1, 1, 1, 1])


def leftovers(d: Path) -> list[str]:
    """Temporary files/folders an interrupted atomic write would leave."""
    return [p.name for p in d.rglob("*") if p.name.startswith(".") or p.name.endswith(".part")]


# ----------------------------------------------------------------------------- round trips
def test_coloured_ply_round_trip_through_pymeshlab_and_pyvista(tmp_path):
    v, f = read_mesh(SAMPLES / "dumbbell.ply")
    assert v.dtype == np.float64 and f.dtype == np.int64 and v.shape[1] == f.shape[1] == 3
    colors = np.random.default_rng(1).integers(0, 256, (len(f), 3)).astype(np.uint8)
    out = write_colored_ply(tmp_path / "c.ply", v, f, colors)
    v2, f2 = read_mesh(out)
    np.testing.assert_array_equal(v2, v)  # stored as double: exact
    np.testing.assert_array_equal(f2, f)
    np.testing.assert_array_equal(read_face_colors(out), colors)
    header = out.read_bytes()[:400].decode("latin-1")
    assert "format binary_little_endian 1.0" in header and "property uchar red" in header

    pv = pytest.importorskip("pyvista")
    m = pv.read(out)
    assert m.n_cells == len(f)
    np.testing.assert_array_equal(np.asarray(m.cell_data["RGB"]), colors)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("fmt", ["obj", "off", "stl", "ply"])
def test_plain_mesh_round_trip(tmp_path, fmt):
    v, f = tetra()
    out = write_mesh(tmp_path / f"t.{fmt}", v, f)
    v2, f2 = read_mesh(out)
    assert f2.shape == f.shape
    # same triangles (STL merges vertices, so compare coordinates per face)
    np.testing.assert_allclose(np.sort(v2[f2].reshape(-1, 3), axis=0), np.sort(v[f].reshape(-1, 3), axis=0),
                               atol=1e-6)


def test_quads_and_polygons_are_triangulated(tmp_path):
    p = tmp_path / "quad.obj"
    p.write_text("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nf 1 2 3 4\nf 1 2 5\n")
    v, f = read_mesh(p)
    assert f.shape == (3, 3) and len(v) == 5


def test_seg_round_trip_is_psb_format(tmp_path):
    labels = np.array([0, 2, 2, 1, 0])
    out = write_seg(tmp_path / "l.seg", labels)
    assert out.read_text() == "0\n2\n2\n1\n0\n"
    np.testing.assert_array_equal(read_seg(out), labels)
    np.testing.assert_array_equal(read_seg(out, n_faces=5), labels)
    with pytest.raises(MeshIOError, match="5 labels for a mesh of 6 faces"):
        read_seg(out, n_faces=6)
    (tmp_path / "bad.seg").write_text("0\n1\nx\n")
    with pytest.raises(MeshIOError, match="one integer per line"):
        read_seg(tmp_path / "bad.seg")


def test_write_segments_one_mesh_per_segment(tmp_path):
    v, f, lab = two_tetras()
    lab = lab.copy()
    lab[:4] = 2  # ids need not be contiguous: files are named by label
    colors = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255]], np.uint8)
    files = write_segments(tmp_path / "parts", v, f, lab, colors=colors)
    assert [p.name for p in files] == ["segment_001.ply", "segment_002.ply"]
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == ["segment_001.ply", "segment_002.ply"]
    for p, k in zip(files, (1, 2), strict=True):
        sv, sf = read_mesh(p)
        assert sv.shape == (4, 3) and sf.shape == (4, 3)  # unused vertices removed
        np.testing.assert_array_equal(read_face_colors(p), np.tile(colors[k], (4, 1)))
    np.testing.assert_allclose(read_mesh(files[0])[0].min(axis=0), [3, 0, 0])

    # writing again replaces a folder of earlier segment files, in another format
    files = write_segments(tmp_path / "parts", v, f, lab, fmt="obj")
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == ["segment_001.obj", "segment_002.obj"]
    assert leftovers(tmp_path) == []


def test_write_segments_refuses_a_folder_with_other_files(tmp_path):
    v, f, lab = two_tetras()
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("keep me")
    with pytest.raises(MeshIOError, match="holds other files"):
        write_segments(d, v, f, lab)
    assert [p.name for p in d.iterdir()] == ["notes.txt"]
    (tmp_path / "afile").write_text("x")
    with pytest.raises(MeshIOError, match="a file has that name"):
        write_segments(tmp_path / "afile", v, f, lab)


# ----------------------------------------------------------------------------- bad input
def _ply_vertices_only(path: Path) -> Path:
    path.write_text("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                    "property float z\nend_header\n0 0 0\n1 0 0\n0 1 0\n")
    return path


def _binary_ply_with_nan(path: Path) -> Path:
    head = ("ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
            "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n")
    body = struct.pack("<9f", 0, 0, 0, float("nan"), 0, 0, 0, 1, 0) + struct.pack("<B3i", 3, 0, 1, 2)
    path.write_bytes(head.encode() + body)
    return path


def _w(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


NAN_PLY = ("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
           "element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\nnan 0 0\n0 1 0\n3 0 1 2\n")

BAD_INPUTS = {
    "missing": (lambda d: d / "nope.ply", "no such file"),
    "empty": (lambda d: _w(d / "empty.ply", b""), "the file is empty"),
    "text": (lambda d: _w(d / "notes.ply", "these are my notes\n"), "not a readable PLY mesh"),
    "text-obj": (lambda d: _w(d / "notes.obj", "hello\n"), "not a readable OBJ"),
    "point-cloud": (lambda d: _ply_vertices_only(d / "cloud.ply"), "point cloud"),
    "nan-ascii-ply": (lambda d: _w(d / "nan.ply", NAN_PLY), "not finite numbers"),
    "nan-binary-ply": (lambda d: _binary_ply_with_nan(d / "nanbin.ply"), "not finite numbers"),
    "nan-obj": (lambda d: _w(d / "nan.obj", "v 0 0 0\nv nan 0 0\nv 1 1 0\nf 1 2 3\n"), "not finite numbers"),
    "inf-off": (lambda d: _w(d / "inf.off", "OFF\n3 1 0\n0 0 0\ninf 0 0\n0 1 0\n3 0 1 2\n"), "not finite numbers"),
    "nan-binary-stl": (lambda d: _w(d / "nan.stl", mesh_io._stl_bytes(
        np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [np.nan, 0, 1]]), np.array([[0, 1, 2], [0, 1, 3]]))),
        "1 of 2 triangles have coordinates that are not finite"),
    "inf-ascii-stl": (lambda d: _w(d / "inf.stl", "solid s\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\n"
                                   "vertex 1 0 0\nvertex 0 -inf 0\nendloop\nendfacet\nendsolid s\n"),
                      "not finite numbers"),
    "no-extension": (lambda d: _w(d / "mesh", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n"), "no extension"),
    "folder": (lambda d: (d / "dir.ply").mkdir() or d / "dir.ply", "is a folder"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_gives_one_clear_line(tmp_path, case):
    make, expected = BAD_INPUTS[case]
    path = make(tmp_path)
    with pytest.raises(MeshIOError) as info:
        read_mesh(path)
    msg = str(info.value)
    assert isinstance(info.value, InputError)
    assert expected in msg
    assert "\n" not in msg and str(path.name) in msg


def test_nan_count_is_reported(tmp_path):
    p = tmp_path / "two-nan.obj"
    p.write_text("v 0 0 0\nv nan 0 0\nv 1 inf 0\nv 1 1 0\nf 1 2 3\nf 1 3 4\nf 1 2 4\n")
    with pytest.raises(MeshIOError, match="2 of 4 vertices have coordinates"):
        read_mesh(p)


# ----------------------------------------------------------------------------- writers validate first
def test_writers_validate_before_creating_files(tmp_path):
    v, f = tetra()
    cols = np.zeros((4, 3), np.uint8)
    bad_v = v.copy()
    bad_v[1, 0] = np.nan
    cases = [
        (lambda: write_colored_ply(tmp_path / "a.ply", bad_v, f, cols), "NaN"),
        (lambda: write_colored_ply(tmp_path / "a.ply", v, f, cols[:3]), "face colours"),
        (lambda: write_colored_ply(tmp_path / "a.ply", v, f + 10, cols), "do not exist"),
        (lambda: write_colored_ply(tmp_path / "no" / "a.ply", v, f, cols), "does not exist"),
        (lambda: write_seg(tmp_path / "a.seg", [0, 1, -1, 0]), "0 or more"),
        (lambda: write_seg(tmp_path / "a.seg", [0, 1], n_faces=4), "2 labels for 4 faces"),
        (lambda: write_mesh(tmp_path / "a.xyz", v, f), "cannot write"),
        (lambda: write_segments(tmp_path / "segs", v, f, [0, 1]), "2 labels for 4 faces"),
        (lambda: write_segments(tmp_path / "segs", v, f, [0, 0, 1, 1], fmt="3ds"), "cannot write"),
    ]
    for fn, match in cases:
        with pytest.raises(MeshIOError, match=match):
            fn()
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    v, f = tetra()

    def boom(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mesh_io, "_mesh_bytes", boom)
    with pytest.raises(OSError):
        write_segments(tmp_path / "segs", v, f, [0, 0, 1, 1])
    assert list(tmp_path.iterdir()) == []


def test_existing_file_is_replaced_only_when_complete(tmp_path):
    v, f = tetra()
    out = tmp_path / "x.seg"
    out.write_text("old\n")
    with pytest.raises(MeshIOError, match="integers"):
        write_seg(out, [0.5, 1])
    assert out.read_text() == "old\n"  # a refused write leaves the old file alone
    write_seg(out, [1, 0, 0, 1])
    assert out.read_text() == "1\n0\n0\n1\n"
    assert leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- samples and layering
@pytest.mark.parametrize("name", ["dumbbell", "creature", "table"])
def test_bundled_samples(name):
    p = SAMPLES / f"{name}.ply"
    assert p.stat().st_size < 500 * 1024
    warnings: list[str] = []
    v, f = read_mesh(p, warnings=warnings)
    assert 1000 <= len(f) <= 6000
    assert warnings == []
    # one closed, edge-manifold surface: every edge is shared by exactly two faces
    e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    assert (counts == 2).all()


def test_mesh_io_does_not_import_qt():
    code = ("import sys, app.io.mesh_io, app.commands.mesh_seg; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyvistaqt', 'pyqtgraph')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
