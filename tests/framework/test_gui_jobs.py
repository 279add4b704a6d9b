"""Jobs in the window: progress in the status bar, Cancel, errors, closing while busy."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from gui_helpers import (  # noqa: E402
    OtherTab,
    SlowTab,
    failing_job,
    oom_job,
    slow_write,
    stubborn_job,
    user_error_job,
)

from app.gui.main_window import MainWindow  # noqa: E402
from app.ui.worker import JobBusyError, JobRunner  # noqa: E402
from gpu_kernels import backend  # noqa: E402

pytestmark = pytest.mark.gui


@pytest.fixture
def win(qtbot, errors):
    w = MainWindow(tab_classes=[SlowTab, OtherTab])
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


def test_progress_reaches_the_status_bar(win, qtbot, tmp_path):
    tab = win.tabs[0]
    f = tmp_path / "in.slow"
    f.write_text("x")
    with qtbot.waitSignal(tab.input_loaded, timeout=5000):
        assert win.open_path(f)
    tab.form.set_values({"steps": 40, "delay": 0.02})
    with qtbot.waitSignal(tab.result_shown, timeout=10000):
        assert tab.run()
        qtbot.waitUntil(lambda: 0 < win.progress_bar.value() < 1000, timeout=5000)
        assert win.stage_label.text().startswith("Slow tool: step ")
        assert win.cancel_button.isEnabled()
    assert tab.result.steps_done == 40 and tab.shown == [tab.result]
    qtbot.waitUntil(lambda: win.stage_label.text() == "Ready", timeout=2000)
    assert not win.cancel_button.isEnabled()
    assert win.act_save.isEnabled()


def test_cancel_stops_the_job_within_a_second_and_leaves_no_file(win, qtbot, tmp_path):
    tab = win.tabs[0]
    out = tmp_path / "out.txt"
    cancelled, finished = [], []
    tab.runner.cancelled.connect(lambda: cancelled.append(time.monotonic()))
    tab.runner.finished.connect(finished.append)
    tab.runner.start(slow_write, out, 100000, 0.005)
    qtbot.waitUntil(lambda: win.progress_bar.value() > 0 or "step" in win.stage_label.text(), timeout=5000)
    assert tab.runner.is_running()
    t0 = time.monotonic()
    win.cancel_button.click()
    qtbot.waitUntil(lambda: not tab.runner.is_running(), timeout=1000)
    assert cancelled and cancelled[0] - t0 < 1.0
    assert finished == []
    assert list(tmp_path.iterdir()) == [], "a cancelled job must leave no output, not even a temp file"
    assert win.stage_label.text() == "Ready" and not win.cancel_button.isEnabled()


def test_escape_cancels_too(win, qtbot, tmp_path):
    tab = win.tabs[0]
    tab.runner.start(slow_write, tmp_path / "o.txt", 100000, 0.005)
    qtbot.waitUntil(tab.runner.is_running, timeout=1000)
    with qtbot.waitSignal(tab.runner.cancelled, timeout=1000):
        win.act_cancel.trigger()
    assert list(tmp_path.iterdir()) == []


def test_exception_shows_a_dialog_and_the_window_stays_usable(win, qtbot, errors, tmp_path):
    tab = win.tabs[0]
    with qtbot.waitSignal(tab.runner.failed, timeout=5000):
        tab.runner.start(failing_job, "kaboom")
    assert len(errors) == 1
    title, summary, details = errors[0]
    assert title == "Slow tool failed"
    assert "Slow tool failed: RuntimeError: kaboom" in summary
    assert "Traceback" in details and "failing_job" in details
    assert not tab.runner.is_running() and win.stage_label.text() == "Ready"
    # the same tab runs the next job normally
    out = tmp_path / "after.txt"
    with qtbot.waitSignal(tab.runner.finished, timeout=5000):
        tab.runner.start(slow_write, out, 3, 0.0)
    assert out.exists() and len(errors) == 1


def test_out_of_memory_suggests_a_smaller_input_or_the_cpu(win, qtbot, errors):
    tab = win.tabs[0]
    with qtbot.waitSignal(tab.runner.failed, timeout=5000):
        tab.runner.start(oom_job)
    summary = errors[0][1]
    assert summary.startswith("Slow tool ran out of GPU memory")
    assert "smaller input" in summary and "--device cpu" in summary and "CPU" in summary


def test_user_errors_have_no_traceback(win, qtbot, errors):
    tab = win.tabs[0]
    with qtbot.waitSignal(tab.runner.failed, timeout=5000):
        tab.runner.start(user_error_job)
    assert errors[0][1] == "Slow tool: the file has no faces; give a mesh, not a point cloud"
    assert errors[0][2] == ""


def test_one_job_per_tab_but_tabs_run_side_by_side(win, qtbot, tmp_path):
    slow, other = win.tabs
    slow.runner.start(slow_write, tmp_path / "a.txt", 100000, 0.005)
    with pytest.raises(JobBusyError, match="already running"):
        slow.runner.start(slow_write, tmp_path / "b.txt")
    with qtbot.waitSignal(other.runner.finished, timeout=5000):
        other.runner.start(slow_write, tmp_path / "c.txt", 5, 0.0)
    assert slow.runner.is_running()
    # the status bar still follows the job that is running
    qtbot.waitUntil(lambda: win.stage_label.text().startswith("Slow tool"), timeout=2000)
    assert win.cancel_button.isEnabled()
    slow.runner.cancel()
    qtbot.waitUntil(lambda: not slow.runner.is_running(), timeout=1000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]


def test_closing_the_window_while_a_job_runs_stops_it_cleanly(qtbot, tmp_path, errors):
    w = MainWindow(tab_classes=[SlowTab, OtherTab])
    qtbot.addWidget(w)
    w.show()
    tab = w.tabs[0]
    tab.runner.start(slow_write, tmp_path / "o.txt", 100000, 0.005)
    qtbot.waitUntil(lambda: w.progress_bar.value() > 0, timeout=5000)
    t0 = time.monotonic()
    assert w.close()
    assert time.monotonic() - t0 < 2.0
    assert not tab.runner.is_running()
    assert list(tmp_path.iterdir()) == []
    assert errors == []


def test_closing_waits_for_a_job_that_ignores_cancel(qtbot, errors):
    w = MainWindow(tab_classes=[SlowTab])
    qtbot.addWidget(w)
    tab = w.tabs[0]
    tab.runner.start(stubborn_job, 0.5)
    qtbot.waitUntil(tab.runner.is_running, timeout=1000)
    t0 = time.monotonic()
    w.shutdown_jobs(timeout_ms=100)
    assert time.monotonic() - t0 >= 0.3
    assert not tab.runner.is_running()
    w.close()


# ----------------------------------------------------------------- JobRunner alone
def test_runner_runs_in_a_worker_thread_on_the_chosen_device(qtbot, monkeypatch):
    from app.ui import worker

    monkeypatch.setattr(worker, "PROGRESS_GRACE_S", 0.0)   # a job this short reports nothing otherwise
    r = JobRunner(name="Probe")
    seen = {}

    def probe(x, *, device, progress, y=0):
        seen["thread"] = threading.current_thread()
        seen["backend"] = device.label
        progress.update(1.0, "done")
        return x + y

    changes = []
    r.running_changed.connect(changes.append)
    with qtbot.waitSignal(r.finished, timeout=5000) as b:
        r.start(probe, 2, y=3, device="cpu")
    assert b.args == [5]
    assert seen["thread"] is not threading.main_thread() and seen["backend"] == "cpu"
    qtbot.waitUntil(lambda: changes == [True, False], timeout=1000)
    assert r.last_progress == (1.0, "done")


def test_runner_sends_no_progress_in_a_jobs_first_moments(qtbot, monkeypatch):
    """A job shorter than PROGRESS_GRACE_S (a live edit) sends no reports: each one re-lays out the
    window while the job runs (benchmarks/results/echo_gap_session11.md); later ones come."""
    from app.ui import worker

    monkeypatch.setattr(worker, "PROGRESS_GRACE_S", 0.2)
    r = JobRunner(name="Probe")
    got = []
    r.progress.connect(lambda f, s: got.append(s))

    def quick(*, device, progress):   # ends inside the grace: no report at all, also not when the grace ends
        progress.update(0.5, "early")
        return 1

    def slow(*, device, progress):
        time.sleep(0.3)
        progress.update(0.9, "late")
        return 1

    for job in (quick, slow):
        with qtbot.waitSignal(r.finished, timeout=5000):
            r.start(job, device="cpu")
        qtbot.waitUntil(lambda: not r.is_running(), timeout=1000)
        qtbot.wait(300)   # past the grace's end
    assert "early" not in got and "late" in got


@pytest.mark.skipif(backend.cupy_available(), reason="this machine has a CUDA device")
def test_runner_reports_an_unusable_device_as_one_line(qtbot):
    r = JobRunner(name="Probe")
    with qtbot.waitSignal(r.failed, timeout=5000) as b:
        r.start(lambda *, device, progress: 1, device="cuda")
    summary, details = b.args
    assert summary.startswith("Probe: ") and "--device cpu" in summary and "\n" not in summary
    assert details == ""


def test_runner_shutdown_when_idle_is_immediate():
    r = JobRunner()
    assert r.shutdown(0) is True
    assert not r.is_running()
    r.cancel()  # no-op when idle


def test_signal_emit_does_not_leak_references(qtbot):
    """PySide6 6.12.0's Signal.emit() drops a reference to True on every call, which
    aborts the interpreter after a few thousand progress updates (pyproject excludes it)."""
    import sys

    r = JobRunner()
    got = []
    r.progress.connect(lambda f, s: got.append(f))
    before = sys.getrefcount(True)
    for _ in range(500):
        r.progress.emit(0.5, "x")
    assert len(got) == 500
    assert abs(sys.getrefcount(True) - before) < 50

def test_a_stage_entered_in_the_grace_is_shown_when_it_ends(qtbot, monkeypatch):
    """A stage that reports once in the job's first moments and then runs long is named when the grace
    ends, not left at "starting" until its next report (reviewer, session 11)."""
    from app.ui import worker

    monkeypatch.setattr(worker, "PROGRESS_GRACE_S", 0.2)
    r = JobRunner(name="Probe")
    gate = threading.Event()

    def job(*, device, progress):
        progress.update(0.1, "stage A")
        gate.wait(5)
        return 1

    with qtbot.waitSignal(r.finished, timeout=8000):
        r.start(job, device="cpu")
        qtbot.waitUntil(lambda: r.last_progress == (0.1, "stage A"), timeout=3000)
        gate.set()
    qtbot.waitUntil(lambda: not r.is_running(), timeout=1000)
