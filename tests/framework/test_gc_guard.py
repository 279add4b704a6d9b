"""Reference cycles are collected in the GUI thread only (app.ui.gc_guard).

CI once crashed with a segmentation fault while a tab's worker thread read a PLY file: the
worker's allocations started a cyclic collection there, and it freed the Qt/VTK objects of
a tab closed by the previous test outside the GUI thread.
"""

from __future__ import annotations

import gc
import threading

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.ui import gc_guard  # noqa: E402
from app.ui.worker import JobRunner  # noqa: E402

pytestmark = pytest.mark.gui


class _Cycle:
    freed_in: list[str] = []

    def __init__(self):
        self.me = self

    def __del__(self):
        _Cycle.freed_in.append(threading.current_thread().name)


def test_a_job_runner_turns_collection_over_to_the_gui_thread(qtbot, qapp):
    JobRunner(None, name="t")
    assert gc_guard.installed() and not gc.isenabled()
    gc.collect()
    _Cycle.freed_in = []

    def worker():
        for _ in range(5000):      # far over generation 0's threshold: would collect here
            _Cycle()
            [[] for _ in range(5)]

    t = threading.Thread(target=worker, name="worker")
    t.start()
    t.join()
    assert "worker" not in _Cycle.freed_in
    qtbot.waitUntil(lambda: len(_Cycle.freed_in) >= 4000, timeout=5000)  # the timer collects
    assert set(_Cycle.freed_in) == {threading.main_thread().name}


def test_the_guard_collects_only_generations_over_their_threshold(qapp):
    gc_guard.install()
    guard = qapp.findChild(gc_guard._Guard, "gpulab-gc-guard")
    gc.collect()
    _Cycle.freed_in = []
    _Cycle()
    guard.check()                  # one object is under the threshold: nothing collected
    assert _Cycle.freed_in == []
    gc_guard.collect_now()
    assert _Cycle.freed_in == [threading.main_thread().name]
