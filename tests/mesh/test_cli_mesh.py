"""``gpulab mesh-seg``: a PSB mesh end to end, bad input, output checks, the demo."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from app.io.atomic import OUTPUT_MARKER
from app.io.mesh_io import read_face_colors, read_mesh, read_seg
from app.render import mesh as render
from app.tools import mesh_seg
from gpu_kernels.backend import get_backend
from gpu_kernels.mesh import segment as seg_lib

ROOT = Path(__file__).resolve().parents[2]
PSB = ROOT.parent / "shared" / "data" / "psb" / "off"
SAMPLES = ROOT / "resources" / "samples"


def psb_mesh() -> Path:
    """The smallest PSB mesh available (341.off has 3,322 faces)."""
    if not PSB.is_dir():
        pytest.skip(f"the Princeton Segmentation Benchmark meshes are not here ({PSB} is missing)")
    meshes = sorted(PSB.glob("*.off"), key=lambda p: p.stat().st_size)
    if not meshes:
        pytest.skip(f"no .off meshes in {PSB}")
    return meshes[0]


def run_cli(capsys, *args):
    rc = main(["mesh-seg", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc, err, *fragments):
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gpulab: error: ")
    assert "Traceback" not in err
    for frag in fragments:
        assert frag in lines[0], lines[0]


# ----------------------------------------------------------------------------- the real thing
def test_psb_mesh_end_to_end(tmp_path, capsys):
    src = psb_mesh()
    out, seg, segs = tmp_path / "parts.ply", tmp_path / "parts.seg", tmp_path / "segs"
    rc, stdout, stderr = run_cli(capsys, src, "-o", out, "--labels", seg, "--segments-dir", segs,
                                 "--max-faces", 1200, "--apsp", "cpu", "--device", "cpu")
    assert rc == 0, stderr
    v, f = read_mesh(src)
    # the .seg has exactly one line per face of the input mesh, ids from 0
    lines = seg.read_text().splitlines()
    assert len(lines) == len(f)
    labels = read_seg(seg, n_faces=len(f))
    k = int(labels.max()) + 1
    assert labels.min() == 0 and k >= 2 and set(np.unique(labels)) == set(range(k))
    # the PLY has the input's geometry and a colour per face
    v2, f2 = read_mesh(out)
    np.testing.assert_array_equal(f2, f)
    np.testing.assert_allclose(v2, v)
    colors = read_face_colors(out)
    assert colors is not None and colors.shape == (len(f), 3)
    assert len(np.unique(colors, axis=0)) > 1
    # one mesh per segment, their faces adding up to the whole
    files = sorted(p for p in segs.iterdir() if p.name != OUTPUT_MARKER)
    assert [p.name for p in files] == [f"segment_{i:03d}.ply" for i in range(k)]
    assert sum(len(read_mesh(p)[1]) for p in files) == len(f)
    for i, p in enumerate(files):
        assert len(read_mesh(p)[1]) == int(np.count_nonzero(labels == i))
    # summary on stdout, progress on stderr
    assert f"{len(f):,} faces" in stdout and f"parts (k): {k}" in stdout
    assert "device: cpu" in stdout and "time:" in stdout and "APSP" in stdout
    assert f"wrote {out}" in stdout and f"wrote {seg}" in stdout
    assert "%]" in stderr


def test_quiet_explicit_k_and_labels_only(tmp_path, capsys):
    out = tmp_path / "d.ply"
    rc, stdout, stderr = run_cli(capsys, SAMPLES / "dumbbell.ply", "-o", out, "--k", 3, "--quiet",
                                 "--apsp", "cpu", "--device", "cpu", "--delta", "0.3", "--eta-convex", "0.2",
                                 "--max-iter", 5, "--max-faces", 800)
    assert rc == 0, stderr
    assert stderr == ""
    assert "parts (k): 3 (asked for 3)" in stdout
    assert "delta = 0.3" in stdout and "eta_convex = 0.2" in stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.ply"]


# ----------------------------------------------------------------------------- bad input
def _bad_inputs(d: Path) -> dict[str, tuple[Path, str]]:
    (d / "notes.ply").write_text("these are my holiday notes\n")
    (d / "cloud.ply").write_text("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                                 "property float z\nend_header\n0 0 0\n1 0 0\n0 1 0\n")
    (d / "empty.off").write_bytes(b"")
    (d / "nan.off").write_text("OFF\n4 2 0\n0 0 0\n1 0 0\nnan 1 0\n0 0 1\n3 0 1 2\n3 0 1 3\n")
    return {
        "not-a-mesh": (d / "notes.ply", "not a readable PLY mesh"),
        "point-cloud": (d / "cloud.ply", "point cloud"),
        "empty": (d / "empty.off", "the file is empty"),
        "nan": (d / "nan.off", "not finite numbers"),
        "missing": (d / "missing.obj", "no such file"),
    }


@pytest.mark.parametrize("case", ["not-a-mesh", "point-cloud", "empty", "nan", "missing"])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, case):
    src, expected = _bad_inputs(tmp_path)[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    outdir = tmp_path / "out"
    outdir.mkdir()
    rc, stdout, stderr = run_cli(capsys, src, "-o", outdir / "o.ply", "--labels", outdir / "o.seg",
                                 "--segments-dir", outdir / "segs", "--device", "cpu")
    assert_one_line_error(rc, stderr, expected, src.name)
    assert stdout == ""
    assert list(outdir.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "out"])


@pytest.mark.parametrize("args, expected", [
    (["-o", "{d}/o.obj"], "give a name ending in .ply"),
    (["-o", "{d}/nofolder/o.ply"], "does not exist"),
    (["-o", "{d}/o.ply", "--labels", "{d}/o.ply"], "give a name ending in .seg"),
    (["-o", "{d}/o.ply", "--labels", "{d}/o.seg", "--segments-dir", "{d}/nofolder/segs"], "does not exist"),
    (["-o", "{d}/o.ply", "--labels", "{d}/nofolder/o.seg"], "does not exist"),
    (["-o", "{d}/o.ply", "--segments-dir", "{d}/taken"], "holds other files"),
    (["-o", "{d}/o.ply", "--segments-dir", "{d}/afile"], "give a folder"),
])
def test_bad_outputs_are_refused_before_any_work(tmp_path, capsys, args, expected):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    (tmp_path / "afile").write_text("mine")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    rc, _, stderr = run_cli(capsys, SAMPLES / "dumbbell.ply", *[a.format(d=tmp_path) for a in args],
                            "--device", "cpu")
    assert_one_line_error(rc, stderr, expected)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("args, expected", [
    (["--k", "0"], "argument --k: k must lie in [1, 1000], not 0"),
    (["--k", "many"], "k must be a whole number or 'auto', not 'many'"),
    (["--delta", "1.5"], "delta must lie in [0, 1], not 1.5"),
    (["--epsilon", "-1"], "epsilon must lie in [0, 1], not -1"),
    (["--apsp", "magic"], "apsp must be one of auto, gpu-sym, gpu, cpu, cpu-mt, not 'magic'"),
    (["--max-faces", "2"], "max-faces must lie in [200, 10000000], not 2"),
    (["--params", "{d}/missing.json"], "no such preset file"),
])
def test_bad_parameters(tmp_path, capsys, args, expected):
    rc, _, err = run_cli(capsys, SAMPLES / "dumbbell.ply", "-o", tmp_path / "o.ply",
                         *[a.format(d=tmp_path) for a in args])
    assert_one_line_error(rc, err, expected)
    assert list(tmp_path.iterdir()) == []


# ids avoid the bare keyword "gpu", which conftest reads as the gpu marker
@pytest.mark.parametrize("method", ["gpu-sym", "gpu"], ids=["apsp-gpu-sym", "apsp-gpu-dense"])
def test_gpu_apsp_on_the_cpu_is_one_clear_line(tmp_path, capsys, method):
    """Runs everywhere: --device cpu makes a GPU method impossible, GPU host or not."""
    rc, _, stderr = run_cli(capsys, SAMPLES / "dumbbell.ply", "-o", tmp_path / "o.ply", "--apsp", method,
                            "--device", "cpu")
    assert_one_line_error(rc, stderr, f"APSP method {method} runs on a CUDA GPU", "cpu-mt")
    assert list(tmp_path.iterdir()) == []


def test_too_large_suggests_max_faces(tmp_path, capsys, monkeypatch):
    from gpu_kernels.mesh.segment import MeshTooLargeError

    def too_large(*_a, **_k):
        raise MeshTooLargeError(250_000, 23_456, "cpu")

    monkeypatch.setattr(seg_lib, "segment_mesh", too_large)
    rc, stdout, stderr = run_cli(capsys, SAMPLES / "dumbbell.ply", "-o", tmp_path / "o.ply",
                                 "--labels", tmp_path / "o.seg", "--device", "cpu", "-q")
    assert_one_line_error(rc, stderr, "250,000 faces", "rerun with --max-faces 22000")
    assert list(tmp_path.iterdir()) == []


def test_a_failing_write_removes_the_outputs_already_written(tmp_path, capsys, monkeypatch):
    from app.io import mesh_io

    class FakeSeg:
        k = 2
        labels = np.zeros(3000, np.int32)
        face_colors = np.full((3000, 3), 200, np.uint8)
        cluster_colors = np.array([[1, 2, 3], [4, 5, 6]], np.uint8)
        fuzzy = np.zeros(3000, bool)
        memberships = np.eye(2, dtype=np.float32)[np.zeros(3000, int)]
        info = {}

        def cluster_table(self, areas):
            return []

    monkeypatch.setattr(seg_lib, "segment_mesh", lambda *a, **k: FakeSeg())

    def disk_full(*_a, **_k):
        raise OSError(28, "No space left on device", str(tmp_path / "segs"))

    monkeypatch.setattr(mesh_io, "write_segments", disk_full)
    rc, _, stderr = run_cli(capsys, SAMPLES / "dumbbell.ply", "-o", tmp_path / "o.ply", "--labels",
                            tmp_path / "o.seg", "--segments-dir", tmp_path / "segs", "--device", "cpu", "-q")
    assert_one_line_error(rc, stderr.lower(), "no space left on device")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- demo and pictures
def test_demo_writes_ply_seg_and_png(tmp_path):
    files = mesh_seg.demo(tmp_path, device=get_backend("cpu"), progress=None, names=("dumbbell",))
    names = sorted(p.name for p in files)
    assert names == ["dumbbell-parts.ply", "dumbbell-parts.png", "dumbbell-summary.txt", "dumbbell.seg"]
    for p in files:
        assert p.is_file() and p.stat().st_size > 0
    from PIL import Image

    img = np.asarray(Image.open(tmp_path / "dumbbell-parts.png").convert("RGB"))
    assert img.shape[0] > 100 and img.std() > 10  # not blank


def test_software_rasteriser_draws_the_colours(tmp_path):
    v, f = read_mesh(SAMPLES / "dumbbell.ply")
    colors = np.where((v[f].mean(axis=1)[:, 0] > 0)[:, None], [[230, 25, 75]], [[0, 130, 200]]).astype(np.uint8)
    img = render.rasterize(v, f, colors, size=(320, 240))
    assert img.shape == (240, 320, 3)
    red = (img[..., 0] > 120) & (img[..., 2] < 90)
    blue = (img[..., 2] > 90) & (img[..., 0] < 60)
    assert red.sum() > 500 and blue.sum() > 500
    assert (img[0, 0] == 255).all()  # background


def test_render_png_falls_back_without_opengl(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULAB_NO_OPENGL", "1")
    v, f = read_mesh(SAMPLES / "table.ply")
    out = render.render_png(tmp_path / "t.png", v, f, np.full((len(f), 3), 180, np.uint8), size=(200, 150))
    from PIL import Image

    assert Image.open(out).size == (200, 150)
    assert [p.name for p in tmp_path.iterdir()] == ["t.png"]


def _read_ply_faces(path):
    """Per-face properties of a binary PLY written by gpulab (independent little parser)."""
    raw = Path(path).read_bytes()
    end = raw.index(b"end_header\n") + len(b"end_header\n")
    header = raw[:end].decode("ascii").splitlines()
    nv = int(next(h for h in header if h.startswith("element vertex")).split()[2])
    nf = int(next(h for h in header if h.startswith("element face")).split()[2])
    face_props = header[header.index(next(h for h in header if h.startswith("element face"))) + 1:-1]
    assert face_props[0] == "property list uchar int vertex_indices", face_props
    names = [p.split()[-1] for p in face_props[1:]]
    types = {"uchar": "u1", "float": "<f4"}
    dt = np.dtype([("n", "u1"), ("idx", "<i4", (3,))] + [(n, types[p.split()[1]]) for n, p in zip(names, face_props[1:], strict=True)])
    return np.frombuffer(raw, dtype=dt, count=nf, offset=end + nv * 24), names


def test_exported_ply_has_one_flat_colour_per_part_and_the_certainty(tmp_path, capsys):
    out = tmp_path / "parts.ply"
    rc, _, err = run_cli(capsys, SAMPLES / "creature.ply", "-o", out, "--labels", tmp_path / "p.seg",
                         "--k", "7", "--device", "cpu", "-q")
    assert rc == 0, err
    rec, names = _read_ply_faces(out)
    assert names == ["red", "green", "blue", "quality"]
    rgb = np.c_[rec["red"], rec["green"], rec["blue"]]
    labels = read_seg(tmp_path / "p.seg")
    assert len(np.unique(rgb, axis=0)) == len(np.unique(labels)) == 7  # MeshLab can tell the parts apart
    for j in np.unique(labels):
        assert len(np.unique(rgb[labels == j], axis=0)) == 1
    q = rec["quality"]
    assert np.isfinite(q).all() and q.min() >= 0 and q.max() <= 1 and q.max() == 1
    np.testing.assert_array_equal(read_face_colors(out), rgb)  # the app's own reader agrees


def test_an_unwritable_segments_folder_fails_before_the_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(seg_lib, "segment_mesh", lambda *a, **k: pytest.fail("segmented anyway"))
    rc, _, err = run_cli(capsys, SAMPLES / "dumbbell.ply", "-o", tmp_path / "o.ply",
                         "--segments-dir", "/proc/gpulab-parts", "--device", "cpu", "-q")
    assert rc == 2 and "--segments-dir" in err and "/proc/gpulab-parts" in err
    assert ".part" not in err and ".new" not in err  # no temporary names
    assert len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_absurd_k_is_refused_with_one_line(tmp_path, capsys):
    rc, _, err = run_cli(capsys, SAMPLES / "dumbbell.ply", "-o", tmp_path / "o.ply", "--k", "900",
                         "--device", "cpu", "-q")
    assert_one_line_error(rc, err, "k = 900", "faces per part")
