"""app.tools.base.samples_in: the sample lists of the tabs, the demo and the CLI."""

from __future__ import annotations

from app.tools import base


def test_double_extensions_and_the_first_stems(tmp_path, monkeypatch):
    d = tmp_path / "samples" / "echo"
    d.mkdir(parents=True)
    for n in ("b.nii.gz", "a.NII.GZ", "lv.nii.gz", "notes.gz", "x.nii", "sub.nii.gz"):
        (d / n).write_bytes(b"x")
    (d / "sub.nii.gz").unlink()
    (d / "sub.nii.gz").mkdir()                      # a folder is never a sample
    monkeypatch.setattr(base, "resources_dir", lambda: tmp_path)
    got = [p.name for p in base.samples_in("echo", (".nii.gz", ".nii"), first=("lv",))]
    assert got == ["lv.nii.gz", "a.NII.GZ", "b.nii.gz", "x.nii"]
    assert base.samples_in("none", (".nii",)) == []
