"""Messages a user meets when opening the wrong kind of file (found in the session-6 walkthrough)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.io.scene_io import SceneReadError, read_scene

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "mvs"


def test_an_image_opened_as_a_scene_says_which_file_to_open(tmp_path):
    # before: read as a Middlebury camera file ("not a text file (Middlebury *_par.txt expected)")
    shutil.copy(SAMPLE / "view000.jpg", tmp_path / "view000.jpg")
    shutil.copy(SAMPLE / "synth_par.txt", tmp_path / "synth_par.txt")
    with pytest.raises(SceneReadError) as e:
        read_scene(tmp_path / "view000.jpg")
    msg = str(e.value)
    assert "view000.jpg is an image, not a scene" in msg and "open synth_par.txt" in msg
    assert "\n" not in msg


def test_a_text_file_with_an_image_name_is_not_parsed_as_cameras(tmp_path):
    # before: "notimage.png line 1: expected an image name and 21 numbers ..., got 2 fields"
    (tmp_path / "notimage.png").write_text("hello world\n")
    with pytest.raises(SceneReadError) as e:
        read_scene(tmp_path / "notimage.png")
    assert "is an image, not a scene" in str(e.value) and "*_par.txt" in str(e.value)
    assert "21 numbers" not in str(e.value)


def test_a_par_file_still_reads():
    scene = read_scene(SAMPLE / "synth_par.txt")
    assert scene.n_views == 12
