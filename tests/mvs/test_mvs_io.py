"""Scene readers (Middlebury, COLMAP text and binary, masks) against hand-made cameras; depth
map and point-cloud formats; clear one-line errors for bad inputs."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from app.io.depth_io import (
    DepthIOError,
    read_colmap_array,
    read_depth,
    read_pfm,
    write_colmap_array,
    write_depth,
)
from app.io.image_io import write_image
from app.io.ply_points_io import PointCloudIOError, read_points_ply, write_points_ply
from app.io.scene_io import (
    SceneReadError,
    qvec_to_rotmat,
    read_colmap,
    read_middlebury,
    read_scene,
    rotmat_to_qvec,
    write_colmap_text,
    write_middlebury_par,
)
from gpu_kernels.mvs.camera import look_at

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def _cams(n=3, w=40, h=30):
    out = []
    for k in range(n):
        a = 2 * np.pi * k / n
        out.append(look_at([2 * np.cos(a), 2 * np.sin(a), 0.7], [0, 0, 0], [0, 0, 1], focal=37.5 + k, width=w,
                           height=h))
    return out


def _images(folder: Path, names, w=40, h=30, seed=0):
    rng = np.random.default_rng(seed)
    for n in names:
        write_image(folder / n, rng.integers(0, 255, (h, w, 3), dtype=np.uint8))


# ------------------------------------------------------------------------------ Middlebury
def test_middlebury_reader_matches_hand_made_cameras(tmp_path):
    cams = _cams()
    names = [f"im{k}.png" for k in range(3)]
    _images(tmp_path, names)
    # a hand-written par file (count line, then name K R t), independent of the writer
    lines = ["3"]
    for n, c in zip(names, cams, strict=True):
        lines.append(n + " " + " ".join(repr(float(x)) for x in [*c.K.ravel(), *c.R.ravel(), *c.t]))
    (tmp_path / "s_par.txt").write_text("\n".join(lines) + "\n")
    sc = read_middlebury(tmp_path / "s_par.txt")
    assert sc.names == ["im0", "im1", "im2"]
    for c0, c1 in zip(cams, sc.cameras, strict=True):
        np.testing.assert_allclose(c1.P, c0.P, rtol=1e-12, atol=1e-12)
        assert (c1.width, c1.height) == (40, 30)
    assert sc.images[1].shape == (30, 40, 3)
    # the folder form finds the single par file; the writer round-trips
    write_middlebury_par(tmp_path / "t_par.txt", names, cams, count_line=False)
    with pytest.raises(SceneReadError, match="2 .*par.txt"):
        read_scene(tmp_path)
    sc2 = read_middlebury(tmp_path / "t_par.txt")
    np.testing.assert_allclose(sc2.cameras[2].K, cams[2].K)


def test_middlebury_bad_inputs(tmp_path):
    cams = _cams(2)
    _images(tmp_path, ["a.png"])
    write_middlebury_par(tmp_path / "m_par.txt", ["a.png", "b.png"], cams)
    with pytest.raises(SceneReadError, match=r"names image b\.png, but .* does not exist"):
        read_middlebury(tmp_path / "m_par.txt")
    (tmp_path / "bad_par.txt").write_text("a.png 1 0 0 0 1 0 0 0\n")
    with pytest.raises(SceneReadError, match="line 1: expected an image name and 21 numbers"):
        read_middlebury(tmp_path / "bad_par.txt")
    good = (tmp_path / "m_par.txt").read_text().splitlines()
    (tmp_path / "nan_par.txt").write_text(good[1].replace(good[1].split()[5], "abc", 1) + "\n")
    with pytest.raises(SceneReadError, match="line 1: 'abc' is not a number"):
        read_middlebury(tmp_path / "nan_par.txt")
    (tmp_path / "cnt_par.txt").write_text("5\n" + good[1] + "\n")
    with pytest.raises(SceneReadError, match="first line says 5 images but 1"):
        read_middlebury(tmp_path / "cnt_par.txt")
    (tmp_path / "bin_par.txt").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(SceneReadError, match="not a text file"):
        read_middlebury(tmp_path / "bin_par.txt")
    with pytest.raises(SceneReadError, match="no such scene"):
        read_scene(tmp_path / "nope")


def test_real_temple_par_file():
    folder = DATA / "middlebury-mvs" / "templeSparseRing"
    if not folder.is_dir():
        pytest.skip(f"templeSparseRing is not in {folder}")
    sc = read_scene(folder / "templeSR_par.txt")
    assert sc.n_views == 16 and sc.images[0].shape == (480, 640, 3)
    np.testing.assert_allclose(sc.bbox[0], [-0.073568, 0.021728, -0.012445])
    # the bounding box's centre projects inside every image, in front of the camera
    c = sc.bbox.mean(0)
    for cam in sc.cameras:
        uv, z = cam.project(c[None])
        assert z[0] > 0 and 0 <= uv[0, 0] < 640 and 0 <= uv[0, 1] < 480


# ------------------------------------------------------------------------------ COLMAP
def _write_colmap_bin(folder: Path, cams, names, model_id=1, params_fn=None, points=None):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "cameras.bin", "wb") as f:
        f.write(struct.pack("<Q", len(cams)))
        for i, c in enumerate(cams):
            p = params_fn(c) if params_fn else [c.K[0, 0], c.K[1, 1], c.K[0, 2] + 0.5, c.K[1, 2] + 0.5]
            f.write(struct.pack("<iiQQ", i + 1, model_id, c.width, c.height))
            f.write(struct.pack(f"<{len(p)}d", *p))
    with open(folder / "images.bin", "wb") as f:
        f.write(struct.pack("<Q", len(cams)))
        for i, (c, n) in enumerate(zip(cams, names, strict=True)):
            q = rotmat_to_qvec(c.R)
            f.write(struct.pack("<i7di", i + 1, *q, *c.t, i + 1))
            f.write(n.encode() + b"\0")
            f.write(struct.pack("<Q", 1))
            f.write(struct.pack("<ddq", 1.0, 2.0, 1))
    if points is not None:
        with open(folder / "points3D.bin", "wb") as f:
            f.write(struct.pack("<Q", len(points)))
            for k, (X, track) in enumerate(points):
                f.write(struct.pack("<Q3d3BdQ", k + 1, *X, 10, 20, 30, 0.5, len(track)))
                for iid in track:
                    f.write(struct.pack("<ii", iid, 0))


def test_colmap_binary_and_text_match_hand_made_cameras(tmp_path):
    cams = _cams()
    names = [f"c{k}.png" for k in range(3)]
    (tmp_path / "images").mkdir()
    _images(tmp_path / "images", names)
    pts = [((0.1, 0.2, 0.3), [1, 3]), ((0.0, -0.1, 0.2), [2])]
    _write_colmap_bin(tmp_path / "sparse" / "0", cams, names, points=pts)
    sc = read_scene(tmp_path)  # finds sparse/0 and images/
    assert sc.meta["format"] == "colmap"
    for c0, c1 in zip(cams, sc.cameras, strict=True):
        np.testing.assert_allclose(c1.K, c0.K, atol=1e-9)
        np.testing.assert_allclose(c1.R, c0.R, atol=1e-9)
        np.testing.assert_allclose(c1.t, c0.t, atol=1e-9)
    np.testing.assert_allclose(sc.points, [[0.1, 0.2, 0.3], [0.0, -0.1, 0.2]])
    assert [v.tolist() for v in sc.point_views] == [[0, 2], [1]]
    assert sc.point_colors[0].tolist() == [10, 20, 30]
    # the text writer and reader agree with the binary model
    write_colmap_text(tmp_path / "txt", names, cams)
    sc2 = read_colmap(tmp_path / "txt", image_dir=tmp_path / "images")
    for c0, c1 in zip(cams, sc2.cameras, strict=True):
        np.testing.assert_allclose(c1.P, c0.P, atol=1e-9)
    assert sc2.points is None


def test_quaternion_round_trip():
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        q *= np.sign(q[0])
        np.testing.assert_allclose(rotmat_to_qvec(qvec_to_rotmat(q)), q, atol=1e-9)


def test_colmap_unsupported_model_and_truncation(tmp_path):
    cams = _cams(2)
    names = ["a.png", "b.png"]
    (tmp_path / "images").mkdir()
    _images(tmp_path / "images", names)
    _write_colmap_bin(tmp_path / "m", cams, names, model_id=7, params_fn=lambda c: [40.0, 20, 15, 0.1, 0.0])
    with pytest.raises(SceneReadError, match="FOV model, which gpulab cannot undistort"):
        read_colmap(tmp_path / "m", image_dir=tmp_path / "images")
    _write_colmap_bin(tmp_path / "t", cams, names)
    data = (tmp_path / "t" / "images.bin").read_bytes()
    (tmp_path / "t" / "images.bin").write_bytes(data[:40])
    with pytest.raises(SceneReadError, match="truncated|more than the file"):
        read_colmap(tmp_path / "t", image_dir=tmp_path / "images")
    (tmp_path / "t" / "images.bin").write_bytes(struct.pack("<Q", 10**12))
    with pytest.raises(SceneReadError, match="more than the file can hold"):
        read_colmap(tmp_path / "t", image_dir=tmp_path / "images")
    (tmp_path / "e").mkdir()
    with pytest.raises(SceneReadError, match="not a COLMAP model"):
        read_colmap(tmp_path / "e")


def test_colmap_radial_distortion_is_undistorted(tmp_path):
    """A SIMPLE_RADIAL image of a pattern comes out where the pinhole camera puts it."""
    import cv2

    cam = _cams(1, w=80, h=60)[0]
    f, cx, cy, k = cam.K[0, 0], cam.K[0, 2], cam.K[1, 2], -0.2
    # draw a dot at a known undistorted position, then distort it with the radial model
    u, v = 62.0, 45.0
    xn, yn = (u - cx) / f, (v - cy) / f
    r2 = xn * xn + yn * yn
    ud, vd = cx + f * xn * (1 + k * r2), cy + f * yn * (1 + k * r2)
    img = np.zeros((60, 80, 3), np.uint8)
    cv2.circle(img, (int(round(ud)), int(round(vd))), 2, (255, 255, 255), -1)
    (tmp_path / "images").mkdir()
    write_image(tmp_path / "images" / "a.png", img)
    _write_colmap_bin(tmp_path / "m", [cam], ["a.png"], model_id=2,
                      params_fn=lambda c: [f, cx + 0.5, cy + 0.5, k])
    sc = read_colmap(tmp_path / "m", image_dir=tmp_path / "images")
    assert sc.meta["undistorted"] == 1
    g = sc.images[0][..., 0].astype(float)
    vv, uu = np.mgrid[0:60, 0:80]
    cu, cv_ = (g * uu).sum() / g.sum(), (g * vv).sum() / g.sum()
    assert abs(cu - u) < 1.0 and abs(cv_ - v) < 1.0, (cu, cv_, u, v, ud, vd)


def test_masks(tmp_path):
    cams = _cams(2)
    names = ["a.png", "b.png"]
    _images(tmp_path, names)
    write_middlebury_par(tmp_path / "s_par.txt", names, cams)
    (tmp_path / "masks").mkdir()
    m = np.zeros((30, 40), np.uint8)
    m[5:20, 10:30] = 255
    write_image(tmp_path / "masks" / "a.png.png", m)  # COLMAP's naming
    sc = read_middlebury(tmp_path / "s_par.txt", mask_dir=tmp_path / "masks")
    assert sc.masks[0].sum() == 15 * 20 and sc.masks[1] is None
    write_image(tmp_path / "masks" / "b.png", np.zeros((10, 10), np.uint8))
    with pytest.raises(SceneReadError, match="mask b.png is 10 x 10 but image b.png is 40 x 30"):
        read_middlebury(tmp_path / "s_par.txt", mask_dir=tmp_path / "masks")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SceneReadError, match="no mask in"):
        read_middlebury(tmp_path / "s_par.txt", mask_dir=tmp_path / "empty")


# ------------------------------------------------------------------------------ depth maps
@pytest.mark.parametrize("ext", [".pfm", ".bin", ".npy"])
def test_depth_round_trip(tmp_path, ext):
    rng = np.random.default_rng(0)
    d = rng.uniform(0.5, 3, (7, 11)).astype(np.float32)
    d[2, 3] = np.nan
    write_depth(tmp_path / ("d" + ext), d)
    back = read_depth(tmp_path / ("d" + ext))
    np.testing.assert_array_equal(back, d)
    n = rng.normal(size=(7, 11, 3)).astype(np.float32)
    write_depth(tmp_path / ("n" + ext), n)
    np.testing.assert_array_equal(read_depth(tmp_path / ("n" + ext)), n)


def test_colmap_array_layout_matches_colmap_reader(tmp_path):
    """The byte layout of COLMAP's own read_array (scripts/python/read_write_dense.py)."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    write_colmap_array(tmp_path / "x.bin", a)
    raw = (tmp_path / "x.bin").read_bytes()
    assert raw.startswith(b"4&3&1&")
    arr = np.frombuffer(raw[6:], np.float32).reshape((4, 3, 1), order="F")
    np.testing.assert_array_equal(np.transpose(arr, (1, 0, 2)).squeeze(), a)
    np.testing.assert_array_equal(read_colmap_array(tmp_path / "x.bin"), a)


