"""A corrupt image's one-line error says "corrupt" once (review B #5, session 10: "the file is corrupt or
not a PNG file (the file is corrupt)")."""

from __future__ import annotations

import pytest

from app.io.image_io import ImageReadError, read_image


def test_a_corrupt_png_is_called_corrupt_once(tmp_path):
    p = tmp_path / "bad.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 50)
    with pytest.raises(ImageReadError) as e:
        read_image(p)
    msg = str(e.value)
    assert msg.startswith("bad.png: not a readable image") and "\n" not in msg
    assert msg.count("corrupt") == 1, msg
