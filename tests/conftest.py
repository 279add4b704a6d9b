"""Shared test set-up.

Imports neither Qt nor CuPy: on the GPU host (no Qt) ``pytest -m gpu`` needs only
numpy, scipy, cupy and pytest. GUI test modules do ``pytest.importorskip("PySide6")``.

- ``gpu``-marked tests are skipped, with the reason, unless CuPy finds a CUDA device.
- ``medical``- and ``batch``-marked tests, and those that take ``qtbot`` or ``qapp``, are skipped with the reason where
  their extra (or pytest-qt) is absent, and ``installed``-marked ones where gpulab is not installed as a package,
  except under ``make test`` (``GPULAB_TEST_EXTRAS=required``), where they fail.
- Every test gets its own QSettings file (``GPULAB_SETTINGS_DIR``) and starts with the
  compute device chosen automatically, so no test sees another's state.
- Without a display (no Xvfb for pytest-xvfb to start), Qt runs offscreen.
"""

from __future__ import annotations

import locale
import os
import shutil

import pytest


@pytest.hookimpl(trylast=True)
def pytest_addoption(parser):
    # pyproject.toml configures pytest-qt, pytest-xvfb and pytest-timeout; on the GPU host,
    # where they are not installed, declare their options so pytest does not warn
    known = getattr(parser, "_inidict", {})
    for name in ("qt_api", "xvfb_width", "xvfb_height", "timeout"):
        if name not in known:
            parser.addini(name, help="(used by a plugin that is not installed here)")


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    # runs after pytest-xvfb's hook: DISPLAY is set by now if it could start Xvfb
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("PYVISTA_OFF_SCREEN", "false")
    # no background compile of the mesh merge loop in the test processes (it would take a core from timed tests at
    # random points); tests/mesh/test_speed13_warm.py turns it on where it tests it
    os.environ.setdefault("GPULAB_MESH_WARM_UP", "0")
    # the fuzz harness's totals (tests/framework/fuzz_summary.py) in every process of a run:
    # pytest-xdist's controller collects no test, so it never loads tests/framework/conftest.py
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "framework"))
    import fuzz_summary

    if not config.pluginmanager.is_registered(fuzz_summary):
        config.pluginmanager.register(fuzz_summary, "gpulab-fuzz-summary")


def pytest_report_header(config):
    from gpu_kernels import backend

    plat = os.environ.get("QT_QPA_PLATFORM", "default")
    reason = backend._no_cuda_reason()
    gpu = "CUDA device found" if not reason else f"no GPU tests ({reason})"
    return [f"gpulab: Qt platform {plat}, DISPLAY={os.environ.get('DISPLAY', '')}; {gpu}",
            f"gpulab: nvcc {'at ' + shutil.which('nvcc') if shutil.which('nvcc') else 'not found'}"]


#: ``make test`` sets it to "required": there nothing is skipped for a missing extra or a missing pytest-qt, and the
#: tests that need one fail, so that CI cannot pass by skipping them
EXTRAS_ENV = "GPULAB_TEST_EXTRAS"
#: pytest-qt's fixtures that the suite takes (a GPU host has no pytest-qt: check31c found ``qapp`` beside ``qtbot``)
QT_FIXTURES = ("qtbot", "qapp")


def _absent(modules):
    import importlib.util

    out = []
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                out.append(name)
        except (ImportError, ValueError):  # a module blocked in sys.modules, or a broken package
            out.append(name)
    return out


def _installed(dist: str) -> bool:
    """Whether the distribution ``dist`` is installed (its metadata can be read)."""
    import importlib.metadata as md

    try:
        md.version(dist)
    except md.PackageNotFoundError:
        return False
    return True


def _extra_skips(config, items):
    """Where an optional part is absent (a GPU host, an install without an extra) its tests skip and say what
    they need: the ``medical`` and ``batch`` markers, the ``installed`` marker where gpulab is not installed as a
    package, and every test that takes pytest-qt's ``qtbot`` or ``qapp`` (directly or through a fixture) when
    pytest-qt is not there."""
    if os.environ.get(EXTRAS_ENV) == "required":
        return
    from extras_table import MARKED, modules_of  # tests/: on sys.path beside this file

    reasons = {}
    for marker, what in MARKED.items():
        missing = _absent(modules_of(marker))
        if missing:
            reasons[marker] = f"needs {what}; missing here: {', '.join(missing)}"
    if not _installed("gpulab"):
        # (session 32: a checkout on PYTHONPATH, as on the GPU host, has no metadata of gpulab or its dependencies)
        reasons["installed"] = ("needs gpulab installed as a package (make dev, or pip install -e .): "
                                "no gpulab metadata here")
    for item in items:
        for marker, reason in reasons.items():
            if item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))
                break
        else:
            info = getattr(item, "_fixtureinfo", None)
            gone = [f for f in QT_FIXTURES if info is not None and f in item.fixturenames
                    and not info.name2fixturedefs.get(f)]
            if gone:
                item.add_marker(pytest.mark.skip(reason=f"needs PySide6 and pytest-qt (the dev extra): the {gone[0]} "
                                                        "fixture is not there"))


