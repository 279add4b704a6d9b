"""Tests that need an optional part of an install (session 31): where the medical extra (SimpleITK), the batch
extra (Dask) or pytest-qt is absent, as on a GPU host or in an install without the extras, their tests skip and say
what they need; under ``make test`` (``GPULAB_TEST_EXTRAS=required``) they run, and fail where the part is
missing, so that CI cannot pass by skipping them. Each case runs pytest in a child process on real tests of the
suite, with the extra's modules blocked (``sys.modules[name] = None``) by a small plugin. Session 32: the same for
the tests that need gpulab installed as a package (marker ``installed``), where a checkout is only on PYTHONPATH."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MEDICAL_TEST = "tests/framework/test_data_safety.py::test_the_user_can_allow_outside_paths"
GUI_TEST = "tests/framework/test_tools_agree.py::test_the_form_shows_the_defaults_and_the_ranges"

pytestmark = pytest.mark.slow


#: (session 32) the plugin's lines that make gpulab look not installed: its metadata is not found
NOT_INSTALLED = ("import importlib.metadata as _md\n_version = _md.version\n"
                 "def _no_gpulab(name):\n"
                 "    if name == 'gpulab':\n"
                 "        raise _md.PackageNotFoundError(name)\n"
                 "    return _version(name)\n"
                 "_md.version = _no_gpulab\n")
INSTALLED_TEST = "tests/packaging/test_packaging.py::test_one_version_from_pyproject"


def _pytest(tmp_path, *args, block=(), required=False, code=""):
    (tmp_path / "block_extras_s31.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in block) + code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    env.pop("GPULAB_TEST_EXTRAS", None)
    if required:
        env["GPULAB_TEST_EXTRAS"] = "required"
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "block_extras_s31", "-p", "no:cacheprovider",
                        "-p", "no:xdist", "-q", "-rs", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=240)
    return r.returncode, r.stdout + r.stderr


def test_a_medical_test_skips_with_its_reason_where_simpleitk_is_absent(tmp_path):
    rc, out = _pytest(tmp_path, MEDICAL_TEST, block=("SimpleITK",))
    assert rc == 0, out
    assert "1 skipped" in out and "needs the medical extra (SimpleITK)" in out and "missing here: SimpleITK" in out


def test_under_make_test_a_missing_extra_fails_instead(tmp_path):
    rc, out = _pytest(tmp_path, MEDICAL_TEST, block=("SimpleITK",), required=True)
    assert rc == 1 and "1 failed" in out, out


def test_with_the_extra_present_the_test_runs(tmp_path):
    pytest.importorskip("SimpleITK")
    rc, out = _pytest(tmp_path, MEDICAL_TEST)
    assert rc == 0 and "1 passed" in out, out


def test_qtbot_tests_skip_without_pytest_qt(tmp_path):
    pytest.importorskip("PySide6")
    rc, out = _pytest(tmp_path, "-p", "no:pytest-qt", GUI_TEST)
    assert rc == 0, out
    assert "5 skipped" in out and "needs PySide6 and pytest-qt" in out, out
    rc, out = _pytest(tmp_path, "-p", "no:pytest-qt", GUI_TEST, required=True)
    assert rc == 1 and "5 error" in out, out


def test_qapp_tests_skip_without_pytest_qt_too(tmp_path):
    """check31c: on the H200 three tests that take pytest-qt's ``qapp`` (not ``qtbot``) still stopped as errors."""
    pytest.importorskip("PySide6")
    test = "tests/packaging/test_packaging.py::test_the_window_says_which_desktop_entry_it_belongs_to"
    rc, out = _pytest(tmp_path, "-p", "no:pytest-qt", test)
    assert rc == 0 and "1 skipped" in out and "the qapp fixture is not there" in out, out


@pytest.mark.installed
def test_a_test_that_needs_gpulab_installed_skips_where_it_is_not(tmp_path):
    """check32b: on the H200 (the checkout on PYTHONPATH) the two tests that read gpulab's metadata failed."""
    rc, out = _pytest(tmp_path, INSTALLED_TEST)
    assert rc == 0 and "1 passed" in out, out
    rc, out = _pytest(tmp_path, INSTALLED_TEST, code=NOT_INSTALLED)
    assert rc == 0 and "1 skipped" in out and "needs gpulab installed as a package" in out, out
    rc, out = _pytest(tmp_path, INSTALLED_TEST, code=NOT_INSTALLED, required=True)
    assert rc == 1 and "1 failed" in out, out