def test_depth_bad_files(tmp_path):
    (tmp_path / "a.pfm").write_bytes(b"Pf\n100 100\n-1.0\n" + b"\0" * 16)
    with pytest.raises(DepthIOError, match="truncated"):
        read_pfm(tmp_path / "a.pfm")
    (tmp_path / "b.pfm").write_bytes(b"P6\n1 1\n255\n\0\0\0")
    with pytest.raises(DepthIOError, match="not a PFM"):
        read_pfm(tmp_path / "b.pfm")
    (tmp_path / "c.bin").write_bytes(b"5&5&1&" + b"\0" * 8)
    with pytest.raises(DepthIOError, match="need 100"):
        read_colmap_array(tmp_path / "c.bin")
    with pytest.raises(DepthIOError, match="cannot write"):
        write_depth(tmp_path / "d.pfm", np.zeros(5))
    assert not (tmp_path / "d.pfm").exists()


# ------------------------------------------------------------------------------ point clouds
@pytest.mark.parametrize("binary", [True, False])
def test_points_ply_round_trip(tmp_path, binary):
    rng = np.random.default_rng(1)
    p = rng.normal(size=(50, 3)).astype(np.float32)
    n = rng.normal(size=(50, 3)).astype(np.float32)
    c = rng.integers(0, 256, (50, 3)).astype(np.uint8)
    q = rng.uniform(size=50).astype(np.float32)
    write_points_ply(tmp_path / "c.ply", p, normals=n, colors=c, confidence=q, binary=binary)
    head = (tmp_path / "c.ply").read_bytes()[:400].decode("ascii", "replace")
    assert "property float x" in head and "property uchar red" in head and "property float confidence" in head
    r = read_points_ply(tmp_path / "c.ply")
    np.testing.assert_allclose(r["points"], p, rtol=1e-6)
    np.testing.assert_allclose(r["normals"], n, rtol=1e-6)
    np.testing.assert_array_equal(r["colors"], c)
    np.testing.assert_allclose(r["confidence"], q, rtol=1e-6)


def test_points_ply_errors(tmp_path):
    with pytest.raises(PointCloudIOError, match=r"points must be \(N, 3\)"):
        write_points_ply(tmp_path / "x.ply", np.zeros((3, 2)))
    assert not (tmp_path / "x.ply").exists()
    (tmp_path / "t.ply").write_bytes(b"ply\nformat binary_little_endian 1.0\nelement vertex 1000\n"
                                     b"property float x\nproperty float y\nproperty float z\nend_header\n" + b"\0" * 12)
    with pytest.raises(PointCloudIOError, match="truncated"):
        read_points_ply(tmp_path / "t.ply")
    (tmp_path / "n.ply").write_bytes(b"not a ply")
    with pytest.raises(PointCloudIOError, match="not a PLY"):
        read_points_ply(tmp_path / "n.ply")
