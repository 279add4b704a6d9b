"""``gpulab flow`` and the flow tool layer, headless (CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.io.flow_io import read_flow
from app.io.image_io import read_image, write_image
from app.tools import flow
from gpu_kernels.backend import get_backend

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "samples" / "flow"


def gpulab(*args, cwd=None):
    return subprocess.run([sys.executable, "-c", "from app.cli import main; raise SystemExit(main())", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or ROOT, timeout=300)


def test_sample_pair_is_found_with_its_ground_truth():
    data = flow.load(flow.samples()[0])
    assert (data.name1, data.name2) == ("frame1.png", "frame2.png")
    assert data.gt is not None and data.gt_path.name == "flow_gt.png"
    res = flow.run(data, {}, device=get_backend("cpu"))
    assert res.metrics["aee"] < 0.2                       # the refinement on a 6 px vortex
    lines = flow.summary(res)
    assert any("AEE" in ln for ln in lines)


def test_cli_writes_everything_and_prints_metrics(tmp_path):
    r = gpulab("flow", SAMPLE / "frame1.png", SAMPLE / "frame2.png", "-o", tmp_path / "f.flo",
               "--quality", tmp_path / "q.png", "--color", tmp_path / "c.png", "--warped", tmp_path / "w.png",
               "--gt", SAMPLE / "flow_gt.png", "--method", "bm", "--block", "16", "--radius", "6",
               "--device", "cpu", "--quiet")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(m) >= {"aee", "aae", "r1", "r3"} and 0 < m["aee"] < 1.5
    f, valid = read_flow(tmp_path / "f.flo")
    gt, gvalid = read_flow(SAMPLE / "flow_gt.png")
    ok = valid & gvalid
    assert abs(np.hypot(*(f - gt)[ok].T).mean() - m["aee"]) < 1e-3   # the printed AEE is the file's
    q = read_image(tmp_path / "q.png")
    c = read_image(tmp_path / "c.png")
    assert q.dtype == np.uint8 and q.shape == f.shape[:2] and c.shape == f.shape[:2] + (3,)
    assert read_image(tmp_path / "w.png").shape == (240, 320, 3)


def test_cli_kitti_output_and_video_pair(tmp_path):
    cv2 = pytest.importorskip("cv2")
    vid = tmp_path / "clip.avi"
    a = read_image(SAMPLE / "frame1.png")
    b = read_image(SAMPLE / "frame2.png")
    w = cv2.VideoWriter(str(vid), cv2.VideoWriter_fourcc(*"MJPG"), 5, (320, 240))
    for img in (a, b, a):
        w.write(np.ascontiguousarray(img[..., ::-1]))
    w.release()
    r = gpulab("flow", vid, "--pair", 1, "-o", tmp_path / "p1.png", "--method", "lk", "--device", "cpu", "-q")
    assert r.returncode == 0, r.stderr
    f, valid = read_flow(tmp_path / "p1.png")
    gt, gvalid = read_flow(SAMPLE / "flow_gt.png")
    # pair 1 goes from frame2 back to frame1: the flow points the other way
    inner = valid & gvalid
    inner[:40] = inner[-40:] = False
    assert np.median(np.sum(f[inner] * gt[inner], axis=1)) < 0
    assert "pair 2 of 2" in r.stdout


@pytest.mark.parametrize("extra,msg", [
    (["-o", "x.txt"], "name ending in .flo"),
    (["-o", "x.flo", "--block", "7"], "block must be one of"),
    (["-o", "x.flo", "--method", "sift"], "method must be one of"),
    (["-o", "x.flo", "--window", "4"], "window must be odd"),
    (["-o", "x.flo", "--pair", "3"], "--pair applies"),
])
def test_cli_bad_options_leave_nothing(tmp_path, extra, msg):
    r = gpulab("flow", SAMPLE / "frame1.png", SAMPLE / "frame2.png", *extra, "--device", "cpu", cwd=tmp_path)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_cli_bad_inputs(tmp_path):
    small = write_image(tmp_path / "small.png", np.zeros((10, 12), np.uint8))
    out = tmp_path / "o.flo"
    r = gpulab("flow", SAMPLE / "frame1.png", small, "-o", out, "--device", "cpu")
    assert r.returncode == 2 and "same size" in r.stderr
    r = gpulab("flow", SAMPLE / "frame1.png", SAMPLE / "frame2.png", "-o", out, "--mask", small, "--device", "cpu")
    assert r.returncode == 2 and "mask small.png is 12 x 10" in r.stderr
    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    r = gpulab("flow", tmp_path / "corrupt.png", SAMPLE / "frame2.png", "-o", out, "--device", "cpu")
    assert r.returncode == 2 and "corrupt.png" in r.stderr
    one = tmp_path / "one"
    one.mkdir()
    write_image(one / "a.png", np.zeros((10, 12), np.uint8))
    r = gpulab("flow", one, "-o", out, "--device", "cpu")
    assert r.returncode == 2 and "at least 2" in r.stderr
    r = gpulab("flow", one / "a.png", "-o", out, "--device", "cpu")
    assert r.returncode == 2 and "no next image" in r.stderr
    assert not out.exists()


def test_batch_items_pair_up_frames(tmp_path):
    for i in range(4):
        write_image(tmp_path / f"f{i}.png", np.full((16, 16), 10 * i, np.uint8))
    items = flow.batch_items([tmp_path])
    assert [it.meta["pair"] for it in items] == [0, 1, 2]
    d = flow.batch_load(items[2])
    assert (int(d.img1.max()), int(d.img2.max())) == (20, 30)
    files = sorted(tmp_path.glob("*.png"))
    items = flow.batch_items(files)
    assert [it.key for it in items] == ["f0-f1", "f1-f2", "f2-f3"]


def test_demo_writes_every_method(tmp_path):
    written = flow.demo(tmp_path, device=get_backend("cpu"))
    names = {p.name for p in written}
    assert {"flow-bm.flo", "flow-lk.flo", "flow-refine.flo", "flow-refine-color.png", "flow-summary.txt"} <= names
