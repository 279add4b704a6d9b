"""Start-up (issue 18, case 19) and the shared data folder control (case 18), offscreen.

The window builds only the tab in view; the others (their modules: pyqtgraph views, VTK,
pymeshlab) are built when first shown or used. Structural checks, not timings: the timings
are in ``benchmarks/startup.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.gui.main_window import MainWindow  # noqa: E402
from app.io import sample_data  # noqa: E402
from app.tabs import tab_class  # noqa: E402
from app.tools import TOOLS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

_PROBE = textwrap.dedent("""
    import json, sys
    from PySide6.QtWidgets import QApplication
    from app.gui.app import make_app
    from app.gui.main_window import MainWindow
    HEAVY = ("vtk", "vtkmodules", "pyvista", "pyvistaqt", "pyqtgraph", "pymeshlab", "app.tabs.mesh_tab",
             "app.tabs.flow_tab", "app.tabs.echo_tab", "app.tabs.mvs_tab", "app.tabs.imseg_tab")
    app = make_app()
    win = MainWindow()
    win.show()
    app.processEvents()
    out = {"shown": {"built": [t.settings_key for t in win.built_tabs()],
                     "modules": [m for m in HEAVY if m in sys.modules],
                     "current": type(win.tab_widget.currentWidget()).__name__}}
    win.tab_widget.setCurrentIndex(win.tab_index("flow"))
    app.processEvents()
    out["flow"] = {"built": [t.settings_key for t in win.built_tabs()],
                   "modules": [m for m in HEAVY if m in sys.modules],
                   "current": type(win.tab_widget.currentWidget()).__name__}
    out["all"] = [type(t).__name__ for t in win.tabs]
    win.close()
    print("@@" + json.dumps(out))
""")


def test_only_the_tab_in_view_is_built_at_start(tmp_path):
    """In a fresh process: after the window is shown, only its first tab is built, no other
    tab's module is imported, and neither VTK nor pyqtgraph nor pymeshlab is loaded; showing
    the flow tab builds it (its view imports pyqtgraph) and only it."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", GPULAB_SETTINGS_DIR=str(tmp_path), GPULAB_DEVICE="cpu")
    p = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("@@")), None)
    assert line is not None, p.stderr[-2000:]
    out = json.loads(line[2:])
    first = TOOLS[0].key
    assert out["shown"]["built"] == [first]
    assert out["shown"]["current"] == tab_class(TOOLS[0]).__name__
    assert out["shown"]["modules"] == [TOOLS[0].tab.split(":")[0]], out["shown"]["modules"]
    for heavy in ("vtk", "vtkmodules", "pyvista", "pyqtgraph", "pymeshlab"):
        assert heavy not in out["shown"]["modules"], heavy
    assert out["flow"]["built"] == [first, "flow"]
    assert out["flow"]["current"] == "FlowTab"
    assert "app.tabs.flow_tab" in out["flow"]["modules"]
    assert not {"app.tabs.echo_tab", "app.tabs.mvs_tab", "app.tabs.imseg_tab"} & set(out["flow"]["modules"])
    assert out["all"] == [tab_class(t).__name__ for t in TOOLS]


def test_a_tab_is_built_when_a_file_of_its_kind_is_opened(qtbot, tmp_path):
    win = MainWindow()
    qtbot.addWidget(win)
    assert [t.settings_key for t in win.built_tabs()] == [TOOLS[0].key]
    flow = next(t for t in TOOLS if t.name == "flow")
    tab = win.tab_for_path(tmp_path / "frame.png")
    assert tab is not None and tab.tool is flow
    assert win.tab_widget.indexOf(tab) == win.tab_index("flow")
    assert win.tab_widget.tabText(win.tab_index("flow")) == flow.title
    assert {t.settings_key for t in win.built_tabs()} == {TOOLS[0].key, "flow"}
    win.close()


def test_a_tab_built_late_gets_its_settings_and_unbuilt_tabs_keep_theirs(qtbot):
    w1 = MainWindow()
    qtbot.addWidget(w1)
    w1.tab_widget.setCurrentIndex(w1.tab_index("imseg"))
    imseg = w1.current_tab()
    assert imseg.settings_key == "imseg"
    name, value = _some_int_param(imseg)
    imseg.form.set_values({name: value})
    w1.close()                                  # saves: imseg and mesh were built

    w2 = MainWindow()                           # opens on imseg (the last tab): built at start
    qtbot.addWidget(w2)
    assert w2.current_tab().settings_key == "imseg"
    assert w2.current_tab().form.values()[name] == value
    w2.tab_widget.setCurrentIndex(0)
    w2.close()                                  # imseg saved again, flow/echo/mvs never built

    w3 = MainWindow()
    qtbot.addWidget(w3)
    assert "imseg" not in [t.settings_key for t in w3.built_tabs()]
    w3.tab_widget.setCurrentIndex(w3.tab_index("imseg"))   # built now, after the window
    assert w3.current_tab().form.values()[name] == value
    w3.close()


