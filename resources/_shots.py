"""What the screenshot scripts (screenshot-tabs.py, screenshot-live.py) share: letting the window
work for a while, and saving a capture as the README's 256-colour PNG. Not shipped (the wheel's
app.resources takes no .py file)."""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path


def fresh_settings() -> None:
    """Start the window from the defaults: a fresh settings folder for this run (unless
    ``GPULAB_SETTINGS_DIR`` is set), so that parameters remembered from an earlier session do not
    turn a scripted edit into no change (a 'same parameters as the pinned result' picture)."""
    import os

    if not os.environ.get("GPULAB_SETTINGS_DIR"):
        os.environ["GPULAB_SETTINGS_DIR"] = tempfile.mkdtemp(prefix="gpulab-shots-")


def pump(app, sec: float) -> None:
    """Process ``app``'s events for ``sec`` seconds."""
    t0 = time.time()
    while time.time() - t0 < sec:
        app.processEvents()
        time.sleep(0.02)


def to_pil(img):
    """A QPixmap/QImage as an RGB PIL image."""
    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "shot.png"
        img.save(str(raw))
        return Image.open(raw).convert("RGB")


def write(im, path: Path, fmt: str = "PNG") -> None:
    """``im`` (PIL) at ``path``: a 256-colour PNG, or a JPEG for ``fmt="JPEG"``; its size on stderr."""
    from PIL import Image

    buf = io.BytesIO()
    if fmt == "JPEG":
        im.save(buf, "JPEG", quality=88, optimize=True, progressive=True)
    else:
        im.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(buf, "PNG", optimize=True)
    path.write_bytes(buf.getvalue())
    print(f"{path.name}: {buf.tell() // 1024} KB", file=sys.stderr)
