"""``gpulab echo`` and ``gpulab echo-synth`` and the echo tool layer, headless (CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.io.volume_io import read_displacement, read_volume, write_volume
from app.tools import echo
from gpu_kernels.backend import get_backend
from gpu_kernels.echo.synthetic import make_pair

ROOT = Path(__file__).resolve().parents[2]


def gpulab(*args, cwd=None):
    return subprocess.run([sys.executable, "-c", "from app.cli import main; raise SystemExit(main())", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or ROOT, timeout=600)


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth") / "lv"
    r = gpulab("echo-synth", "-o", d, "--size", "32", "--frames", "4", "--seed", "3", "--quiet")
    assert r.returncode == 0, r.stderr
    return d


def test_synth_folder_has_sequence_truth_and_masks(synth):
    names = sorted(p.name for p in synth.iterdir())
    assert "sequence.nii.gz" in names and "params.json" in names
    assert {"gt_000_001.npy", "gt_001_002.npy", "gt_002_003.npy", "gt_000_003.npy"} <= set(names)
    assert sum(n.startswith("myocardium_") for n in names) == 4
    seq = read_volume(synth / "sequence.nii.gz")
    assert seq.data.shape == (4, 32, 32, 32) and seq.data.dtype == np.uint8
    assert read_displacement(synth / "gt_001_002.npy", shape=(32, 32, 32)).shape == (3, 32, 32, 32)
    r = gpulab("echo-synth", "-o", synth, "--size", "32", "--quiet")
    assert r.returncode == 2 and "already exists" in r.stderr


def test_cli_pair_from_4d_with_ground_truth(synth, tmp_path):
    r = gpulab("echo", synth / "sequence.nii.gz", "--frames", "1", "2", "-o", tmp_path / "u.npy",
               "--jacobian", tmp_path / "j.nii.gz", "--gt", synth / "gt_001_002.npy",
               "--mask", synth / "myocardium_001.nii.gz", "--slices", tmp_path / "s.png", "--device", "cpu", "--quiet")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout.strip().splitlines()[-1])
    assert {"epe_mean", "epe_p95", "epe_mean_mm", "epe_p95_mm", "jacobian_error_mask"} <= set(m)
    u = np.load(tmp_path / "u.npy")
    gt = np.load(synth / "gt_001_002.npy")
    assert u.shape == (3, 32, 32, 32)
    assert abs(np.sqrt(((u - gt) ** 2).sum(0)).mean() - m["epe_mean"]) < 1e-3    # the printed EPE is the file's
    assert m["epe_mean"] < 0.6 * np.sqrt((gt ** 2).sum(0)).mean()
    j = read_volume(tmp_path / "j.nii.gz")
    assert j.data.shape == (32, 32, 32) and 0.5 < float(np.median(j.data)) < 1.5


@pytest.mark.slow
def test_cli_two_volumes_nifti_field_and_sequence(tmp_path, synth):
    f, m, gt = make_pair(24, shift=(0.5, -0.5, 1.0), seed=2)
    write_volume(tmp_path / "f.nii.gz", f, spacing=(2.0, 1.0, 1.0))
    write_volume(tmp_path / "m.nii.gz", m, spacing=(2.0, 1.0, 1.0))
    r = gpulab("echo", tmp_path / "f.nii.gz", tmp_path / "m.nii.gz", "-o", tmp_path / "u.nii.gz", "--levels", "2",
               "--device", "cpu", "--quiet")
    assert r.returncode == 0, r.stderr
    u = read_displacement(tmp_path / "u.nii.gz")
    inner = (slice(None),) + (slice(4, -4),) * 3
    assert np.abs(u[inner] - gt[inner]).mean() < 0.15
    # the whole sequence: (T - 1, 3, Z, Y, X), and a NIfTI output is refused before any work
    r = gpulab("echo", synth, "-o", tmp_path / "all.npy", "--trajectory", tmp_path / "t.npy", "--device", "cpu", "-q")
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "all.npy").shape == (3, 3, 32, 32, 32)
    assert np.load(tmp_path / "t.npy").shape == (4, 3, 32, 32, 32)
    r = gpulab("echo", synth, "-o", tmp_path / "all.nii.gz", "--device", "cpu", "-q")
    assert r.returncode == 2 and "one field" in r.stderr and not (tmp_path / "all.nii.gz").exists()


_SLOW = pytest.mark.slow


@pytest.mark.parametrize("case", ["shapes", pytest.param("2d", marks=_SLOW), "nan", pytest.param("corrupt", marks=_SLOW),
                                  "gt-shape", pytest.param("one-volume", marks=_SLOW),
                                  pytest.param("mask-alone", marks=_SLOW)])
def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path, case):
    a = np.random.default_rng(0).integers(0, 255, (16, 16, 16), dtype=np.uint8)
    write_volume(tmp_path / "a.nii.gz", a)
    write_volume(tmp_path / "b.nii.gz", a)
    args = [tmp_path / "a.nii.gz", tmp_path / "b.nii.gz"]
    extra = []
    if case == "shapes":
        write_volume(tmp_path / "b.nii.gz", a[:, :, :12])
    elif case == "2d":
        np.save(tmp_path / "b.npy", a[0])
        args[1] = tmp_path / "b.npy"
    elif case == "nan":
        v = a.astype(np.float32)
        v[3, 3, 3] = np.nan
        np.save(tmp_path / "b.npy", v)
        args[1] = tmp_path / "b.npy"
    elif case == "corrupt":
        (tmp_path / "b.nii.gz").write_bytes(b"\x1f\x8b" + b"garbage" * 50)
    elif case == "gt-shape":
        np.save(tmp_path / "gt.npy", np.zeros((3, 16, 16, 15), np.float32))
        extra = ["--gt", tmp_path / "gt.npy"]
    elif case == "one-volume":          # alone in its folder: nothing to pair it with
        (tmp_path / "solo").mkdir()
        write_volume(tmp_path / "solo" / "a.nii.gz", a)
        args = [tmp_path / "solo" / "a.nii.gz"]
    elif case == "mask-alone":
        extra = ["--mask", tmp_path / "a.nii.gz"]
    r = gpulab("echo", *args, "-o", tmp_path / "out.npy", "--jacobian", tmp_path / "j.npy", *extra,
               "--device", "cpu", "--quiet")
    assert r.returncode == 2, (case, r.returncode, r.stderr)
    msg = r.stderr.strip().splitlines()
    assert len(msg) == 1 and msg[0].startswith("gpulab: error:"), r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out.npy").exists() and not (tmp_path / "j.npy").exists()


@pytest.mark.slow
def test_tool_loads_sample_with_truth_and_runs_a_sequence():
    data = echo.load(echo.samples()[0])
    assert data.n_frames == 4 and data.truth and data.masks
    res = echo.run(data, {"levels": 2, "iters": 5}, device=get_backend("cpu"))
    assert res.pairwise.shape == (3, 3, 48, 48, 48) and res.trajectory.shape == (4, 3, 48, 48, 48)
    assert res.metrics is not None and res.metrics["pairs"] == 3
    zero = float(np.mean([np.sqrt((g ** 2).sum(0)).mean() for g in data.truth.values()]))
    assert res.metrics["epe_mean"] < 0.5 * zero
    lines = echo.summary(res)
    assert any("against the truth" in ln for ln in lines)
    pic = echo.render_slices(res, kind="Jacobian determinant")
    assert pic.ndim == 3 and pic.shape[2] == 3 and pic.shape[0] >= 96
    for kind in ("Magnitude", "Jacobian determinant", "Divergence"):
        m = echo.slice_maps(res.pairwise[0], 1, 24, kind, data.spacing)
        assert m.shape == (48, 48) and np.isfinite(m).all()
    items = echo.batch_items([echo.samples()[0]])
    assert len(items) == 3 and items[1].meta["frames"] == [1, 2]


def test_folder_of_frames_and_reference(tmp_path):
    f, m, _ = make_pair(20, shift=(0.0, 0.5, 0.5), seed=4)
    for i, v in enumerate((f, m, f)):
        np.save(tmp_path / f"frame{i}.npy", v)
    data = echo.load(tmp_path)
    assert data.n_frames == 3 and data.names == ["frame0.npy", "frame1.npy", "frame2.npy"]
    res = echo.run(data, {"levels": 1, "reference": 1}, device=get_backend("cpu"))
    assert res.reference == 1 and np.abs(res.trajectory[1]).max() == 0
    # frame 2 equals frame 0, so both trajectories from frame 1 point the same way
    a, b = res.trajectory[0].astype(np.float32), res.trajectory[2].astype(np.float32)
    assert (a * b).sum() > 0
    with pytest.raises(Exception, match="reference frame 5"):
        echo.run(data, {"reference": 5}, device=get_backend("cpu"))