def _some_int_param(tab):
    for p in tab.tool.params:
        if p.type is int and not p.auto and not getattr(p, "display", False) and not p.choices:
            lo = p.minimum if p.minimum is not None else 0
            hi = p.maximum if p.maximum is not None else lo + 10
            for v in range(int(lo), int(hi) + 1):
                if v != p.default:
                    return p.name, v
    pytest.skip("no plain integer parameter to change")


# --------------------------------------------------------------------------- data folder (case 18)
def _shared_folder(root: Path) -> Path:
    f = root / "mydata" / "cardiac-mri" / "acdc" / "sax_ed.nii.gz"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"")          # listed, never opened here
    return root / "mydata"


def test_data_folder_menu_sets_the_folder_and_the_sample_lists_follow(qtbot, tmp_path, monkeypatch, errors):
    monkeypatch.delenv(sample_data.DATA_DIR_ENV, raising=False)
    monkeypatch.delenv("GPULAB_SHARED_DATA", raising=False)
    monkeypatch.setattr(sample_data, "_CHECKOUT_DATA", tmp_path / "no-such-default")
    folder = _shared_folder(tmp_path)
    win = MainWindow()
    qtbot.addWidget(win)
    assert "File" in [a.text().replace("&", "") for a in win.menuBar().actions()]
    assert win.act_data_dir in win.menuBar().actions()[0].menu().actions()
    win.tab_widget.setCurrentIndex(win.tab_index("echo"))
    echo = win.current_tab()
    before = [echo.sample_combo.itemText(i) for i in range(echo.sample_combo.count())]
    assert not any("sax_ed" in t for t in before)

    dlg = win.show_data_dir()
    assert dlg.path_label.text() == "(none)"
    assert win.set_data_dir(folder)
    assert sample_data.data_dir() == folder.resolve()
    assert win.settings.value(sample_data.SETTING_KEY) == str(folder.resolve())
    after = [echo.sample_combo.itemText(i) for i in range(echo.sample_combo.count())]
    assert any("sax_ed" in t for t in after), after
    win._fill_samples_menu()
    assert any("sax_ed" in a.text() for a in win.samples_menu.actions())
    dlg.refresh()
    assert dlg.path_label.text() == str(folder.resolve())
    assert "chosen here" in dlg.source_label.text().lower()
    win.close()

    # a new window (a new session) uses the stored folder, written to the same gpulab.ini the
    # Qt-free lookup reads (the CLI and batch see it too)
    sample_data.set_data_dir(None)
    assert sample_data.data_dir() == folder.resolve()
    w2 = MainWindow()
    qtbot.addWidget(w2)
    w2.tab_widget.setCurrentIndex(w2.tab_index("echo"))
    combo = w2.current_tab().sample_combo
    assert any("sax_ed" in combo.itemText(i) for i in range(combo.count()))
    # "Use default" forgets it
    d2 = w2.show_data_dir()
    d2.default_button.click()
    assert w2.data_dir_setting() == ""
    assert sample_data.data_dir() is None
    assert not any("sax_ed" in combo.itemText(i) for i in range(combo.count()))
    w2.close()
    assert errors == []


def test_data_folder_refuses_a_missing_folder_and_names_the_environment_variable(qtbot, tmp_path, monkeypatch,
                                                                                errors):
    monkeypatch.delenv("GPULAB_SHARED_DATA", raising=False)
    win = MainWindow()
    qtbot.addWidget(win)
    assert not win.set_data_dir(tmp_path / "nope")
    assert errors and "No such folder" in errors[-1][1]
    assert win.data_dir_setting() == ""
    env_dir = tmp_path / "envdata"
    env_dir.mkdir()
    monkeypatch.setenv(sample_data.DATA_DIR_ENV, str(env_dir))
    folder = _shared_folder(tmp_path)
    assert win.set_data_dir(folder)
    assert sample_data.data_dir() == env_dir              # the environment variable wins
    dlg = win.show_data_dir()
    assert dlg.path_label.text() == str(env_dir)
    assert sample_data.DATA_DIR_ENV in dlg.source_label.text()
    assert sample_data.DATA_DIR_ENV in win.statusBar().currentMessage()
    win.close()
