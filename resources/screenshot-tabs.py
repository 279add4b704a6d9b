"""Screenshots of every tab after a run on its bundled sample, at 1280x800 and 1920x1080.

Run under Xvfb from the repository root (CPU; the MVS sample takes a few minutes there)::

    xvfb-run -a -s "-screen 0 1920x1080x24" env QT_QPA_PLATFORM=xcb \\
        .venv/bin/python resources/screenshot-tabs.py resources

writes ``screenshot-<tab>-<W>x<H>.png`` (256-colour PNG; ``.jpg`` for the flow tab, as the
README uses) into the folder given.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from _shots import fresh_settings, to_pil, write
from _shots import pump as _pump

SIZES = ((1280, 800), (1920, 1080))


def main(out: Path) -> int:
    from app.gui.app import make_app
    from app.gui.main_window import MainWindow
    from app.ui.capture import grab_widget

    fresh_settings()
    app = make_app()
    win = MainWindow(device="cpu")
    win.resize(*SIZES[0])
    win.show()
    win.open_samples()

    def pump(sec: float) -> None:
        _pump(app, sec)

    def wait_idle(tab, limit: float = 900) -> None:
        t0 = time.time()
        while tab.runner.is_running() and time.time() - t0 < limit:
            pump(0.05)

    for tab in win.tabs:
        win.tab_widget.setCurrentWidget(tab)
        wait_idle(tab)
        if tab.data is not None:
            tab.run(device="cpu")
            wait_idle(tab)
    flow = next(t for t in win.tabs if t.settings_key == "flow")
    flow.right_combo.setCurrentText("Endpoint error")  # shows the error pane's colour bar
    out.mkdir(parents=True, exist_ok=True)
    for w, h in SIZES:
        win.resize(w, h)
        # the larger one also shows the quality overlay (occlusions blue, failures red) and its key
        flow.quality_overlay.setChecked((w, h) == SIZES[-1])
        for tab in win.tabs:
            win.tab_widget.setCurrentWidget(tab)
            pump(1.5)
            im = to_pil(grab_widget(win))
            if tab.settings_key == "flow":
                write(im, out / f"screenshot-flow-{w}x{h}.jpg", "JPEG")
            else:
                write(im, out / f"screenshot-{tab.settings_key}-{w}x{h}.png")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "resources")))
