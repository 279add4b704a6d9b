"""Session 9, reviewer B: an OSError whose text gpulab wrote keeps its case in the user's line.

``app.errors.user_message`` lower-cases the system's own text ("No such file or directory" ->
"no such file or directory"). Since d6916dd an output path with a file further up fails with
the blocking file's name first ("Notes.txt is a file, not a folder"), and lower-casing that named
another file ("notes.txt")."""

from __future__ import annotations

import errno
import os

from app.errors import classify, user_message
from app.io import atomic


def test_a_message_that_starts_with_a_file_name_keeps_the_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Notes.txt").write_text("a file, not a folder")
    try:
        with atomic.atomic_write("Notes.txt/out/x.txt", "w") as f:
            f.write("x")
    except OSError as exc:
        kind, msg = classify(exc, "Saving")
    else:
        raise AssertionError("the write went through a file")
    assert kind == "user"
    # (session 10, review B #6: the path first, then the reason, then what to do: app.io.atomic.cannot_write)
    assert msg == "Notes.txt/out/x.txt: Notes.txt is a file, not a folder; choose another folder"


def test_the_systems_own_text_is_still_lower_cased():
    for code in (errno.ENOENT, errno.EACCES, errno.ENOTDIR):
        exc = OSError(code, os.strerror(code), "/data/Scan.ply")
        text = os.strerror(code)
        assert user_message(exc) == f"{text[0].lower()}{text[1:]}: /data/Scan.ply"
    assert user_message(FileNotFoundError(2, "No such file or directory", "a.ply")) == \
        "no such file or directory: a.ply"
