"""Screenshots of live tuning in every tab: Live on, a result pinned, one parameter changed
(the live re-run shown against the pinned result, as a swipe for pictures and side by side for
3-D views, with the table of the parameters that differ), and the tab's History menu open.

Run under Xvfb from the repository root (CPU)::

    xvfb-run -a -s "-screen 0 1280x800x24" env QT_QPA_PLATFORM=xcb \\
        .venv/bin/python resources/screenshot-live.py resources/screenshots

writes ``live-<tab>.png`` and ``history-<tab>.png`` (256-colour PNGs, 1280x800) there.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from _shots import fresh_settings, to_pil, write
from _shots import pump as _pump

#: per tab: the sample, the parameters of the first run, the change made with Live on, and a
#: display-only change made next (a history step too, redrawn without a job)
PLAN = {
    "mesh": ("creature.ply", {"k": 4}, ("k", 6), ("shading", 0.8)),
    "flow": ("frame1.png", {}, ("lam", 8.0), ("flow_style", "Arrows")),
    "echo": ("lv_synthetic.npz", {"levels": 2, "iters": 20}, ("alpha", 0.2), ("overlay", "Jacobian determinant")),
    "mvs": ("synth_par.txt", {"views": "0"}, ("ncc_accept", 0.85), ("show", "Confidence")),
    "imseg": ("coffee.jpg", {}, ("coarseness", 2.6), ("picture_style", "mean")),
}


def main(out: Path) -> int:
    from PySide6.QtCore import QTimer

    from app.gui.app import make_app
    from app.gui.main_window import MainWindow
    from app.ui.capture import grab_widget

    fresh_settings()
    app = make_app()
    win = MainWindow(device="cpu")
    win.resize(1280, 800)
    win.show()
    out.mkdir(parents=True, exist_ok=True)

    def pump(sec: float) -> None:
        _pump(app, sec)

    def idle(tab, limit: float = 900) -> None:
        t0 = time.time()
        pump(0.3)
        while (tab.runner.is_running() or tab._live_timer.isActive() or tab._pending_live) \
                and time.time() - t0 < limit:
            pump(0.1)
        pump(0.5)

    def save(img, name: str) -> None:
        write(to_pil(img), out / name)

    only = sys.argv[2:] or list(PLAN)
    for key in only:
        sample, base, (param, value), (dparam, dvalue) = PLAN[key]
        i = win.tab_index(key)
        win.tab_widget.setCurrentIndex(i)
        tab = win.current_tab()
        path = next(p for p in tab.samples() if Path(p).name == sample)
        tab.live_check.setChecked(False)
        tab.open_file(Path(path))
        idle(tab)
        tab.form.set_values(base)
        tab.live_check.setChecked(True)          # Live: the input is run at once
        if not tab.runner.is_running() and tab.result is None:
            tab.run(device="cpu")
        idle(tab)
        tab.pin()
        pump(0.5)
        tab.form.set_value(param, value)         # the edit: a live re-run of the stages it affects
        idle(tab)
        if tab.swipe_button.isVisible():
            tab.swipe_button.setChecked(True)
            pump(1.0)
        pump(1.5)
        save(grab_widget(win), f"live-{key}.png")
        tab.form.set_value(dparam, dvalue)       # display only: redrawn at once, no job
        idle(tab)
        tab.go_to_step(len(tab.history) - 1)     # records the step (past the history debounce)
        pump(0.5)

        def grab_menu(tab=tab, key=key):
            pump(0.8)
            save(app.primaryScreen().grabWindow(0), f"history-{key}.png")
            tab.history_menu.close()

        QTimer.singleShot(300, grab_menu)
        tab.history_button.showMenu()            # modal until grab_menu closes it
        tab.swipe_button.setChecked(False)
        tab.unpin()
        tab.live_check.setChecked(False)
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("resources/screenshots")))
