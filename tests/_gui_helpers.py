"""Set-up the GUI tests share (the review's D12-D15: the same lines of widget set-up in many tests).
tests/ is on sys.path (its conftest), so a test imports ``from _gui_helpers import shown``."""

from __future__ import annotations

__all__ = ["shown", "loaded_tab"]


def shown(qtbot, widget, size, *, min_size=None):
    """``widget`` closed after the test (qtbot), resized to ``size`` (w, h), shown and exposed;
    ``min_size``: its minimum size first (a test of sizes below the widget's own minimum)."""
    qtbot.addWidget(widget)
    if min_size is not None:
        widget.setMinimumSize(*min_size)
    widget.resize(*size)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def loaded_tab(open_tab, tab_runner, cls, path, size=(1300, 800)):
    """A tab of class ``cls`` shown at ``size`` (the ``open_tab`` fixture), Live off (each test runs
    when it means to), with ``path`` loaded (``tab_runner``)."""
    tab = open_tab(cls, size)
    tab.live_check.setChecked(False)
    tab_runner.load(tab, path)
    return tab
