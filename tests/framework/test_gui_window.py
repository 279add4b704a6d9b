"""The main window: tabs, menus, About box, file routing, drag and drop, log panel."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from gui_helpers import OtherTab, SlowTab  # noqa: E402
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent, QImage  # noqa: E402

from app.gui.main_window import MainWindow  # noqa: E402
from app.tabs import tab_class, tab_classes  # noqa: E402
from app.tabs.placeholder import PlaceholderTab  # noqa: E402
from app.tools import TOOLS  # noqa: E402
from gpu_kernels import backend  # noqa: E402

pytestmark = pytest.mark.gui

EXPECTED_TABS = ["Mesh segmentation", "Optical flow", "Echo motion", "Multi-view stereo", "Image segmentation"]


@pytest.fixture
def fake_window(qtbot, errors):
    win = MainWindow(tab_classes=[SlowTab, OtherTab])
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    yield win
    win.close()


def test_window_has_the_five_tools_in_order(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    titles = [win.tab_widget.tabText(i) for i in range(win.tab_widget.count())]
    assert titles == EXPECTED_TABS
    assert [t.title for t in win.tabs] == EXPECTED_TABS
    assert len({t.settings_key for t in win.tabs}) == 5
    # one real tab per registered tool, first, in the registry's order
    assert [type(t) for t in win.tabs[:len(TOOLS)]] == [tab_class(t) for t in TOOLS]
    # the placeholders say what they will hold
    for tab in win.tabs[1:]:
        if isinstance(tab, PlaceholderTab):
            assert tab.title in tab.findChild(type(win.stage_label), "placeholder-title").text()
            assert "Coming in this tab" in tab.description_label.text()
    assert not win.windowIcon().isNull()
    win.close()


def test_one_registry_builds_the_tabs():
    classes = tab_classes()
    assert [c.title for c in classes] == EXPECTED_TABS
    assert [c.tool for c in classes[:len(TOOLS)]] == list(TOOLS)


def test_file_menu_has_the_required_actions(fake_window):
    file_menu = fake_window.menuBar().actions()[0].menu()
    texts = [a.text().replace("&", "") for a in file_menu.actions() if not a.isSeparator()]
    for wanted in ["Open…", "Open recent", "Save result as…", "Export screenshot…", "Quit"]:
        assert wanted in texts, texts
    menus = [a.text().replace("&", "") for a in fake_window.menuBar().actions()]
    assert menus == ["File", "Compute", "View", "Help"]


def test_about_box_names_the_device_and_versions(qtbot):
    win = MainWindow(tab_classes=[SlowTab])
    qtbot.addWidget(win)
    dlg = win.show_about()
    text = dlg.text()
    info = backend.device_info()
    if info["backend"] == "cuda":
        assert info["name"] in text and f"compute capability {info['compute_capability']}" in text
        assert "GiB free" in text
    else:
        assert "Compute device: CPU (NumPy)" in text
    import numpy
    import PySide6.QtCore

    for needle in ("gpulab 0.", f"NumPy {numpy.__version__}", f"Qt {PySide6.QtCore.qVersion()}",
                   "CuPy ", "VTK "):
        assert needle in text, needle
    assert dlg.findChild(type(win.stage_label), "about-text").text().count("<br>") >= 5
    dlg.close()
    win.close()


def test_status_bar_names_the_device(fake_window):
    label = fake_window.device_label.text()
    assert label == backend.device_info()["label"]
    assert fake_window.stage_label.text() == "Ready"
    assert not fake_window.cancel_button.isEnabled()


def _open(qtbot, win, path, tab):
    with qtbot.waitSignal(tab.input_loaded, timeout=5000):
        assert win.open_path(path)


def test_open_routes_by_extension_and_remembers_recent(fake_window, qtbot, tmp_path, errors):
    a = tmp_path / "one.SLOW"
    a.write_text("x")
    b = tmp_path / "two.oth"
    b.write_text("x")
    c = tmp_path / "three.slw.gz"
    c.write_text("x")
    slow, other = fake_window.tabs
    _open(qtbot, fake_window, a, slow)
    assert slow.opened == [a]
    assert fake_window.tab_for_path(b) is other
    assert fake_window.tab_for_path(c) is slow
    _open(qtbot, fake_window, c, slow)
    assert fake_window.current_tab() is slow
    assert fake_window.recent_files()[:2] == [str(c.resolve()), str(a.resolve())]
    # the title names what the shown tab works on (MeshLab, napari); a tab without input: none
    assert fake_window.windowTitle() == f"three.slw.gz — {slow.title} — gpulab"
    fake_window.tab_widget.setCurrentIndex(fake_window.tab_widget.indexOf(other))
    assert fake_window.windowTitle() == "gpulab"
    assert errors == []


def test_files_load_on_the_worker_thread(fake_window, qtbot, tmp_path, monkeypatch):
    import threading

    import gui_helpers

    seen = []
    real = gui_helpers.load_slow
    slow = fake_window.tabs[0]

    def spy(path, *, progress=None):
        seen.append(threading.current_thread())
        return real(path, progress=progress)

    object.__setattr__(slow.tool, "load", spy)
    try:
        f = tmp_path / "a.slow"
        f.write_text("x")
        _open(qtbot, fake_window, f, slow)
    finally:
        object.__setattr__(slow.tool, "load", real)
    assert seen and seen[0] is not threading.main_thread()


def test_open_errors_are_dialogs_not_crashes(fake_window, qtbot, tmp_path, errors):
    bad = tmp_path / "bad.slow"
    bad.write_text("bad")
    slow = fake_window.tabs[0]
    with qtbot.waitSignal(slow.runner.failed, timeout=5000):
        assert fake_window.open_path(bad)  # loading starts, then fails
    assert errors[-1][0] == "Cannot open file"
    assert errors[-1][1] == "Opening bad.slow: not a slow file" and errors[-1][2] == ""
    assert slow.data is None
    assert not fake_window.open_path(tmp_path / "image.xyz")
    assert "No tab opens .xyz files" in errors[-1][1] and ".slow" in errors[-1][1]
    assert not fake_window.open_path(tmp_path / "missing.slow")
    assert "No such file" in errors[-1][1]
    assert str(bad.resolve()) not in fake_window.recent_files()


def _drop(win, paths):
    md = QMimeData()
    md.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    ev = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, md,
                    Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    win.dropEvent(ev)
    return ev


def test_drag_and_drop_opens_in_the_right_tab(fake_window, qtbot, tmp_path, errors):
    a = tmp_path / "x.oth"
    a.write_text("x")
    b = tmp_path / "y.slow"
    b.write_text("x")
    with qtbot.waitSignal(fake_window.tabs[1].input_loaded, timeout=5000) as blk:
        _drop(fake_window, [a])
    assert blk.args == [a] and fake_window.current_tab() is fake_window.tabs[1]
    with qtbot.waitSignal(fake_window.tabs[0].input_loaded, timeout=5000):
        _drop(fake_window, [b])
    assert fake_window.tabs[0].opened == [b] and fake_window.current_tab() is fake_window.tabs[0]
    assert errors == []
    assert fake_window.acceptDrops()


def test_log_panel_shows_logging_from_any_thread(fake_window, qtbot):
    import threading

    assert not fake_window.log_panel.isVisible()
    fake_window.act_log.trigger()
    assert fake_window.log_panel.isVisible()
    logging.getLogger("app.test").info("hello from the main thread")
    t = threading.Thread(target=lambda: logging.getLogger("gpu_kernels.test").warning("hello from a worker"))
    t.start()
    t.join()
    qtbot.waitUntil(lambda: "hello from a worker" in fake_window.log_panel.text(), timeout=2000)
    assert "hello from the main thread" in fake_window.log_panel.text()
    fake_window.act_log.trigger()
    assert not fake_window.log_panel.isVisible()


def test_export_screenshot_writes_a_png(fake_window, tmp_path, errors):
    out = tmp_path / "shot.png"
    assert fake_window.export_screenshot(out)
    img = QImage(str(out))
    assert not img.isNull() and img.width() > 50 and img.height() > 50
    whole = tmp_path / "window.png"
    assert fake_window.export_screenshot(whole, whole_window=True)
    assert QImage(str(whole)).width() >= fake_window.width() - 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shot.png", "window.png"]
    assert errors == []


def test_compute_menu_switches_the_device_jobs_get(fake_window, qtbot, tmp_path, errors):
    before = backend._default_spec
    fake_window.device_actions["cpu"].trigger()
    assert fake_window.device_spec() == "cpu"
    assert backend._default_spec == before  # the window's choice, not the process default
    assert fake_window.device_label.text() == "CPU (NumPy)"
    assert fake_window.device_actions["cpu"].isChecked()
    slow = fake_window.tabs[0]
    f = tmp_path / "a.slow"
    f.write_text("x")
    _open(qtbot, fake_window, f, slow)
    with qtbot.waitSignal(slow.result_shown, timeout=5000):
        slow.run()
    assert slow.result.device == "cpu"
    fake_window.device_actions["auto"].trigger()
    assert fake_window.device_spec() is None
    assert errors == []


def test_samples_menu_lists_each_tabs_samples(qtbot, tmp_path, errors):
    sample = tmp_path / "demo.slow"
    sample.write_text("x")

    class SampleTab(SlowTab):
        def samples(self):
            return [sample]

    win = MainWindow(tab_classes=[SampleTab, OtherTab])
    qtbot.addWidget(win)
    texts = [a.text() for a in win.samples_menu.actions()]
    assert texts == ["Slow tool: demo.slow"]
    with qtbot.waitSignal(win.tabs[0].input_loaded, timeout=5000):
        assert win.open_samples() == 1
    assert win.tabs[0].opened == [sample]
    win.close()


def test_real_tabs_list_existing_samples(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    for tab in win.tabs:
        for s in tab.samples():
            assert Path(s).is_file(), s
            assert tab.handles(s), s
    win.close()


def test_open_dialog_filters_list_every_tabs_types(fake_window):
    f = fake_window.open_filters()
    parts = f.split(";;")
    assert parts[0] == "All supported files (*.oth *.slow *.slw.gz)"
    assert "Slow tool: Slow files (*.slow *.slw.gz)" in parts
    assert parts[-1] == "All files (*)"


def test_save_result_writes_atomically_and_reports_errors(fake_window, qtbot, tmp_path, errors):
    tab = fake_window.tabs[0]
    assert not fake_window.act_save.isEnabled()
    f = tmp_path / "in.slow"
    f.write_text("x")
    _open(qtbot, fake_window, f, tab)
    tab.form.set_values({"steps": 2})
    with qtbot.waitSignal(tab.result_shown, timeout=5000):
        tab.run()
    assert fake_window.act_save.isEnabled()
    out = tmp_path / "saved.txt"
    assert fake_window.save_result(tab, out)
    assert out.read_text().startswith("result: 2 steps")
    # a folder that does not exist: one clear message, nothing written
    assert not fake_window.save_result(tab, tmp_path / "missing" / "x.txt")
    assert errors[-1][0] == "Cannot save"
    assert "does not exist" in errors[-1][1] and errors[-1][2] == ""
    assert not (tmp_path / "missing").exists()
    # an extension no export writes
    assert not fake_window.save_result(tab, tmp_path / "x.bin")
    assert "use .txt" in errors[-1][1]
    # never the input, however spelled: Save result and the screenshot refuse it, nothing written
    (tmp_path / "sub").mkdir()
    for spelled in (f, tmp_path / "sub" / ".." / "in.slow"):
        assert not fake_window.save_result(tab, spelled)
        assert "would overwrite the input in.slow" in errors[-1][1] and errors[-1][2] == ""
        assert not fake_window.export_screenshot(spelled)
        assert "would overwrite the input in.slow" in errors[-1][1]
        assert not fake_window.export_screenshot(spelled, whole_window=True)
    assert f.read_text() == "x"
