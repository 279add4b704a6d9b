"""Write and open errors name what the user chose (session 8's window walkthrough, L1-L4)."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from app.io import atomic, flow_io, mesh_io
from gpu_kernels.errors import InputError


def _readonly_dir(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(stat.S_IRUSR | stat.S_IXUSR)
    probe = d / "probe"
    try:                      # root writes anyway: the case cannot be made
        probe.write_bytes(b"")
    except OSError:
        return d
    probe.unlink()
    d.chmod(stat.S_IRWXU)
    pytest.skip("this user can write into a read-only folder (root): no write error to check")


def test_atomic_write_names_the_target_not_the_temporary_file(tmp_path):
    d = _readonly_dir(tmp_path)
    try:
        with pytest.raises(PermissionError) as e, atomic.atomic_write(d / "parts.ply", "wb") as f:
            f.write(b"x")
        assert e.value.filename == str(d / "parts.ply")
        assert ".part" not in str(e.value)
        assert os.listdir(d) == []
    finally:
        d.chmod(stat.S_IRWXU)


def test_a_flow_write_error_names_the_whole_path(tmp_path):
    target = tmp_path / "missing" / "x.flo"
    with pytest.raises(flow_io.FlowFileError) as e:
        flow_io.write_flow(target, np.zeros((4, 5, 2), np.float32))
    assert str(target) in str(e.value)


@pytest.mark.parametrize("check", ["file", "segments"])
def test_a_file_where_the_folder_should_be_is_called_a_file(tmp_path, check):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    with pytest.raises(InputError if check == "segments" else atomic.OutputPathError) as e:
        if check == "file":
            atomic.check_output_file(afile / "x.ply")
        else:
            mesh_io.check_segments_dir(afile / "parts")
    msg = str(e.value)
    assert "is a file, not a folder" in msg and "does not exist" not in msg


@pytest.mark.parametrize("name", ["notes.txt", "scan.ply", "noext"])
def test_flow_opens_a_non_image_with_the_unsupported_type_message(tmp_path, name):
    from app.tools import flow_data

    p = tmp_path / name
    p.write_text("hello")
    (tmp_path / "b.png").write_bytes(b"")   # a neighbour that a partner search would find
    with pytest.raises(InputError) as e:
        flow_data.load(p)
    msg = str(e.value)
    assert "unsupported image type" in msg and "next image" not in msg


def test_atomic_write_renames_a_temporary_file_error_to_the_target(tmp_path, monkeypatch):
    """The same as above for any user (root included): the temporary file cannot be made."""
    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".parts.ply.host.1234.part"))

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refuse)
    with pytest.raises(PermissionError) as e, atomic.atomic_write(tmp_path / "parts.ply", "wb"):
        pass
    assert e.value.filename == str(tmp_path / "parts.ply") and e.value.errno == 13


@pytest.mark.parametrize("name", ["m" * 240 + ".ply", "\u00e9" * 125 + ".ply"])   # 244 and 254 bytes
def test_a_long_but_valid_file_name_is_written(tmp_path, name):
    # before: the hidden temporary file ".NAME.HOST-PID.xxxxxxxx.part" was longer than a file name
    # may be: "File name too long" (since f2d3dd0 said of the user's valid name) and nothing written
    target = tmp_path / name
    with atomic.atomic_write(target, "wb") as f:
        f.write(b"x")
    assert target.read_bytes() == b"x"
    assert os.listdir(tmp_path) == [name]


def test_a_long_names_leftover_of_a_killed_run_is_still_found(tmp_path, monkeypatch):
    # the cut NAME part keeps remove_stale_parts' per-output filter working for long names
    import subprocess
    import sys

    name = "m" * 240 + ".ply"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    monkeypatch.setattr(atomic.os, "getpid", lambda: int(dead))
    leftover = atomic._part_prefix(name) + "abcdefgh.part"
    monkeypatch.undo()
    (tmp_path / leftover).write_bytes(b"half")
    assert len(leftover.encode()) <= 255
    assert atomic.remove_stale_parts(tmp_path, name) == [leftover]


def test_a_long_but_valid_folder_name_is_written_and_replaced(tmp_path):
    # the folder outputs (one mesh per segment): the same cut for the temporary and the
    # moved-aside folders
    target = tmp_path / ("s" * 240)
    for text in ("first", "second"):
        with atomic.atomic_output_dir(target, overwrite=True) as d:
            (d / "a.txt").write_text(text)
        assert (target / "a.txt").read_text() == text
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_segments_replace_a_folder_with_a_long_but_valid_name(tmp_path):
    # before: replacing a 250-byte segments folder staged it as ".NAME.PID.new" (over NAME_MAX):
    # "File name too long" naming the hidden staging folder
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], float)
    f = np.array([[0, 1, 2], [1, 3, 2]])
    target = tmp_path / ("s" * 250)
    mesh_io.write_segments(target, v, f, np.array([0, 1]))
    written = mesh_io.write_segments(target, v, f, np.array([0, 0]))
    assert [p.name for p in written] == [p.name for p in target.iterdir() if p.suffix == ".ply"]
    assert len(written) == 1 and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_atomic_output_dir_renames_a_temporary_folder_error_to_the_target(tmp_path, monkeypatch):
    # the folder outputs (segments, MVS maps, echo studies) as atomic_write: the error names the
    # folder the user chose, not ".parts.HOST-PID.xxxxxxxx.part"
    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".parts.host-1.abcdefgh.part"))

    monkeypatch.setattr(atomic.tempfile, "mkdtemp", refuse)
    with pytest.raises(PermissionError) as e, atomic.atomic_output_dir(tmp_path / "parts"):
        pass
    assert e.value.filename == str(tmp_path / "parts") and e.value.errno == 13


def test_a_volume_write_error_names_the_target(tmp_path, monkeypatch):
    # volume_io's own temporary file (libraries that pick the format from its name) as above
    from app.io import volume_io

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".v.nii.gz.host-1.abcdefgh.part.nii.gz"))

    monkeypatch.setattr(volume_io.tempfile, "mkstemp", refuse)
    with pytest.raises(PermissionError) as e, volume_io._atomic_named(tmp_path / "v.nii.gz"):
        pass
    assert e.value.filename == str(tmp_path / "v.nii.gz")
