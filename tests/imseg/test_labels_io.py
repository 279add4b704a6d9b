"""Label images (16-bit PNG, 32-bit TIFF, .npy), the CSV region table and the BSDS500
ground-truth reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.io.labels_io import (
    LabelsIOError,
    check_labels_output,
    read_bsds_groundtruth,
    read_labels,
    read_region_table,
    write_labels,
    write_region_table,
)

BSDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "bsds500"


@pytest.mark.parametrize("ext,top", [(".png", 65535), (".tif", 4_000_000), (".npy", 2**31 - 1)])
def test_round_trip(tmp_path, ext, top):
    rng = np.random.default_rng(0)
    a = rng.integers(0, top, (17, 23))
    a[0, 0] = top
    p = write_labels(tmp_path / f"l{ext}", a)
    back = read_labels(p)
    np.testing.assert_array_equal(back, a)
    assert back.dtype == np.int32


def test_png_limit_and_nothing_left_behind(tmp_path):
    a = np.array([[1, 65536]])
    with pytest.raises(LabelsIOError, match=r"65,536 labels do not fit a 16-bit PNG.*\.tif"):
        write_labels(tmp_path / "l.png", a)
    assert list(tmp_path.iterdir()) == []


def test_bad_paths_and_files(tmp_path):
    with pytest.raises(LabelsIOError, match="unknown label format"):
        check_labels_output(tmp_path / "l.jpg")
    with pytest.raises(LabelsIOError, match="does not exist"):
        check_labels_output(tmp_path / "nope" / "l.png")
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"x" * 50)
    with pytest.raises(LabelsIOError, match="bad.png"):
        read_labels(tmp_path / "bad.png")
    np.save(tmp_path / "f.npy", np.zeros((3, 3), np.float32))
    with pytest.raises(LabelsIOError, match="integer"):
        read_labels(tmp_path / "f.npy")
    np.save(tmp_path / "neg.npy", -np.ones((2, 2), np.int32))
    with pytest.raises(LabelsIOError, match="negative"):
        read_labels(tmp_path / "neg.npy")
    with pytest.raises(LabelsIOError, match="labels must be"):
        write_labels(tmp_path / "x.npy", np.zeros((2, 2), np.float32))


def test_colour_coded_png_reads_as_panoptic_ids(tmp_path):
    import cv2

    rgb = np.zeros((2, 2, 3), np.uint8)
    rgb[0, 1] = (1, 2, 3)
    cv2.imwrite(str(tmp_path / "p.png"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    assert read_labels(tmp_path / "p.png").tolist() == [[0, 1 + 2 * 256 + 3 * 65536], [0, 0]]


def test_region_table_round_trip(tmp_path):
    t = {"label": np.array([1, 2]), "area": np.array([10, 5]), "bbox": np.array([[0, 0, 2, 5], [2, 0, 3, 5]]),
         "moments_central": np.arange(32, dtype=float).reshape(2, 4, 4) / 3}
    write_region_table(tmp_path / "t.csv", t)
    back = read_region_table(tmp_path / "t.csv")
    assert back["label"].tolist() == [1, 2] and back["bbox-2"].tolist() == [2, 3]
    np.testing.assert_allclose(back["moments_central-3-1"], t["moments_central"][:, 3, 1], rtol=1e-9)
    with pytest.raises(LabelsIOError, match="csv"):
        write_region_table(tmp_path / "t.txt", t)


def test_bsds_reader_on_the_real_data():
    files = sorted((BSDS / "groundTruth").glob("*.mat"))
    if not files:
        pytest.skip(f"BSDS500 not found at {BSDS}")
    gts = read_bsds_groundtruth(files[0])
    assert 5 <= len(gts) <= 7
    for seg, bnd in gts:
        assert seg.shape in ((321, 481), (481, 321)) and seg.min() >= 1 and bnd.dtype == bool
        # the thin boundaries lie where the segmentation changes (on either side of the change)
        edge = np.zeros_like(bnd)
        dx, dy = seg[:, 1:] != seg[:, :-1], seg[1:, :] != seg[:-1, :]
        edge[:, 1:] |= dx
        edge[:, :-1] |= dx
        edge[1:, :] |= dy
        edge[:-1, :] |= dy
        from scipy import ndimage as ndi

        near = ndi.binary_dilation(edge, structure=np.ones((3, 3), bool))
        assert (bnd & ~near).sum() < 0.02 * bnd.sum() + 5
        assert seg.max() >= 2


def test_bsds_reader_rejects_other_mat_files(tmp_path):
    from scipy.io import savemat

    savemat(tmp_path / "x.mat", {"something": np.zeros(3)})
    with pytest.raises(LabelsIOError, match="groundTruth"):
        read_bsds_groundtruth(tmp_path / "x.mat")
    (tmp_path / "y.mat").write_bytes(b"MATLAB 5.0 garbage")
    with pytest.raises(LabelsIOError, match="y.mat"):
        read_bsds_groundtruth(tmp_path / "y.mat")
