"""One PLY parser (issue 19): point clouds and meshes are read by the same parser with the same
type table (``app.io.mesh_formats.read_ply_elements`` / ``PLY_TYPES``)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from app.io import mesh_formats, ply_points_io
from app.io.mesh_formats import PLY_TYPES, read_ply
from app.io.ply_points_io import PointCloudIOError, read_points_ply, write_points_ply


def test_the_point_reader_has_no_parser_of_its_own():
    src = inspect.getsource(ply_points_io)
    assert "read_ply_elements" in src
    for own in ("end_header\")", "_PLY_TYPES", "np.fromfile", "format binary_little_endian\" "):
        assert own not in src, own
    assert "int64" in PLY_TYPES and mesh_formats._PLY_TYPES is PLY_TYPES


@pytest.mark.parametrize("fmt", ["binary_big_endian", "ascii"])
def test_points_of_any_type_and_a_mesh_file_read_as_points(tmp_path, fmt):
    # a mesh (faces after the vertices), big-endian doubles and an int64 quality: the mesh
    # parser reads it, and the point reader through it
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float64)
    head = (f"ply\nformat {fmt} 1.0\nelement vertex 3\nproperty double x\nproperty double y\nproperty double z\n"
            "property int64 quality\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n")
    if fmt == "ascii":
        body = "".join(f"{a} {b} {c} {k}\n" for k, (a, b, c) in enumerate(v)) + "3 0 1 2\n"
        data = head.encode() + body.encode()
    else:
        rec = np.zeros(3, [("x", ">f8"), ("y", ">f8"), ("z", ">f8"), ("q", ">i8")])
        rec["x"], rec["y"], rec["z"], rec["q"] = v[:, 0], v[:, 1], v[:, 2], [0, 1, 2]
        data = head.encode() + rec.tobytes() + bytes([3]) + np.array([0, 1, 2], ">i4").tobytes()
    (tmp_path / "m.ply").write_bytes(data)
    pts = read_points_ply(tmp_path / "m.ply")
    assert pts["points"].tolist() == v.tolist() and pts["confidence"].tolist() == [0, 1, 2]
    assert read_ply(tmp_path / "m.ply").faces.tolist() == [[0, 1, 2]]


def test_point_errors_are_the_point_readers(tmp_path):
    write_points_ply(tmp_path / "c.ply", np.zeros((5, 3)))
    data = (tmp_path / "c.ply").read_bytes()
    (tmp_path / "t.ply").write_bytes(data[:-7])
    with pytest.raises(PointCloudIOError, match="t.ply: .*truncated") as e:
        read_points_ply(tmp_path / "t.ply")
    assert "\n" not in str(e.value)
    (tmp_path / "h.ply").write_bytes(b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n0\n")
    with pytest.raises(PointCloudIOError, match="not a readable PLY point cloud .*'y'"):
        read_points_ply(tmp_path / "h.ply")
