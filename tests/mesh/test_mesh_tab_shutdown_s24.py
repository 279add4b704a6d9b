"""Session 24: closing the window (``ToolTab.shutdown``) cancels the mesh tab's background clustering, whose
non-daemon thread the exit would otherwise wait for (seconds for a full-resolution graph on a CPU)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from test_prefetch_cancel_session23 import _slow_prefetch  # noqa: E402  (tests/mesh is on sys.path under pytest)

from app.tabs.mesh_tab import MeshTab  # noqa: E402
from gpu_kernels.jobs import Cancelled  # noqa: E402
from gpu_kernels.mesh import segment as segmod  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


def test_shutdown_cancels_the_tabs_prefetch(open_tab, tab_runner, monkeypatch):
    started = _slow_prefetch(monkeypatch)
    tab = open_tab(MeshTab, (1200, 760))
    tab_runner.load(tab, SAMPLES / "dumbbell.ply")
    assert tab_runner.run(tab, apsp="cpu", k="auto", max_faces=800) is not None
    preps = [e[0] for e in tab.cache._entries.values()
             if isinstance(e[0], segmod.PreparedMesh) and e[3] == tab.settings_key]
    job = preps[0].prefetch
    assert job is not None and started.wait(5)
    t = time.perf_counter()
    assert tab.shutdown(10000)
    job.join(5)
    assert job.done() and time.perf_counter() - t < 5.0  # (not the ~30 s of the stand-in)
    with pytest.raises(Cancelled):
        job.result()
