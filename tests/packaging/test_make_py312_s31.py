"""`make test-py312` (session 31): CI's second leg runs the whole check again on Python 3.12, the other version
pyproject.toml declares. Its interpreter search must take a Python that runs as 3.12, pass over one that does not
(a pyenv shim with no 3.12 selected answers "command not found"), and say so where there is none."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _fake(folder: Path, name: str, version_ok: bool) -> Path:
    """A python3.12 that passes (exit 0) or fails (exit 1, as a shim does) the Makefile's version probe."""
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(f"#!/bin/sh\nexit {0 if version_ok else 1}\n")
    p.chmod(0o755)
    return p


def _make(path_dirs: list[Path], home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=os.pathsep.join([str(d) for d in path_dirs] + ["/usr/bin", "/bin"]),
               HOME=str(home))
    env.pop("PY312", None)
    env.pop("MAKEFLAGS", None)
    return subprocess.run(["make", "--no-print-directory", *args, "test-py312"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_no_python_312_is_said_in_one_line_and_runs_nothing(tmp_path):
    shim = _fake(tmp_path / "shims", "python3.12", version_ok=False)
    r = _make([shim.parent], tmp_path / "home")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines() == [
        "make test-py312: no Python 3.12 here (python3.12 on PATH, or ~/.pyenv/versions/3.12*): not run"]


def test_a_shim_is_passed_over_for_pyenvs_312(tmp_path):
    shim = _fake(tmp_path / "shims", "python3.12", version_ok=False)
    real = _fake(tmp_path / "home/.pyenv/versions/3.12.1/bin", "python3.12", version_ok=True)
    r = _make([shim.parent], tmp_path / "home", "-n")
    assert r.returncode == 0, r.stderr
    assert f"PYTHON={real} VENV=.venv312" in r.stdout


def test_python_312_on_path_comes_first(tmp_path):
    on_path = _fake(tmp_path / "bin", "python3.12", version_ok=True)
    _fake(tmp_path / "home/.pyenv/versions/3.12.1/bin", "python3.12", version_ok=True)
    r = _make([on_path.parent], tmp_path / "home", "-n")
    assert f"PYTHON={on_path} VENV=.venv312" in r.stdout


def test_ci_runs_both_legs():
    lines = [ln.strip() for ln in (ROOT / ".ci/run").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    assert lines[-2:] == ["make test", "make test-py312"]
