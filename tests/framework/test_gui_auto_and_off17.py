"""A parameter that takes both 'auto' and None ('off'): the mesh tool's working resolution (session 17). Its form row
had one "auto" box, so None set that box and came back as 'auto': a preset or a copied command with
``max_faces: off`` ran at the working resolution in the window, and the live benchmark's "full resolution" mesh edit
ran at it too. Now the row has an "off" box beside "auto", at most one of them checked."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.tools import mesh_seg  # noqa: E402
from app.ui.forms import ParamForm  # noqa: E402

pytestmark = pytest.mark.gui


def _form(qtbot):
    form = ParamForm(mesh_seg.PARAMS)
    qtbot.addWidget(form)
    return form, form.fields["max_faces"]


def test_off_round_trips(qtbot):
    form, f = _form(qtbot)
    assert form.values()["max_faces"] == "auto" and f.flag.isChecked() and not f.off.isChecked()
    form.set_values({"max_faces": None})
    assert form.values()["max_faces"] is None
    assert f.off.isChecked() and not f.flag.isChecked() and not f.editor.isEnabled()
    assert f.editor.text() == "off"                        # never a number that is not used
    form.set_values({"max_faces": "off"})                   # the word, as in a preset's JSON
    assert form.values()["max_faces"] is None
    form.set_values({"max_faces": 5000})
    assert form.values()["max_faces"] == 5000 and not f.off.isChecked() and not f.flag.isChecked()
    assert f.editor.isEnabled() and f.editor.value() == 5000
    form.set_values({"max_faces": "auto"})
    assert form.values()["max_faces"] == "auto" and f.flag.isChecked() and not f.off.isChecked()


def test_the_two_boxes_exclude_each_other(qtbot):
    form, f = _form(qtbot)
    f.off.setChecked(True)                                  # off while auto is checked: auto goes
    assert not f.flag.isChecked() and form.values()["max_faces"] is None
    f.flag.setChecked(True)                                 # auto while off is checked: off goes
    assert not f.off.isChecked() and form.values()["max_faces"] == "auto"
    f.flag.setChecked(False)                                # neither: the number
    assert isinstance(form.values()["max_faces"], int) and f.editor.isEnabled()


def test_other_auto_fields_have_no_off_box(qtbot):
    form, _ = _form(qtbot)
    assert form.fields["k"].off is None and form.fields["delta"].off is None
