"""The project's layout rules: Qt stays out of the compute library, the file I/O and
the headless commands; the compute library does not depend on the app."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "pyvistaqt", "pyqtgraph", "qtpy")


def _imports(py: Path) -> set[str]:
    tree = ast.parse(py.read_text(encoding="utf-8"), filename=str(py))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _py_files(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


def test_top_level_layout():
    for name in ("app", "gpu_kernels", "resources", "tests", "benchmarks", "packaging"):
        assert (ROOT / name).is_dir(), name
    for name in ("pyproject.toml", "README.md", "Makefile", ".ci/run"):
        assert (ROOT / name).is_file(), name


@pytest.mark.parametrize("package", ["gpu_kernels", "app/io", "app/render", "app/tools", "app/commands"])
def test_no_qt_imports_in_source(package):
    bad = []
    for py in _py_files(package):
        for name in _imports(py):
            if name.split(".")[0] in QT_MODULES or name.startswith(("app.gui", "app.tabs", "app.ui")):
                bad.append(f"{py.relative_to(ROOT)}: import {name}")
    assert not bad, "Qt must stay out of the compute library and the file I/O:\n" + "\n".join(bad)


def test_compute_library_does_not_import_the_app():
    bad = [f"{py.relative_to(ROOT)}: import {n}" for py in _py_files("gpu_kernels")
           for n in _imports(py) if n == "app" or n.startswith("app.")]
    assert not bad, "\n".join(bad)


def test_headless_modules_import_without_qt():
    """Importing every compute, I/O and command module must not load Qt (the GPU host
    and the CLI run without it)."""
    mods = []
    for py in _py_files("gpu_kernels", "app/io", "app/render", "app/tools", "app/commands"):
        rel = py.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        mods.append(".".join(parts))
    mods.append("app.cli")
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}:\n"
        "    importlib.import_module(m)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r})\n"
        "print(','.join(bad))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"Qt modules loaded by headless code: {r.stdout.strip()}"


def test_import_linter_contracts():
    pytest.importorskip("importlinter")
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("lint-imports is not installed")
    r = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, encoding="utf-8", errors="replace",
                       timeout=300, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"Contracts: [1-9]\d* kept, 0 broken", r.stdout), r.stdout
    assert "Layers: " in r.stdout  # the layers contract is among them
