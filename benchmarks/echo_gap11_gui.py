"""The GUI thread's cost of a job's progress reports in a tab (session 11, helper echo-gap).

A live edit's job reports its stages ("pairwise motion", "trajectories", "metrics", "done"); each
report sets the tab's stage label (app/tabs/base.py ``_show_stage``). The label sits in the side
panel with word wrap and no reserved height: when a report's text wraps to a second line ("pair
1/1: level 2/3, warp 1/3 — 37% · 0:01 left") or back, the panel below it moves, so every widget under it is laid out and painted again (through the Python event filters
on the form's editors). This measures the GUI thread's CPU time (``time.thread_time``) of one job's
worth of reports, offscreen, on the echo tab with a result shown, for three variants in one process:

``as_is``      the tab as it is;
``one_line``   the stage label one line high, no word wrap, ignored width (a candidate change to
               app/tabs/base.py: a report then repaints the label alone);
``two_lines``  the stage label with word wrap, its height fixed at two lines (another candidate);
``no_reports`` the job's start and end only (what a progress grace period in app/ui/worker.py
               leaves for a job shorter than it).

    python benchmarks/echo_gap11_gui.py [--reps 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: the reports of a live α edit at 128^3 (3 levels, 3 warps), as the tab received them
STAGES = ((0.0, "pairwise motion"),) + tuple(
    ((3 * (lv - 1) + w - 1) / 9 * 0.85, f"pair 1/1: level {lv}/3, warp {w}/3") for lv in (1, 2, 3) for w in (1, 2, 3)) + (
    (0.85, "pair 1/1: done"), (0.85, "pairwise motion: done"), (0.85, "trajectories"), (0.95, "metrics"), (1.0, "done"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", type=pathlib.Path, default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import live
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication, QSizePolicy

    from app.tools import TOOLS
    from app.tools.stages import StageCache
    from app.ui import gc_guard

    app = QApplication.instance() or QApplication([])
    tool = next(t for t in TOOLS if t.name == "echo")
    data, base = live.load_input(tool, True)
    tab = tool.tab_class()()
    tab.host.device = args.device
    tab.resize(1300, 800)
    tab.show()
    tab.cache = StageCache()
    tab.set_input(data, pathlib.Path(tool.key))
    tab.form.set_values(base)
    loop = QEventLoop()
    tab.result_shown.connect(loop.quit)
    QTimer.singleShot(120_000, loop.quit)
    tab.run()
    loop.exec()
    while tab.runner.is_running():
        app.processEvents()
    for _ in range(5):
        app.processEvents()
    gc_guard.settle()

    def one(reports: bool) -> float:
        t0 = time.thread_time()
        tab._on_running_changed(True)
        tab._on_progress(0.0, "starting")
        app.processEvents()
        if reports:
            for f, s in STAGES:
                tab._on_progress(f, s)
                app.processEvents()
        tab._on_running_changed(False)
        app.processEvents()
        return time.thread_time() - t0

    lab = tab.stage_label
    wrap, pol, hmin, hmax = lab.wordWrap(), lab.sizePolicy(), lab.minimumHeight(), lab.maximumHeight()

    def fixed(how: str) -> None:
        if how == "one_line":
            lab.setWordWrap(False)
            lab.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
            lab.setFixedHeight(lab.fontMetrics().lineSpacing() + 2)
        elif how == "two_lines":
            lab.setWordWrap(wrap)
            lab.setSizePolicy(pol)
            lab.setFixedHeight(2 * lab.fontMetrics().lineSpacing() + 2)
        else:
            lab.setWordWrap(wrap)
            lab.setSizePolicy(pol)
            lab.setMinimumHeight(hmin)
            lab.setMaximumHeight(hmax)
        for _ in range(3):
            app.processEvents()

    out: dict[str, list[float]] = {"as_is": [], "one_line": [], "two_lines": [], "no_reports": []}
    for i in range(args.reps):
        for v in (list(out) if i % 2 == 0 else list(out)[::-1]):   # alternate the order
            fixed(v)
            out[v].append(one(v != "no_reports"))
    fixed("as_is")
    med = {k: round(1000 * sorted(v)[len(v) // 2], 3) for k, v in out.items()}
    print(f"GUI thread CPU per job's reports (ms, median of {args.reps}): "
          + ", ".join(f"{k} {v}" for k, v in med.items()), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"median_ms": med, "runs_ms": {k: [round(1000 * x, 3) for x in v]
                                                                        for k, v in out.items()}}, indent=1) + "\n")
    tab.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
