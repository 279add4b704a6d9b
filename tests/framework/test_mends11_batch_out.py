"""A batch's output folder that cannot be written is refused with the one wording of every writer and
output check (:func:`app.io.atomic.cannot_write`: the path, the reason, what to do; review B #6, session 10).
Before session 11, ``run_batch`` said "--out X: the folder is not writable" for a read-only file system
too, and a folder it could not create came out as the OSError's own text."""

from __future__ import annotations

import errno
import os
import pathlib

import pytest

pytest.importorskip("distributed")

from app import batch  # noqa: E402
from app.errors import UserError  # noqa: E402
from app.io import atomic  # noqa: E402


def _refused(out: pathlib.Path) -> str:
    with pytest.raises(UserError) as e:
        batch.run_batch("imseg", [str(out.parent / "in.png")], out)
    return str(e.value)


def test_folder_without_write_permission(tmp_path, monkeypatch):
    out = tmp_path / "seg"
    real = os.access
    monkeypatch.setattr(batch.os, "access", lambda p, mode, *a, **k: False if pathlib.Path(p) == out and mode == os.W_OK
                        else real(p, mode, *a, **k))
    assert _refused(out) == f"--out {out}: the folder {out} is not writable; choose another folder"


def test_folder_on_a_read_only_file_system(tmp_path, monkeypatch):
    out = tmp_path / "seg"
    out.mkdir()
    real_access, real_statvfs = os.access, os.statvfs

    class _ReadOnly:
        def __init__(self, st):
            self._st = st
            self.f_flag = st.f_flag | os.ST_RDONLY

        def __getattr__(self, name):
            return getattr(self._st, name)

    monkeypatch.setattr(batch.os, "access", lambda p, mode, *a, **k: False if pathlib.Path(p) == out and mode == os.W_OK
                        else real_access(p, mode, *a, **k))
    monkeypatch.setattr(atomic.os, "statvfs", lambda p: _ReadOnly(real_statvfs(p)))
    assert _refused(out) == f"--out {out}: the file system is read-only; choose another folder"


@pytest.mark.parametrize(("err", "reason"), [(errno.EROFS, "the file system is read-only"),
                                             (errno.EACCES, "the folder {parent} is not writable")])
def test_folder_that_cannot_be_made(tmp_path, monkeypatch, err, reason):
    out = tmp_path / "seg"
    real_mkdir = pathlib.Path.mkdir

    def mkdir(self, *a, **k):
        if self == out:
            raise OSError(err, os.strerror(err), str(self))
        return real_mkdir(self, *a, **k)

    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
    msg = _refused(out)
    assert msg == f"--out {out}: {reason.format(parent=tmp_path)}; choose another folder"
    assert msg == atomic.cannot_write(f"--out {out}", reason.format(parent=tmp_path))
