"""The echo tab as the session-6 walkthrough used it: pinned slices side by side (CPU, offscreen)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from _gui_helpers import loaded_tab  # noqa: E402
from PySide6.QtCore import QPointF  # noqa: E402

from app.tabs.echo_tab import EchoTab  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "echo" / "lv_synthetic.npz"


def _right_edge(view, plane) -> float:
    """The right edge of ``plane``'s picture area in the slice widget's pixels."""
    r = plane.vb.sceneBoundingRect()
    return view.glw.mapFromScene(QPointF(r.right(), r.center().y())).x()


def pinned_pair(qtbot, open_tab, tab_runner):
    """The echo tab at 1300 x 800 with the sample: a fast run pinned beside another (alpha 0.2)."""
    tab = loaded_tab(open_tab, tab_runner, EchoTab, SAMPLE)
    assert tab_runner.run(tab, levels=1, iters=3) is not None
    assert tab.pin()
    assert tab_runner.run(tab, levels=1, iters=3, alpha=0.2) is not None
    qtbot.wait(100)
    return tab


@pytest.mark.slow
def test_pinned_slice_views_fit_their_halves(qtbot, open_tab, tab_runner):
    # before: the three titles "Sagittal, x = 24 (frame 2)" forced each half wider than it is,
    # so the sagittal view and its title were cut off at the right edge (1300 px window, pinned)
    tab = pinned_pair(qtbot, open_tab, tab_runner)
    pinned_view = tab._pinned_slot["view"]
    for view in (tab.view, pinned_view):
        w = view.glw.width()
        assert w < 520, "the test needs the halves narrow"
        for p in view.planes:
            assert _right_edge(view, p) <= w + 1, (p.title.text, _right_edge(view, p), w)
            assert p.title.item.boundingRect().width() <= p.vb.width() + 4, p.title.text
    assert "Sagittal, x = " in tab.view.planes[2].title.text and "frame" in tab.view.planes[2].title.text


def test_copy_command_names_the_chosen_moving_volume(qtbot, open_tab, tab_runner, tmp_path):
    # before: "gpulab echo fixed.npy -o ..." alone, which the CLI refuses ("a single 3-D volume:
    # give MOVING too"): the copied command did not repeat what was on screen
    import os
    import shlex
    import subprocess
    import sys

    import numpy as np

    with np.load(SAMPLE) as z:
        key = next(k for k in ("volume", "frames", "data", "image") if k in z.files)
        frames = np.asarray(z[key])
    (tmp_path / "other").mkdir()      # not beside the fixed one: nothing pairs them but the user
    np.save(tmp_path / "fixed.npy", frames[0])
    np.save(tmp_path / "other" / "later.npy", frames[2])
    tab = open_tab(EchoTab, (1300, 800))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, tmp_path / "fixed.npy")
    with qtbot.waitSignal(tab.input_loaded, timeout=30000):
        assert tab.data.n_frames == 1 and tab.choose_moving(tmp_path / "other" / "later.npy")
    assert tab_runner.run(tab, levels=1, iters=3) is not None
    # Save result / Export never write over the moving volume either (ToolTab.input_files)
    from app.io.atomic import OutputPathError, check_not_an_input

    with pytest.raises(OutputPathError):
        check_not_an_input(tmp_path / "other" / "later.npy", tab.input_files())
    cmd = tab.command_line()
    argv = shlex.split(cmd)
    assert argv[:4] == ["gpulab", "echo", str(tmp_path / "fixed.npy"), str(tmp_path / "other" / "later.npy")]
    out = tmp_path / "cli"
    out.mkdir()
    r = subprocess.run([sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main(sys.argv[1:]))",
                        *argv[1:]], cwd=out, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert r.returncode == 0, r.stderr[-1500:]
    gui = tmp_path / "gui.npy"
    tab.save_result(gui, tab.tool.export("field"))
    o = argv.index("-o")
    assert np.array_equal(np.load(out / argv[o + 1]), np.load(gui))
