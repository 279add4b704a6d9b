"""Issue 22 (session 16): ``simplify.STILL_CLOCK``. pymeshlab's quadric decimation reads the process's CPU time
(libc ``clock()``) once per candidate collapse, for a 0.1 s budget after which MeshLab's filter only reports progress
and resumes (VCG's ``LocalOptimization``). With the switch on, the decimation plugin's ``clock`` slot points at a
function that returns a constant: the same working mesh, without ~17,000 system calls per 12k -> 4k step.

Tested here: the same vertices and faces with the standing clock, the real one, and a clock that runs out after
every other candidate (the decimation resumed thousands of times: resuming changes nothing); the slot is put back
when the switch is off; a plugin that is not found, or a lookup that fails, leaves everything as it was; the same
labels and colours end to end."""

from __future__ import annotations

import ctypes
import hashlib
import platform
import sys

import numpy as np
import pytest
from test_speed8_simplify import _sphere  # (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import segment
from gpu_kernels.mesh import simplify as simp

_LINUX_X86 = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def _sha(*arrays) -> str:
    return hashlib.sha1(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()


@pytest.fixture
def pml():
    mod = pytest.importorskip("pymeshlab")
    if not _LINUX_X86:
        pytest.skip("the clock slot is looked for on Linux x86-64 only")
    if simp._clock_slot() is None:
        pytest.fail("pymeshlab is installed here, but its decimation plugin's clock slot was not found")
    yield mod
    simp._set_decimation_clock(False)


def _step(monkeypatch, still: bool, v, f, target: int):
    monkeypatch.setattr(simp, "STILL_CLOCK", still)
    return simp._simplify_pymeshlab(v, f, target)


def test_the_switch():
    assert simp.STILL_CLOCK is False   # (until its rule is judged on the H100)


def test_the_same_working_mesh_with_the_clock_standing_still(pml, monkeypatch):
    v, f = _sphere(50)   # ~9.8k faces
    for target in (4000, 1500):
        real = _step(monkeypatch, False, v, f, target)
        still = _step(monkeypatch, True, v, f, target)
        assert _sha(*still) == _sha(*real)
        assert still[1].shape[0] <= target + 2


def test_resuming_the_decimation_changes_nothing(pml, monkeypatch):
    """A clock that advances 60 ms per read runs the 0.1 s budget out every other candidate: MeshLab's filter then
    resumes the decimation thousands of times, and the result is the standing clock's."""
    v, f = _sphere(50)
    still = _step(monkeypatch, True, v, f, 1500)
    addr, _, _ = simp._clock_slot()
    reads = [0]

    @ctypes.CFUNCTYPE(ctypes.c_long)
    def racing():
        reads[0] += 1
        return reads[0] * 60_000   # µs (CLOCKS_PER_SEC = 1e6)

    cell = ctypes.c_void_p.from_address(addr)
    old = cell.value
    monkeypatch.setattr(simp, "STILL_CLOCK", False)
    monkeypatch.setattr(simp, "_set_decimation_clock", lambda still: False)   # leave the racing clock in place
    cell.value = ctypes.cast(racing, ctypes.c_void_p).value
    try:
        raced = simp._simplify_pymeshlab(v, f, 1500)
    finally:
        cell.value = old
    assert reads[0] > 1000
    assert _sha(*raced) == _sha(*still)


def test_the_slot_follows_the_switch(pml, monkeypatch):
    addr, real, still = simp._clock_slot()
    cell = ctypes.c_void_p.from_address(addr)
    v, f = _sphere(20)
    _step(monkeypatch, True, v, f, 200)
    assert cell.value == still == ctypes.cast(ctypes.CDLL(None).getpagesize, ctypes.c_void_p).value
    _step(monkeypatch, False, v, f, 200)
    libc_clock = ctypes.cast(ctypes.CDLL(None).clock, ctypes.c_void_p).value
    assert cell.value in (real, libc_clock) and cell.value != still   # (the stub binds libc's clock when called)


def test_a_plugin_not_found_changes_nothing(monkeypatch):
    assert simp._find_clock_slot(plugin="libgpulab_no_such_plugin.so") is None
    key = getattr(sys.modules.get("pymeshlab"), "__file__", None)
    monkeypatch.setattr(simp, "_CLOCK_SLOT", {key: None})
    assert simp._set_decimation_clock(True) is False


def test_a_failing_lookup_is_quiet_and_remembered(monkeypatch):
    pytest.importorskip("pymeshlab")
    calls = []

    def boom(plugin=simp._PLUGIN):
        calls.append(plugin)
        raise struct_error("truncated")

    struct_error = type("StructError", (Exception,), {})
    monkeypatch.setattr(simp, "_CLOCK_SLOT", {})
    monkeypatch.setattr(simp, "_find_clock_slot", boom)
    assert simp._clock_slot() is None and simp._clock_slot() is None
    assert len(calls) == 1


def test_no_lookup_while_the_switch_is_off(monkeypatch):
    calls = []
    monkeypatch.setattr(simp, "_CLOCK_SLOT", {})
    monkeypatch.setattr(simp, "_find_clock_slot", lambda plugin=simp._PLUGIN: calls.append(plugin))
    assert simp._set_decimation_clock(False) is False
    assert calls == [] and simp._CLOCK_SLOT == {}


def test_a_stand_in_pymeshlab_has_no_slot(monkeypatch):
    """A module without a file (a test's stand-in) is never looked up, and does not hide the real one's slot."""
    import types

    monkeypatch.setattr(simp, "_CLOCK_SLOT", {})
    monkeypatch.setitem(sys.modules, "pymeshlab", types.ModuleType("pymeshlab"))
    assert simp._clock_slot() is None
    assert simp._CLOCK_SLOT == {None: None}


@pytest.mark.parametrize("k", [3, "auto"])
def test_the_same_labels_and_colours_end_to_end(pml, monkeypatch, k):
    v, f = _sphere(50)   # ~9.8k faces: simplified to the working resolution by fast-simplification + pymeshlab
    out = {}
    for still in (False, True):
        monkeypatch.setattr(simp, "STILL_CLOCK", still)
        seg = segment.segment_mesh(v, f, k=k, device="cpu")
        assert seg.info["simplified"]
        out[still] = _sha(seg.labels, seg.face_colors)
    assert out[True] == out[False]
