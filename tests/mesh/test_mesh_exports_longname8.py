"""A segments folder with a long but valid name (reviewer B, session 8, F3): the export's
pre-flight probe folder ``.NAME.check-xxxxxxxx`` is cut as ``app.io.atomic``'s temporary names
are, so a 250-byte folder name is not refused with "cannot create a folder in ...". CPU only."""

from __future__ import annotations

import pytest

from app.tools import mesh_seg_exports as E


@pytest.mark.parametrize("name", ["s" * 250, "é" * 125, "d" * 255], ids=["ascii-250", "utf8-250", "ascii-255"])
def test_a_long_valid_segments_folder_name_passes_the_check(tmp_path, name):
    target = tmp_path / name
    assert len(target.name.encode()) in (250, 255)
    assert E.check_segments_dir(target) == target
    assert list(tmp_path.iterdir()) == []          # the probe folder is gone again


def test_a_folder_that_cannot_be_made_is_still_refused_in_one_line(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(Exception) as info:
        E.check_segments_dir(afile / ("s" * 250))
    assert "\n" not in str(info.value) and "afile" in str(info.value)
