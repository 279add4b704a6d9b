"""No input is ever destroyed and no header reads outside its folder (issue 18, cases 1-3).

Every tool that writes a folder (mvs -o, mvs-synth, echo-synth, mesh --segments-dir, demo --out,
batch --out) refuses a folder holding files gpulab did not write; one it wrote earlier is
replaced, and nothing else is removed. Every reader whose file names other files (MetaImage,
NRRD, Middlebury and COLMAP scenes, scene masks) stays inside that file's folder.
"""

from __future__ import annotations

import os
import pathlib
import shutil

import numpy as np
import pytest

from app.cli import main
from app.io import atomic
from app.io.atomic import OUTPUT_MARKER, OutputPathError, atomic_output_dir, check_output_dir
from app.io.paths import ALLOW_ENV, OutsidePathError, contained_path
from app.tools.base import resources_dir

MVS_SAMPLE = resources_dir() / "samples" / "mvs"


def _tree(folder: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- output folders
def test_a_folder_of_user_files_is_refused_and_kept(tmp_path):
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("precious")
    with pytest.raises(OutputPathError, match="gpulab did not write"):
        check_output_dir(user)
    with pytest.raises(OutputPathError, match="notes.txt"):
        with atomic_output_dir(user) as d:
            (d / "x").write_text("x")
    assert _tree(user) == {"notes.txt": b"precious"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no temporary folder left


def test_an_empty_folder_and_an_earlier_output_are_accepted(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with atomic_output_dir(empty) as d:
        (d / "a.ply").write_text("1")
    assert (empty / OUTPUT_MARKER).is_file()
    with atomic_output_dir(empty) as d:  # gpulab's own folder: replaced
        (d / "b.ply").write_text("2")
    assert sorted(p.name for p in empty.iterdir()) == [OUTPUT_MARKER, "b.ply"]


def test_a_user_file_added_to_a_gpulab_folder_protects_it(tmp_path):
    out = tmp_path / "out"
    with atomic_output_dir(out) as d:
        (d / "a.ply").write_text("1")
    (out / "my-analysis.csv").write_text("keep me")
    with pytest.raises(OutputPathError, match="my-analysis.csv"):
        check_output_dir(out)
    assert (out / "my-analysis.csv").read_text() == "keep me"


def test_a_forged_or_broken_marker_does_not_unlock_a_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    (out / OUTPUT_MARKER).write_text("not json")
    with pytest.raises(OutputPathError):
        check_output_dir(out)
    (out / OUTPUT_MARKER).write_text('{"files": ["other.ply"]}')
    with pytest.raises(OutputPathError, match="thesis.tex"):
        check_output_dir(out)


def test_a_user_file_appearing_during_the_run_stops_the_swap(tmp_path, monkeypatch):
    out = tmp_path / "out"
    with atomic_output_dir(out) as d:
        (d / "a.ply").write_text("1")
    with pytest.raises(OutputPathError):
        with atomic_output_dir(out) as d:
            (d / "b.ply").write_text("2")
            (out / "late.txt").write_text("user")
    assert (out / "late.txt").read_text() == "user" and (out / "a.ply").is_file()


@pytest.mark.skipif(not (MVS_SAMPLE / "synth_par.txt").is_file(), reason="the bundled MVS sample is missing")
@pytest.mark.parametrize("target", ["input", "parent"])
def test_mvs_never_empties_its_input_folder_or_a_parent(tmp_path, capsys, target):
    """Issue 18 case 1: `gpulab mvs mvsin/synth_par.txt -o mvsin` used to delete the images."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(MVS_SAMPLE, work / "mvsin")
    (work / "other.txt").write_text("user")
    before = _tree(work)
    out = work / "mvsin" if target == "input" else work
    rc = main(["mvs", str(work / "mvsin" / "synth_par.txt"), "-o", str(out), "--views", "0,1",
               "--max-iter", "3", "-q", "--device", "cpu"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "gpulab did not write" in err and len(err.strip().splitlines()) == 1
    assert _tree(work) == before


@pytest.mark.parametrize("cmd", [
    ["mvs-synth", "--views", "2", "--size", "32x24"],
    ["echo-synth", "--size", "16", "--frames", "2"],
])
def test_synthetic_writers_refuse_a_folder_of_user_files(tmp_path, capsys, cmd):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("user")
    rc = main([*cmd, "-o", str(out), "-q"])
    assert rc == 2
    assert capsys.readouterr().err.startswith("gpulab: error:")
    assert _tree(out) == {"keep.txt": b"user"}


def test_demo_refuses_a_folder_of_user_files(tmp_path, capsys):
    out = tmp_path / "docs"
    out.mkdir()
    (out / "mesh").mkdir()
    (out / "mesh" / "dumbbell-parts.ply").write_text("the user's own file of the same name")
    rc = main(["demo", "--out", str(out), "--only", "mesh", "-q", "--device", "cpu"])
    assert rc == 2
    assert "gpulab did not write" in capsys.readouterr().err
    assert _tree(out) == {"mesh/dumbbell-parts.ply": b"the user's own file of the same name"}


def test_segments_dir_keeps_user_files_and_replaces_its_own(tmp_path, capsys):
    mesh = resources_dir() / "samples" / "dumbbell.ply"
    if not mesh.is_file():
        pytest.skip("the bundled dumbbell sample is missing")
    seg = tmp_path / "parts"
    args = ["mesh-seg", str(mesh), "-o", str(tmp_path / "d.ply"), "--k", "2", "--segments-dir", str(seg),
            "-q", "--device", "cpu"]
    assert main(args) == 0
    first = sorted(p.name for p in seg.iterdir())
    assert main(args) == 0  # its own earlier output (marker included) is replaced
    assert sorted(p.name for p in seg.iterdir()) == first
    (seg / "notes.txt").write_text("user")
    assert main(args) == 2
    assert (seg / "notes.txt").read_text() == "user"
    capsys.readouterr()


# --------------------------------------------------------------------------- batch
def test_batch_refuses_an_out_folder_that_holds_its_inputs_or_user_files(tmp_path):
    from app.batch import check_batch_out
    from app.errors import UserError

    src = tmp_path / "in"
    src.mkdir()
    (src / "a.png").write_bytes(b"x")
    (src / "a-labels.png").write_bytes(b"a user's input with an output's name")
    with pytest.raises(UserError, match="holds the input"):
        check_batch_out(src, [src])
    with pytest.raises(UserError, match="holds the input"):
        check_batch_out(tmp_path, [src / "a.png"])
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.pdf").write_bytes(b"x")
    with pytest.raises(UserError, match="report.pdf"):
        check_batch_out(other, [src])
    check_batch_out(tmp_path / "new", [src])  # a new folder is fine


def test_batch_publish_never_replaces_a_file_it_did_not_write(tmp_path):
    from app.batch import _publish
    from app.errors import UserError

    out = tmp_path / "out"
    out.mkdir()
    (out / "x-labels.png").write_bytes(b"user")
    stage = out / ".gpulab-staging" / "x.1"
    stage.mkdir(parents=True)
    (stage / "x-labels.png").write_bytes(b"new")
    with pytest.raises(UserError, match="gpulab did not write"):
        _publish(stage, out, [stage / "x-labels.png"])
    assert (out / "x-labels.png").read_bytes() == b"user"


@pytest.mark.slow
def test_batch_reruns_never_read_their_outputs_or_touch_inputs(tmp_path, capsys):
    pytest.importorskip("distributed")
    from PIL import Image

    src = tmp_path / "photos"
    src.mkdir()
    rng = np.random.default_rng(0)
    for n in ("a", "b"):
        Image.fromarray(rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)).save(src / f"{n}.png")
    before = _tree(src)
    out = tmp_path / "out"
    for _ in range(2):
        rc = main(["batch", "imseg", str(src), "--out", str(out), "--workers", "1", "--gpus", "none", "-q"])
        assert rc == 0
        outputs = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
        assert all(not n.startswith(("a-labels-", "b-labels-")) for n in outputs), outputs
    assert _tree(src) == before
    # the folder given as both input and output is refused before any work
    rc = main(["batch", "imseg", str(src), "--out", str(src), "--workers", "1", "--gpus", "none", "-q"])
    assert rc == 2
    assert _tree(src) == before
    # a killed batch's published files are still known as its own (journal): resume works
    (out / "manifest.jsonl").unlink()
    rc = main(["batch", "imseg", str(src), "--out", str(out), "--workers", "1", "--gpus", "none", "-q"])
    assert rc == 0
    capsys.readouterr()


# --------------------------------------------------------------------------- headers and scene files
def _mhd(path: pathlib.Path, datafile: str) -> pathlib.Path:
    path.write_text(f"ObjectType = Image\nNDims = 3\nDimSize = 8 8 8\nElementType = MET_UCHAR\n"
                    f"ElementDataFile = {datafile}\n")
    return path


def _nhdr(path: pathlib.Path, datafile: str, key: str = "data file") -> pathlib.Path:
    path.write_text(f"NRRD0004\ntype: uint8\ndimension: 3\nsizes: 8 8 8\nencoding: raw\n{key}: {datafile}\n\n")
    return path


@pytest.fixture
def secret(tmp_path):
    d = tmp_path / "elsewhere"
    d.mkdir()
    s = d / "secret.raw"
    s.write_bytes(bytes(range(256)) * 2)
    return s


@pytest.mark.medical
@pytest.mark.parametrize("make", [_mhd, _nhdr, lambda p, f: _nhdr(p, f, "datafile")])
@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink"])
def test_a_header_cannot_read_outside_its_folder(tmp_path, secret, make, how, monkeypatch, capsys):
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    hdr_dir = tmp_path / "study"
    hdr_dir.mkdir()
    if how == "absolute":
        name = str(secret)
    elif how == "dotdot":
        name = "../elsewhere/secret.raw"
    else:
        (hdr_dir / "link.raw").symlink_to(secret)
        name = "link.raw"
    ext = ".mhd" if make is _mhd else ".nhdr"
    hdr = make(hdr_dir / f"evil{ext}", name)
    from app.io.volume_io import VolumeIOError, read_volume

    with pytest.raises(VolumeIOError, match="outside the folder"):
        read_volume(hdr)
    warped = tmp_path / "w.npy"
    rc = main(["echo", str(hdr), str(hdr), "-o", str(tmp_path / "u.npy"), "--warped", str(warped), "-q",
               "--device", "cpu"])
    assert rc == 2 and not warped.exists()
    assert "outside the folder" in capsys.readouterr().err


@pytest.mark.medical
def test_a_header_data_file_inside_its_folder_still_reads(tmp_path):
    from app.io.volume_io import read_volume

    d = tmp_path / "study"
    (d / "raw").mkdir(parents=True)
    (d / "raw" / "v.raw").write_bytes(np.arange(512, dtype=np.uint8).tobytes())
    vol = read_volume(_mhd(d / "ok.mhd", "raw/v.raw"))
    assert np.asarray(vol.data).shape == (8, 8, 8)
    assert int(np.asarray(vol.data)[0, 0, 5]) == 5


@pytest.mark.medical
def test_the_user_can_allow_outside_paths(tmp_path, secret, monkeypatch):
    from app.io.volume_io import read_volume

    monkeypatch.setenv(ALLOW_ENV, "1")
    hdr = _mhd(tmp_path / "ok.mhd", str(secret))
    assert np.asarray(read_volume(hdr).data).shape == (8, 8, 8)


@pytest.mark.parametrize("name", ["../outside.png", "/etc/hostname", "sub/../../outside.png"])
def test_a_scene_file_cannot_name_images_outside_its_folder(tmp_path, name, monkeypatch):
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    from app.io.scene_io import SceneReadError, read_middlebury

    scene = tmp_path / "scene"
    scene.mkdir()
    from PIL import Image

    Image.new("RGB", (8, 8)).save(tmp_path / "outside.png")
    cam = " ".join(["100 0 4 0 100 4 0 0 1", "1 0 0 0 1 0 0 0 1", "0 0 0"])
    Image.new("RGB", (8, 8)).save(scene / "inside.png")
    (scene / "x_par.txt").write_text(f"2\ninside.png {cam}\n{name} {cam}\n")
    with pytest.raises(SceneReadError, match="outside the folder"):
        read_middlebury(scene / "x_par.txt")


def test_contained_path_rules(tmp_path, monkeypatch):
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    assert contained_path(tmp_path, "a/b.raw") == (tmp_path / "a" / "b.raw").resolve()
    for bad in ("/etc/passwd", "..", "../x", "a/../../x", "a\x00b"):
        with pytest.raises(OutsidePathError):
            contained_path(tmp_path, bad)


def test_marker_lists_only_names(tmp_path):
    with atomic_output_dir(tmp_path / "o") as d:
        (d / "sub").mkdir()
        (d / "sub" / "f").write_text("x")
    assert atomic.marker_names(tmp_path / "o") == {"sub"}
    assert os.path.isfile(tmp_path / "o" / OUTPUT_MARKER)
