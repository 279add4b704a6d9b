"""Session 22: every yes / no ``GPULAB_*`` switch of the compute layer is read by one function,
``gpu_kernels.env.flag``: the same words mean the same in every module (before, ``GPULAB_MVS_PINNED=false`` kept
pinned memory on, since only "0" turned the MVS switches off), and a value that is no yes / no word warns once and
keeps the default instead of a silent guess (``GPULAB_MESH_CANONICAL_ORDER=maybe`` meant off)."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from gpu_kernels import env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("raw", "default", "want"), [
    ("1", False, True), ("TRUE", False, True), (" yes ", False, True), ("On", False, True),
    ("0", True, False), ("false", True, False), ("No", True, False), ("off ", True, False),
    ("", True, True), ("", False, False), (None, True, True), (None, False, False),
])
def test_the_yes_no_words(raw, default, want, monkeypatch):
    if raw is None:
        monkeypatch.delenv("GPULAB_TEST_FLAG", raising=False)
    else:
        monkeypatch.setenv("GPULAB_TEST_FLAG", raw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none of these warns
        assert env.flag("GPULAB_TEST_FLAG", default) is want


def test_another_value_warns_once_and_keeps_the_default(monkeypatch):
    monkeypatch.setenv("GPULAB_TEST_FLAG2", "maybe")
    monkeypatch.setattr(env, "_warned", set())
    with pytest.warns(RuntimeWarning, match=r"GPULAB_TEST_FLAG2='maybe' is not a yes/no value.*on, its default"):
        assert env.flag("GPULAB_TEST_FLAG2", True) is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert env.flag("GPULAB_TEST_FLAG2", False) is False  # (once per variable)


def test_a_switch_read_at_import_warns_and_keeps_its_default():
    code = ("import warnings; warnings.simplefilter('always')\n"
            "from gpu_kernels.mesh import simplify; print(simplify.CANONICAL_ORDER)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "GPULAB_MESH_CANONICAL_ORDER": "maybe",
                            "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"  # (its default since session 22)
    assert "GPULAB_MESH_CANONICAL_ORDER='maybe' is not a yes/no value" in r.stderr


def test_no_module_parses_a_yes_no_switch_by_hand():
    """The compute layer reads no ``GPULAB_*`` variable against "0" / "1" or a list of words itself (the numeric
    and other settings, e.g. ``GPULAB_MVS_LEVELS`` or ``GPULAB_PYMESHLAB_CLOCK=real``, are not yes / no)."""
    pat = re.compile(r"""environ\.get\(\s*["'](GPULAB_[A-Z0-9_]+)["'][^)]*\)[^\n]*?(?:[!=]=\s*["'][01]["']|"""
                     r"""\bin\s*\(\s*["'](?:0|1|true|false)["'])""")
    found = []
    for p in sorted((ROOT / "gpu_kernels").rglob("*.py")):
        for m in pat.finditer(p.read_text()):
            found.append(f"{p.relative_to(ROOT)}: {m.group(1)}")
    assert not found, found
