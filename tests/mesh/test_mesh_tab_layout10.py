"""The mesh tab's side panel says which k = auto layout was kept when Auto-k layout = concave compares
two (review B, session 10: only the CLI and the exported summary said it)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.tabs.mesh_tab import MeshTab  # noqa: E402

pytestmark = pytest.mark.gui
SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


@pytest.mark.parametrize("layout", ["concave", "auto"])
def test_the_side_panel_names_the_kept_layout(open_tab, tab_runner, layout):
    tab = open_tab(MeshTab, (1200, 760))
    tab.form.set_value("apsp", "cpu")
    tab.form.set_value("k", "auto")
    tab.form.set_value("auto_layout", layout)
    tab_runner.load(tab, SAMPLES / "dumbbell.ply")
    result = tab_runner.run(tab)
    assert result is not None
    text = tab.summary_label.text()
    if layout == "concave":
        assert "auto-k layout:" in text and "concave boundaries" in text, text
    else:
        assert "auto-k layout" not in text, text
