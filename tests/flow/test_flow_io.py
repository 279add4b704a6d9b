"""Middlebury .flo and KITTI PNG flow files; video / frame-folder stepping."""

import struct

import numpy as np
import pytest

from app.io.flow_io import (
    FLO_TAG,
    FlowFileError,
    read_flo,
    read_flow,
    read_kitti_png,
    write_flo,
    write_flow,
    write_kitti_png,
)
from app.io.video_io import FrameSequence, VideoReadError

RNG = np.random.default_rng(3)


def _flow(h=7, w=9):
    return (RNG.standard_normal((h, w, 2)) * 20).astype(np.float32)


def test_flo_round_trip_exact_with_unknowns(tmp_path):
    f = _flow()
    valid = RNG.random(f.shape[:2]) > 0.2
    p = write_flo(tmp_path / "a.flo", f, valid)
    raw = p.read_bytes()
    tag, w, h = struct.unpack("<fii", raw[:12])
    assert (tag, w, h) == (FLO_TAG, 9, 7) and raw[:4] == b"PIEH"
    assert len(raw) == 12 + 8 * 7 * 9
    back, bvalid = read_flo(p)
    assert np.array_equal(bvalid, valid)
    assert np.array_equal(back[valid], f[valid])
    assert (back[~valid] == 0).all()
    # unknowns are stored as 1e10
    data = np.frombuffer(raw[12:], "<f4").reshape(7, 9, 2)
    assert (data[~valid] > 1e9).all()


def test_flo_reads_middlebury_ground_truth():
    from pathlib import Path

    d = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "middlebury-flow" / "RubberWhale"
    if not d.exists():
        pytest.skip(f"Middlebury data not found at {d}")
    f, valid = read_flow(d / "flow10.flo")
    assert f.shape == (388, 584, 2)
    assert 0.9 < valid.mean() < 1.0           # RubberWhale has unknown (occluded) pixels
    assert np.abs(f[valid]).max() < 10


def test_kitti_round_trip_quantised(tmp_path):
    f = _flow()
    valid = RNG.random(f.shape[:2]) > 0.3
    p = write_kitti_png(tmp_path / "a.png", f, valid)
    back, bvalid = read_kitti_png(p)
    assert np.array_equal(bvalid, valid)
    assert np.abs(back[valid] - f[valid]).max() <= 0.5 / 64 + 1e-6
    from app.io.image_io import read_image

    raw = read_image(p)
    assert raw.dtype == np.uint16 and raw.shape == (7, 9, 3)
    i, j = np.argwhere(valid)[0]
    assert raw[i, j, 0] == int(np.rint(f[i, j, 0] * 64 + 32768))
    assert raw[i, j, 2] == 1


def test_dispatch_by_extension(tmp_path):
    f = _flow(3, 4)
    for name in ("x.flo", "x.png"):
        back, _ = read_flow(write_flow(tmp_path / name, f))
        assert np.allclose(back, f, atol=1 / 64)
    with pytest.raises(FlowFileError, match="unknown flow file type"):
        write_flow(tmp_path / "x.txt", f)


@pytest.mark.parametrize("payload,msg", [
    (b"", "empty"),
    (b"PIEH\x01\x00", "truncated .flo header"),
    (b"ABCD" + struct.pack("<ii", 2, 2) + bytes(32), "not a Middlebury"),
    (struct.pack("<fii", FLO_TAG, 2, 2) + bytes(16), "truncated"),
    (struct.pack("<fii", FLO_TAG, 2, 2) + bytes(40), "unexpected bytes"),
    (struct.pack("<fii", FLO_TAG, -5, 2), "absurd"),
    (struct.pack("<fii", FLO_TAG, 1 << 30, 1 << 30), "absurd"),
])
def test_flo_bad_files(tmp_path, payload, msg):
    p = tmp_path / "bad.flo"
    p.write_bytes(payload)
    with pytest.raises(FlowFileError, match=msg) as ei:
        read_flo(p)
    assert "\n" not in str(ei.value)


