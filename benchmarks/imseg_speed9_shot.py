"""A screenshot of the Image segmentation tab after its first run in a fresh process (the
first-use imports land in that run), offscreen: the status line and the Stages panel side by
side (issue 21, session 9: one number per step in the window).

    QT_QPA_PLATFORM=offscreen python benchmarks/imseg_speed9_shot.py out.png [--device cpu] [--method contours]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--method", default="contours")
    ap.add_argument("--size", default="1300x800")
    ap.add_argument("--runs", type=int, default=1, help="runs before the shot (2: a second full run)")
    a = ap.parse_args(argv)

    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication, QLabel, QMainWindow

    from app.tabs.imseg_tab import ImsegTab
    from app.tools import imseg

    app = QApplication.instance() or QApplication([])
    win = QMainWindow()
    tab = ImsegTab()
    status = QLabel("")
    tab.status_message.connect(status.setText)   # the window's status bar, shown below the tab
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    box = QWidget()
    lay = QVBoxLayout(box)
    lay.addWidget(tab)
    lay.addWidget(status)
    win.setCentralWidget(box)
    w, h = (int(v) for v in a.size.split("x"))
    win.resize(w, h)
    win.show()

    def wait(signal, start, timeout_ms=300000):
        loop = QEventLoop()
        signal.connect(loop.quit)
        QTimer.singleShot(timeout_ms, loop.quit)
        start()
        loop.exec()

    wait(tab.input_loaded, lambda: tab.open_file(imseg.samples()[0]))
    tab.form.set_values({"method": a.method})
    for _ in range(a.runs):
        wait(tab.result_shown, lambda: tab.run(device=a.device))
    app.processEvents()
    print("status:", status.text())
    print("panel:", tab.timings.text())
    win.grab().save(a.out)
    tab.runner.shutdown(10000)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
