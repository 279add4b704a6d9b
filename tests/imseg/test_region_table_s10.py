"""The region table before any result: its headers at the table's own widths (a 1280x800 screen
showed Qt's 100 px defaults, so the third header was cut at the panel's edge)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from app.tabs.imseg_views import COLUMN_WIDTHS, CORE_COLUMNS, RegionTable  # noqa: E402


def test_the_empty_table_shows_its_core_columns_whole(qtbot):
    table = RegionTable()
    qtbot.addWidget(table)
    table.resize(table.minimumWidth(), 400)
    table.show()
    qtbot.waitExposed(table)
    widths = [table.columnWidth(c) for c in range(CORE_COLUMNS)]
    assert widths[:-1] == list(COLUMN_WIDTHS[:CORE_COLUMNS - 1])
    assert widths[-1] >= COLUMN_WIDTHS[CORE_COLUMNS - 1]   # the last shown column stretches to the edge
    shown = sum(table.columnWidth(c) for c in range(len(COLUMN_WIDTHS)) if not table.isColumnHidden(c))
    assert shown <= table.viewport().width()
