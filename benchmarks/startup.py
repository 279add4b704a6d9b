"""Start-up times of ``gpulab`` (issue 18, case 19): ``--version``, a cold ``COMMAND --help``
(the help cache bypassed) and the window's first paint, each in a fresh process, with
``python -c pass`` beside them as the machine's own floor (a loaded machine slows all four).

    python benchmarks/startup.py [--repeat 5] [--tool mesh-seg] [--json out.json]

The first paint is the time from starting the process to the end of the first paint pass of
the main window (an event filter on the application sees the first Paint event of a widget
in the window; a zero timer then fires after that pass). It runs ``gpulab``'s own entry point
(``app.cli.main([])``), under the platform in ``QT_QPA_PLATFORM`` (offscreen when unset and
there is no DISPLAY; run under ``xvfb-run`` for X11). The window quits at once after.

Also reports which heavy modules each of the three had imported (numpy, scipy, cupy, vtk,
pyqtgraph, the tool modules).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("numpy", "scipy", "cupy", "vtk", "vtkmodules", "pyvista", "pyqtgraph", "PySide6",
         "app.tools.mesh_seg", "app.tools.flow", "app.tools.echo", "app.tools.mvs", "app.tools.imseg",
         "app.tabs.mesh_tab", "app.tabs.flow_tab", "app.tabs.echo_tab", "app.tabs.mvs_tab",
         "app.tabs.imseg_tab")

_REPORT = ("import atexit, sys, json\n"
           "def _r():\n"
           f"    sys.stderr.write('@@MODS ' + json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)) + chr(10))\n"
           "atexit.register(_r)\n")

_PAINT = r"""
import sys, time
T0 = float(sys.argv[1])
sys.argv[1:] = []
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication
import app.gui.main_window as _mw

_state = {"seen": False}

class _Probe(QObject):
    def eventFilter(self, obj, ev):
        if not _state["seen"] and ev.type() == QEvent.Type.Paint and hasattr(obj, "window"):
            win = obj.window()
            if isinstance(win, _mw.MainWindow):
                _state["seen"] = True
                def done():
                    sys.stderr.write("@@PAINT %.4f\n" % (time.time() - T0))
                    win.close()
                    QApplication.instance().quit()
                QTimer.singleShot(0, done)
        return False

_orig_show = _mw.MainWindow.show
def _show(self):
    app = QApplication.instance()
    self._startup_probe = _Probe(app)
    app.installEventFilter(self._startup_probe)
    _orig_show(self)
_mw.MainWindow.show = _show
from app.cli import main
rc = main([])
"""


_SETTINGS = None


def _env(extra: dict | None = None) -> dict:
    global _SETTINGS
    if _SETTINGS is None:       # a fresh settings file: the window opens on its first tab
        import tempfile

        _SETTINGS = tempfile.mkdtemp(prefix="gpulab-startup-")
    env = dict(os.environ)
    env.setdefault("GPULAB_DEVICE", "cpu")
    env["GPULAB_SETTINGS_DIR"] = _SETTINGS
    env.update(extra or {})
    return env


def _timed(cmd: list[str], env: dict) -> tuple[float, list[str], str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-800:]}")
    mods: list[str] = []
    for line in p.stderr.splitlines():
        if line.startswith("@@MODS "):
            mods = json.loads(line[7:])
    return dt, mods, p.stderr


def run(repeat: int, tool: str, only: str | None = None) -> dict:
    py = sys.executable
    out: dict = {"python": py, "repeat": repeat, "tool": tool, "platform": os.environ.get("QT_QPA_PLATFORM", ""),
                 "loadavg_before": os.getloadavg()}
    cases = {
        "python -c pass": ([py, "-c", "pass"], {}),
        "gpulab --version": ([py, "-c", _REPORT + "from app.cli import main; raise SystemExit(main(['--version']))"],
                             {}),
        f"gpulab {tool} --help (cold)": (
            [py, "-c", _REPORT + f"from app.cli import main; raise SystemExit(main([{tool!r}, '--help']))"],
            {"GPULAB_NO_HELP_CACHE": "1"}),
    }
    results: dict = {}
    if only == "window":
        cases = {k: v for k, v in cases.items() if k == "python -c pass"}
    for name, (cmd, extra) in cases.items():
        times, mods = [], []
        for _ in range(repeat):
            dt, mods, _err = _timed(cmd, _env(extra))
            times.append(dt)
        results[name] = {"median_s": statistics.median(times), "min_s": min(times), "runs_s": times,
                         "heavy_modules": mods}
    if only == "cli":
        out["results"] = results
        out["loadavg_after"] = os.getloadavg()
        return out
    paint, mods = [], []
    penv = _env({} if os.environ.get("DISPLAY") or os.environ.get("QT_QPA_PLATFORM")
                else {"QT_QPA_PLATFORM": "offscreen"})
    for _ in range(repeat):
        t0 = time.time()
        p = subprocess.run([py, "-c", _REPORT + _PAINT, repr(t0)], cwd=ROOT, env=penv, capture_output=True,
                           text=True, timeout=120)
        got = [ln for ln in p.stderr.splitlines() if ln.startswith("@@PAINT ")]
        if not got:
            raise RuntimeError(f"no first paint seen (exit {p.returncode}): {p.stderr[-800:]}")
        paint.append(float(got[0].split()[1]))
        for line in p.stderr.splitlines():
            if line.startswith("@@MODS "):
                mods = json.loads(line[7:])
    results["window first paint"] = {"median_s": statistics.median(paint), "min_s": min(paint), "runs_s": paint,
                                     "heavy_modules": mods}
    out["results"] = results
    out["loadavg_after"] = os.getloadavg()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tool", default="mesh-seg")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--only", choices=("cli", "window"), default=None, help="only the CLI cases, or only the window")
    a = ap.parse_args(argv)
    res = run(a.repeat, a.tool, a.only)
    print(f"load average before {res['loadavg_before'][0]:.1f}, after {res['loadavg_after'][0]:.1f}; "
          f"{a.repeat} runs each; platform {res['platform'] or os.environ.get('QT_QPA_PLATFORM', 'offscreen')}")
    print(f"{'case':34s} {'median':>8s} {'min':>8s}  heavy modules imported")
    for name, r in res["results"].items():
        mods = ", ".join(r["heavy_modules"]) or "-"
        print(f"{name:34s} {r['median_s']:8.3f} {r['min_s']:8.3f}  {mods}")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