def pytest_collection_modifyitems(config, items):
    _extra_skips(config, items)
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    from gpu_kernels import backend

    reason = backend._no_cuda_reason()
    if not reason:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA device: {reason}")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


#: the process's C locale when the session started, before any test could change it
_START_LOCALE = locale.setlocale(locale.LC_ALL)


@pytest.fixture(autouse=True)
def _collect_cycles_between_tests():
    """Once a GUI test installed app.ui.gc_guard, cycles are collected only when Qt's event
    loop runs; between tests (in the main thread) collect what is due, as its timer would."""
    yield
    import sys

    guard = sys.modules.get("app.ui.gc_guard")
    if guard is not None and guard.installed():
        from PySide6.QtCore import QCoreApplication

        g = QCoreApplication.instance().findChild(guard._Guard, "gpulab-gc-guard")
        if g is not None:
            g.check()


@pytest.fixture(autouse=True)
def _keep_c_locale():
    """Some libraries a test drives set the process's C locale to "C" (GDCM's DICOM writer does):
    every later text file opened without an encoding would then be read as ASCII. Every test
    starts and ends with the session's starting locale."""
    if locale.setlocale(locale.LC_ALL) != _START_LOCALE:  # changed by a module fixture
        locale.setlocale(locale.LC_ALL, _START_LOCALE)
    yield
    if locale.setlocale(locale.LC_ALL) != _START_LOCALE:
        locale.setlocale(locale.LC_ALL, _START_LOCALE)


@pytest.fixture(autouse=True)
def _isolated_gpulab_state(tmp_path_factory, monkeypatch):
    """A private settings folder per test, and the device back on auto afterwards."""
    d = tmp_path_factory.mktemp("settings")
    monkeypatch.setenv("GPULAB_SETTINGS_DIR", str(d))
    monkeypatch.delenv("GPULAB_DEVICE", raising=False)
    from gpu_kernels import backend

    saved = backend._default_spec
    yield
    backend._default_spec = saved


@pytest.fixture
def settings_dir():
    """The folder of this test's QSettings file."""
    return os.environ["GPULAB_SETTINGS_DIR"]


@pytest.fixture
def errors(monkeypatch):
    """Error dialogs the main window would show, recorded as ``(title, summary, details)``
    instead of opening (GUI tests only; imports Qt when used)."""
    from app.gui.main_window import MainWindow

    calls = []
    monkeypatch.setattr(MainWindow, "show_error",
                        lambda self, title, summary, details="": calls.append((title, summary, details)))
    return calls


@pytest.fixture
def errors_of(monkeypatch):
    """Error dialogs of tabs shown on their own, recorded as (title, summary, details)."""
    from app.tabs.base import StandaloneHost

    calls = []
    monkeypatch.setattr(StandaloneHost, "show_error", lambda self, t, s, d="": calls.append((t, s, d)))
    return calls


@pytest.fixture
def open_tab(qtbot, errors_of):
    """``open_tab(TabClass, size)`` shows a tab on its own (its error dialogs recorded in
    ``errors_of``) and shuts its worker down after the test (GUI tests only)."""
    tabs = []

    def make(cls, size=(1300, 800)):
        t = cls()
        qtbot.addWidget(t)
        t.resize(*size)
        t.show()
        qtbot.waitExposed(t)
        tabs.append(t)
        return t

    yield make
    for t in tabs:
        t.runner.shutdown(10000)


@pytest.fixture
def tab_runner(qtbot):
    """Drive a :class:`app.tabs.base.ToolTab` to the end, as a user would (GUI tests only).

    ``tab_runner.load(tab, path)`` opens a file on the tab's worker and waits until it is
    shown; ``tab_runner.run(tab, device="cpu", **params)`` sets the form, presses Run and
    waits for the result (also through a "too large" re-run), returning ``tab.result``, or
    ``None`` when the run failed or was cancelled.
    """

    class TabRunner:
        def load(self, tab, path, timeout=30000):
            with qtbot.waitSignal(tab.input_loaded, timeout=timeout):
                assert tab.open_file(path), f"{tab.title} did not start loading {path}"
            return tab.data

        def run(self, tab, *, device="cpu", timeout=120000, **params):
            if params:
                tab.form.set_values(params)
            ended = []
            handlers = [(tab.result_shown, lambda: ended.append("result")),
                        (tab.runner.failed, lambda *_: ended.append("failed")),
                        (tab.runner.cancelled, lambda: ended.append("cancelled"))]
            for sig, fn in handlers:
                sig.connect(fn)
            try:
                if not tab.run(device=device):
                    return None
                qtbot.waitUntil(lambda: bool(ended) and not tab.runner.is_running(), timeout=timeout)
                qtbot.wait(10)  # a "too large" re-run starts from the event loop
                if tab.runner.is_running():
                    qtbot.waitUntil(lambda: ended[-1] == "result" and not tab.runner.is_running(),
                                    timeout=timeout)
            finally:
                for sig, fn in handlers:
                    sig.disconnect(fn)
            return tab.result if ended and ended[-1] == "result" else None

    return TabRunner()
