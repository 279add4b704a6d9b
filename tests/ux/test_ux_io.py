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


def test_an_output_onto_an_input_is_refused_however_spelled(tmp_path):
    # the rule the window's Save result must share with the CLI: in the walkthrough, File ▸ Save
    # result as… onto the opened coffee.jpg overwrote the input (README: "never an input")
    import os

    from app.io.atomic import OutputPathError, check_not_an_input

    src = tmp_path / "coffee.jpg"
    src.write_bytes(b"jpeg")
    (tmp_path / "sub").mkdir()
    os.symlink(src, tmp_path / "link.jpg")
    for spelled in (src, tmp_path / "sub" / ".." / "coffee.jpg", tmp_path / "link.jpg"):
        with pytest.raises(OutputPathError) as e:
            check_not_an_input(spelled, [None, tmp_path / "other.png", src])
        assert "would overwrite the input coffee.jpg" in str(e.value)
    assert check_not_an_input(tmp_path / "labels.png", [src]) == tmp_path / "labels.png"
    assert src.read_bytes() == b"jpeg"


def test_the_cli_names_the_option_and_the_input(tmp_path):
    from app.commands.common import check_outputs
    from app.errors import UserError
    from app.tools import imseg

    src = tmp_path / "a.png"
    src.write_bytes(b"png")
    with pytest.raises(UserError) as e:
        check_outputs([src], [("-o", src, imseg.TOOL.export("labels"))])
    assert str(e.value).startswith("-o ") and "would overwrite the input a.png" in str(e.value)
