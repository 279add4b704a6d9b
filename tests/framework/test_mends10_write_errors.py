"""Review B #6 (session 10): one cause, one wording, whichever writer meets it. A read-only file system and a
file where a folder should be were reported three ways ("…: cannot write (Read-only file system)", "the file
system is read-only while writing …: choose another output folder", "…: the folder … is not writable"); now
every writer and output check gives :func:`app.io.atomic.cannot_write`'s line: the path, the reason, what to do.
Checked through :func:`app.errors.user_message` (the line the window and the CLI show)."""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace

import numpy as np
import pytest

from app.errors import user_message
from app.io import atomic, depth_io, flow_io, image_io, labels_io, mesh_io, volume_io

V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
F = np.array([[0, 1, 2]])
WRITERS = {
    "flow .flo": ("x.flo", lambda p: flow_io.write_flow(p, np.zeros((4, 5, 2), np.float32))),
    "flow KITTI": ("x.png", lambda p: flow_io.write_flow(p, np.zeros((4, 5, 2), np.float32))),
    "labels": ("x.png", lambda p: labels_io.write_labels(p, np.zeros((4, 5), np.int32))),
    "region table": ("x.csv", lambda p: labels_io.write_region_table(p, {"label": np.arange(2), "area": np.ones(2)})),
    "picture": ("x.png", lambda p: image_io.write_image(p, np.zeros((4, 5, 3), np.uint8))),
    "depth .pfm": ("x.pfm", lambda p: depth_io.write_depth(p, np.zeros((4, 5), np.float32))),
    "depth .npy": ("x.npy", lambda p: depth_io.write_depth(p, np.zeros((4, 5), np.float32))),
    "mesh": ("x.ply", lambda p: mesh_io.write_mesh(p, V, F)),
    "volume": ("x.nii.gz", lambda p: volume_io.write_volume(p, np.zeros((3, 4, 5), np.float32))),
    "lines": ("x.txt", lambda p: atomic.write_lines(p, ["a"])),
}


def _line(write, target) -> str:
    with pytest.raises(Exception) as e:  # noqa: PT011 - InputError or OSError: the line is what counts
        write(target)
    return user_message(e.value)


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_file_where_the_folder_should_be(tmp_path, name):
    afile = tmp_path / "notes.txt"
    afile.write_text("a file")
    leaf, write = WRITERS[name]
    target = afile / "out" / leaf
    assert _line(write, target) == f"{target}: {afile} is a file, not a folder; choose another folder"
    assert os.listdir(tmp_path) == ["notes.txt"]


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_read_only_file_system_at_the_write(tmp_path, monkeypatch, name):
    def read_only(*a, **k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(atomic.tempfile, "mkstemp", read_only)
    leaf, write = WRITERS[name]
    target = tmp_path / leaf
    assert _line(write, target) == f"{target}: the file system is read-only; choose another folder"
    assert os.listdir(tmp_path) == []


def test_a_read_only_file_system_in_the_checks(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic.os, "access", lambda *a, **k: False)
    monkeypatch.setattr(atomic.os, "statvfs", lambda p: SimpleNamespace(f_flag=os.ST_RDONLY))
    monkeypatch.setattr(mesh_io.os, "access", lambda *a, **k: False)
    want = "{}: the file system is read-only; choose another folder"
    for check, target in ((atomic.check_output_file, tmp_path / "x.ply"), (atomic.check_output_dir, tmp_path / "o"),
                          (mesh_io.check_segments_dir, tmp_path / "parts")):
        with pytest.raises(Exception) as e:  # noqa: PT011
            check(target)
        assert user_message(e.value) == want.format(target), check
    monkeypatch.setattr(atomic.os, "statvfs", lambda p: SimpleNamespace(f_flag=0))   # permissions, not the mount
    with pytest.raises(atomic.OutputPathError) as e:
        atomic.check_output_file(tmp_path / "x.ply")
    assert str(e.value) == f"{tmp_path / 'x.ply'}: the folder {tmp_path} is not writable; choose another folder"