def test_bad_kitti_and_missing(tmp_path):
    from app.io.image_io import write_image

    p = write_image(tmp_path / "eight.png", np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(FlowFileError, match="16-bit"):
        read_kitti_png(p)
    with pytest.raises(FlowFileError, match="no such file"):
        read_flow(tmp_path / "none.flo")
    (tmp_path / "junk.png").write_bytes(b"not a png at all")
    with pytest.raises(FlowFileError):
        read_kitti_png(tmp_path / "junk.png")


def test_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(FlowFileError):
        write_flo(tmp_path / "a.flo", np.zeros((3, 4, 3), np.float32))
    with pytest.raises(FlowFileError):
        write_kitti_png(tmp_path / "a.png", np.zeros((0, 4, 2), np.float32))
    with pytest.raises((FlowFileError, OSError)):
        write_flo(tmp_path / "missing-dir" / "a.flo", np.zeros((3, 4, 2), np.float32))
    assert sorted(x.name for x in tmp_path.iterdir()) == []


def test_frame_folder_and_video(tmp_path):
    cv2 = pytest.importorskip("cv2")
    from app.io.image_io import write_image

    frames = tmp_path / "frames"
    frames.mkdir()
    for i in (10, 2, 1):   # natural order: 1, 2, 10
        write_image(frames / f"img{i}.png", np.full((6, 8, 3), i * 20, np.uint8))
    seq = FrameSequence(frames)
    assert seq.kind == "folder" and seq.n_pairs == 2
    assert [int(f[0, 0, 0]) for _, f, _ in seq.pairs()] == [20, 40]
    assert seq.name(2) == "img10.png"
    vid = tmp_path / "clip.avi"
    w = cv2.VideoWriter(str(vid), cv2.VideoWriter_fourcc(*"MJPG"), 5, (32, 24))
    for i in range(3):
        w.write(np.full((24, 32, 3), (0, 0, 60 * (i + 1)), np.uint8))   # BGR: red grows
    w.release()
    with FrameSequence(vid) as seq:
        assert seq.kind == "video" and len(seq) == 3
        a, b = seq.pair(1)
        assert a.shape == (24, 32, 3)
        assert abs(int(a[..., 0].mean()) - 120) < 10 and int(a[..., 2].mean()) < 10   # RGB order
        assert b[..., 0].mean() > a[..., 0].mean()


def test_sequence_errors(tmp_path):
    from app.io.image_io import write_image

    with pytest.raises(VideoReadError, match="no such"):
        FrameSequence(tmp_path / "nothing")
    one = tmp_path / "one"
    one.mkdir()
    write_image(one / "a.png", np.zeros((4, 4), np.uint8))
    with pytest.raises(VideoReadError, match="at least 2"):
        FrameSequence(one)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(VideoReadError):
        FrameSequence(empty)
    (tmp_path / "bad.mp4").write_bytes(b"\x00" * 100)
    with pytest.raises(VideoReadError):
        FrameSequence(tmp_path / "bad.mp4")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(VideoReadError, match="not a video"):
        FrameSequence(tmp_path / "notes.txt")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    write_image(mixed / "a.png", np.zeros((4, 4), np.uint8))
    write_image(mixed / "b.png", np.zeros((5, 4), np.uint8))
    seq = FrameSequence(mixed)
    with pytest.raises(VideoReadError, match="same size"):
        list(seq.pairs())


def test_a_folder_of_one_pair_finds_its_ground_truth(tmp_path):
    """FlyingChairs' img0/img1/flow.flo (or Middlebury's frame10/frame11/flow10.flo) opened as a
    folder: the flow file is the pair's ground truth, as it is when the first frame is opened."""
    from app.io.image_io import write_image
    from app.tools import flow

    d = tmp_path / "0000000"
    d.mkdir()
    write_image(d / "img0.png", np.full((7, 9, 3), 10, np.uint8))
    write_image(d / "img1.png", np.full((7, 9, 3), 20, np.uint8))
    gt = _flow()
    write_flo(d / "flow.flo", gt)
    data = flow.load(d)
    assert data.gt_path is not None and data.gt_path.name == "flow.flo"
    np.testing.assert_array_equal(data.gt[0], gt)
    assert flow.load(d / "img0.png").gt_path.name == "flow.flo"
    write_image(d / "img2.png", np.full((7, 9, 3), 30, np.uint8))   # three frames: whose truth?
    assert flow.load(d).gt is None
