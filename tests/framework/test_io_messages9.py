"""A file further up an output path (session 8's review): ``notes.txt/out/x.ply`` was refused with
"the folder notes.txt/out does not exist"; every output check and writer now names the file in the
way ("notes.txt is a file, not a folder"), in one line."""

from __future__ import annotations

import numpy as np
import pytest

from app.io import atomic, depth_io, flow_io, labels_io, mesh_io
from gpu_kernels.errors import InputError


@pytest.fixture
def afile(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("a file, not a folder")
    return p


def _one_line_naming(msg: str, afile) -> None:
    assert f"{afile} is a file, not a folder" in msg, msg
    assert "does not exist" not in msg and "\n" not in msg


DEEP = [("out",), ("out", "deeper", "still")]


@pytest.mark.parametrize("below", DEEP)
def test_the_output_checks_name_the_file_further_up(afile, below):
    folder = afile.joinpath(*below)
    with pytest.raises(atomic.OutputPathError) as e:
        atomic.check_output_file(folder / "x.ply")
    _one_line_naming(str(e.value), afile)
    with pytest.raises(atomic.OutputPathError) as e:
        atomic.check_output_dir(folder / "parts")
    _one_line_naming(str(e.value), afile)
    with pytest.raises(InputError) as e:
        mesh_io.check_segments_dir(folder / "parts")
    _one_line_naming(str(e.value), afile)


@pytest.mark.parametrize("below", DEEP)
def test_atomic_write_names_the_file_further_up_and_writes_nothing(afile, below):
    target = afile.joinpath(*below) / "x.txt"
    with pytest.raises(NotADirectoryError) as e, atomic.atomic_write(target, "w") as f:
        f.write("x")
    assert e.value.filename == str(target)
    assert e.value.strerror == f"{afile} is a file, not a folder"
    assert afile.read_text() == "a file, not a folder" and sorted(p.name for p in afile.parent.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("write", [
    lambda p: flow_io.write_flow(p / "x.flo", np.zeros((4, 5, 2), np.float32)),
    lambda p: labels_io.write_labels(p / "x.png", np.zeros((4, 5), np.int32)),
    lambda p: depth_io.write_depth(p / "x.pfm", np.zeros((4, 5), np.float32)),
    lambda p: atomic.write_lines(p / "x.txt", ["a"]),
], ids=["flow", "labels", "depth", "lines"])
def test_writers_name_the_file_further_up(afile, write):
    with pytest.raises((InputError, OSError)) as e:
        write(afile / "out")
    _one_line_naming(str(e.value), afile)


def test_a_missing_folder_is_still_called_missing(tmp_path):
    with pytest.raises(atomic.OutputPathError) as e:
        atomic.check_output_file(tmp_path / "new" / "x.ply")
    assert "does not exist" in str(e.value) and "is a file" not in str(e.value)
    with pytest.raises(FileNotFoundError) as e, atomic.atomic_write(tmp_path / "new" / "x.txt", "w"):
        pass
    assert e.value.filename == str(tmp_path / "new") and "does not exist" in e.value.strerror


def test_the_file_in_the_way_is_found_from_a_relative_path(afile, monkeypatch):
    monkeypatch.chdir(afile.parent)
    assert str(atomic.file_in_the_way("notes.txt/out/deeper")) == "notes.txt"
    assert atomic.file_in_the_way("out/deeper") is None
    assert atomic.file_in_the_way(".") is None
