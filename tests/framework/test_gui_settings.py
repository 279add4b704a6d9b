"""Settings survive closing and reopening the window."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from gui_helpers import OtherTab, SlowTab  # noqa: E402

from app.gui.main_window import MainWindow  # noqa: E402
from app.ui.settings import make_settings  # noqa: E402

pytestmark = pytest.mark.gui


def test_settings_file_is_isolated(settings_dir):
    s = make_settings()
    assert Path(s.fileName()) == Path(settings_dir) / "gpulab.ini"


def test_parameters_geometry_tab_and_recent_files_survive_a_restart(qtbot, tmp_path, settings_dir):
    sample = tmp_path / "a.slow"
    sample.write_text("x")
    w1 = MainWindow(tab_classes=[SlowTab, OtherTab])
    qtbot.addWidget(w1)
    w1.show()
    w1.resize(700, 560)
    slow = w1.tabs[0]
    slow.form.set_values({"steps": 1234, "scale": 2.25, "method": "cpu", "edges": True,
                          "name": "héllo, world", "limit": 77})
    with qtbot.waitSignal(slow.input_loaded, timeout=5000):
        assert w1.open_path(sample)
    w1.tab_widget.setCurrentIndex(1)
    w1.log_panel.show()
    w1.close()

    ini = configparser.ConfigParser()
    ini.read(Path(settings_dir) / "gpulab.ini")
    assert ini.has_section("tabs")

    w2 = MainWindow(tab_classes=[SlowTab, OtherTab])
    qtbot.addWidget(w2)
    w2.show()
    s2 = w2.tabs[0]
    v = s2.form.values()
    assert v["steps"] == 1234 and v["scale"] == pytest.approx(2.25) and v["method"] == "cpu"
    assert v["edges"] is True and v["name"] == "héllo, world" and v["limit"] == 77
    assert s2.form.editor("steps").value() == 1234 and s2.form.editor("method").currentText() == "cpu"
    assert w2.tab_widget.currentIndex() == 1
    assert (w2.width(), w2.height()) == (700, 560)
    assert w2.log_panel.isVisible()
    assert w2.recent_files() == [str(sample.resolve())]
    w2.close()


def test_stale_values_do_not_break_restoring(qtbot, settings_dir):
    s = make_settings()
    s.setValue("tabs/slow/params/method", '"no-longer-a-choice"')
    s.setValue("tabs/slow/params/steps", "not a number")
    s.setValue("tabs/slow/params/scale", '"auto"')
    s.setValue("window/tab", "garbage")
    s.setValue("window/geometry", b"\x00junk")
    s.sync()
    w = MainWindow(tab_classes=[SlowTab])
    qtbot.addWidget(w)
    v = w.tabs[0].form.values()
    assert v["method"] == "gpu-sym" and v["steps"] == 20
    assert v["scale"] == "auto" and w.tabs[0].form.flag("scale").isChecked()
    w.close()
