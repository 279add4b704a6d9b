"""Atomic output: a result file exists whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.io.atomic import OUTPUT_MARKER, atomic_output_dir, atomic_write
from gpu_kernels.jobs import Cancelled


def test_atomic_write_text_and_binary(tmp_path):
    with atomic_write(tmp_path / "a.txt", "w") as f:
        f.write("héllo\n")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo\n"
    with atomic_write(tmp_path / "b.bin") as f:
        f.write(b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.bin"]


def test_nothing_appears_until_the_block_ends(tmp_path):
    target = tmp_path / "out.ply"
    with atomic_write(target) as f:
        f.write(b"partial")
        assert not target.exists()
    assert target.read_bytes() == b"partial"


@pytest.mark.parametrize("exc", [RuntimeError("boom"), Cancelled(), KeyboardInterrupt()])
def test_exception_leaves_no_file_and_no_temp(tmp_path, exc):
    target = tmp_path / "out.seg"
    with pytest.raises(type(exc)):
        with atomic_write(target, "w") as f:
            f.write("0\n1\n")
            raise exc
    assert list(tmp_path.iterdir()) == []


def test_failure_keeps_the_previous_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(Cancelled):
        with atomic_write(target, "w") as f:
            f.write("new, half written")
            raise Cancelled()
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_writing_by_name_for_libraries_that_take_a_path(tmp_path):
    target = tmp_path / "mesh.ply"
    with atomic_write(target) as f:
        f.close()
        Path(f.name).write_bytes(b"ply\n")
    assert target.read_bytes() == b"ply\n"


def test_new_file_gets_normal_permissions(tmp_path):
    target = tmp_path / "x.txt"
    with atomic_write(target, "w") as f:
        f.write("x")
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        with atomic_write(tmp_path / "nope" / "x.txt", "w"):
            pass
    assert e.value.filename == str(tmp_path / "nope")


def test_read_modes_are_refused(tmp_path):
    with pytest.raises(ValueError):
        with atomic_write(tmp_path / "x", "r"):
            pass


def test_output_dir_appears_complete(tmp_path):
    target = tmp_path / "segments"
    with atomic_output_dir(target) as d:
        (d / "part0.ply").write_text("a")
        (d / "part1.ply").write_text("b")
        assert not target.exists()
    assert sorted(p.name for p in target.iterdir()) == [OUTPUT_MARKER, "part0.ply", "part1.ply"]
    assert [p.name for p in tmp_path.iterdir()] == ["segments"]


def test_output_dir_failure_leaves_nothing_and_keeps_old(tmp_path):
    target = tmp_path / "segments"
    with atomic_output_dir(target) as d:  # an earlier gpulab output
        (d / "old.ply").write_text("old")
    with pytest.raises(Cancelled):
        with atomic_output_dir(target) as d:
            (d / "new.ply").write_text("new")
            raise Cancelled()
    assert sorted(p.name for p in target.iterdir()) == [OUTPUT_MARKER, "old.ply"]
    assert [p.name for p in tmp_path.iterdir()] == ["segments"]
    with atomic_output_dir(target) as d:
        (d / "new.ply").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == [OUTPUT_MARKER, "new.ply"]
    assert [p.name for p in tmp_path.iterdir()] == ["segments"]
