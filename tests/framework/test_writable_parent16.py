"""One check of an output's parent folder (session 16: ``atomic.check_writable_parent``, used by the file
outputs and by the mesh tool's segments folder), each caller keeping its own error class and one-line message."""

from __future__ import annotations

import os

import pytest

from app.io import atomic, mesh_io
from app.io.mesh_formats import MeshIOError

CHECKS = [(atomic.check_output_file, "x.ply", atomic.OutputPathError),
          (mesh_io.check_segments_dir, "parts", MeshIOError)]


@pytest.mark.parametrize("check, name, error", CHECKS)
def test_a_missing_parent_is_one_line_of_the_callers_class(tmp_path, check, name, error):
    with pytest.raises(error) as info:
        check(tmp_path / "nope" / name)
    msg = str(info.value)
    assert "nope does not exist" in msg and "\n" not in msg, msg


@pytest.mark.parametrize("check, name, error", CHECKS)
def test_a_file_in_the_way_is_named(tmp_path, check, name, error):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(error, match="notes.txt is a file, not a folder"):
        check(tmp_path / "notes.txt" / "deeper" / name)


@pytest.mark.parametrize("check, name, error", CHECKS)
def test_a_read_only_parent_is_refused(tmp_path, monkeypatch, check, name, error):
    """(os.access says "not writable" for that folder: as root a chmod would not be enough.)"""
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if os.fspath(p) == os.fspath(ro)
                        and mode & os.W_OK else real(p, mode, *a, **k))
    with pytest.raises(error) as info:
        check(ro / name)
    assert "\n" not in str(info.value) and str(ro) in str(info.value), str(info.value)


def test_a_writable_parent_passes(tmp_path):
    atomic.check_writable_parent(tmp_path / "x.ply", "x.ply")
    assert mesh_io.check_segments_dir(tmp_path / "parts") == tmp_path / "parts"
