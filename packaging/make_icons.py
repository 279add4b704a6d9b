"""Render gpulab's icon (resources/icons/gpulab.svg) into the freedesktop icon sizes.

    python packaging/make_icons.py

Writes resources/icons/hicolor/<N>x<N>/apps/org.gpulab.gpulab.png for the usual sizes. The
PNGs are committed (they ship in the wheel and the bundle); rerun this after editing the SVG.
The bundle's hicolor/scalable/apps/org.gpulab.gpulab.svg is the SVG itself (build_bundle.sh).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_ID = "org.gpulab.gpulab"
SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSize, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    root = Path(__file__).resolve().parents[1] / "resources" / "icons"
    svg = root / "gpulab.svg"
    _app = QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        print(f"cannot render {svg}", file=sys.stderr)
        return 1
    for n in SIZES:
        img = QImage(QSize(n, n), QImage.Format.Format_ARGB32)
        img.fill(Qt.GlobalColor.transparent)
        p = QPainter(img)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(p)
        p.end()
        out = root / "hicolor" / f"{n}x{n}" / "apps" / f"{APP_ID}.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        if not img.save(str(out), "PNG"):
            print(f"cannot write {out}", file=sys.stderr)
            return 1
    print(f"wrote {len(SIZES)} PNGs under {root / 'hicolor'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
