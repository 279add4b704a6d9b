"""A greyed "auto" field says "auto", and after a run what auto chose (issue 18, case 15):
Parts (k) showed 5 where the result had 7, echo's levels 3 where runs used 2 and 4, MVS's batch
65,536 on the CPU."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from gui_helpers import SLOW_PARAMS  # noqa: E402

from app.ui.forms import ParamForm  # noqa: E402

pytestmark = pytest.mark.gui


def test_auto_shows_the_word_then_the_choice(qtbot):
    form = ParamForm(SLOW_PARAMS)
    qtbot.addWidget(form)
    ed = form.editor("scale")
    assert not form.flag("scale").isChecked() and ed.value() == 0.5
    form.set_values({"scale": "auto"})
    assert form.flag("scale").isChecked() and ed.text() == "auto"          # not the typical 0.5
    assert form.values()["scale"] == "auto"
    form.show_chosen({"scale": 0.73})
    assert ed.text() == "auto (0.73)" and form.values()["scale"] == "auto"
    form.flag("scale").setChecked(False)                                    # untick: start from the choice
    assert ed.value() == pytest.approx(0.73) and form.values()["scale"] == pytest.approx(0.73)
    form.flag("scale").setChecked(True)
    assert ed.text() == "auto (0.73)"
    form.clear_chosen()
    assert ed.text() == "auto"
    # an optional parameter says "off"; a value typed by hand comes back when unticked
    lim = form.editor("limit")
    assert form.flag("limit").isChecked() and lim.text() == "off"
    form.set_values({"limit": 500})
    assert lim.text().replace(",", "") == "500" and form.values()["limit"] == 500
    form.flag("limit").setChecked(True)
    assert lim.text() == "off" and form.values()["limit"] is None
    form.flag("limit").setChecked(False)
    assert form.values()["limit"] == 500
    # presets and settings still carry "auto"
    form.set_values({"scale": "auto"})
    assert ed.text() == "auto"
