"""Start-up (issue 18, case 19): what ``gpulab COMMAND --help`` imports, and the lazy-import
helpers it relies on. Structural checks (which modules are loaded), not timings: the timings
are in ``benchmarks/startup.py``."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from gpu_kernels.lazy import LazyModule, is_loaded, lazy_exports, lazy_function, lazy_module

ROOT = Path(__file__).resolve().parents[2]

#: what a declaration must not load: the array libraries, the readers' libraries and the kernels
HEAVY = ("numpy", "scipy", "cupy", "PIL", "cv2", "imageio", "nibabel", "SimpleITK", "pymeshlab", "vtk", "PySide6",
         "gpu_kernels.backend", "gpu_kernels.mesh.segment", "gpu_kernels.echo.motion", "gpu_kernels.flow.api",
         "gpu_kernels.mvs.stereo", "gpu_kernels.imseg.segment", "gpu_kernels.imseg.contours", "app.io.mesh_io",
         "app.io.image_io", "app.io.volume_io")

_PROBE = """
import contextlib, io, json, sys
from app.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    try:
        rc = main(sys.argv[1:])
    except SystemExit as exc:
        rc = exc.code
print("@@" + json.dumps({"rc": rc, "text": buf.getvalue(),
                         "heavy": [m for m in HEAVY if m in sys.modules]}))
""".replace("HEAVY", repr(HEAVY))


def _probe(*argv: str) -> dict:
    env = dict(os.environ, GPULAB_NO_HELP_CACHE="1")
    env.pop("GPULAB_TOOLS", None)
    p = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("@@")), None)
    assert line is not None, p.stderr[-2000:]
    return json.loads(line[2:])


@pytest.mark.parametrize("argv", [("mesh-seg", "--help"), ("flow", "--help"), ("echo", "--help"), ("mvs", "--help"),
                                  ("imseg", "--help"), ("echo-synth", "--help"), ("batch", "--help"), ("--help",)],
                         ids=lambda a: " ".join(a))
def test_cold_help_loads_no_array_library_and_no_kernel(argv):
    """Every tool is declared (its parameters, exports, defaults) without NumPy, SciPy, the
    kernels or the readers: they load when a command runs."""
    out = _probe(*argv)
    assert out["rc"] == 0
    assert "usage:" in out["text"]
    assert out["heavy"] == [], f"gpulab {' '.join(argv)} imported {out['heavy']}"


def test_cold_help_shows_the_declared_defaults():
    """The defaults the help shows come from the light modules and equal the kernels' own."""
    from gpu_kernels.imseg import contours
    from gpu_kernels.mesh import segment

    text = _probe("mesh-seg", "--help")["text"] + _probe("imseg", "--help")["text"]
    assert f"{segment.WORKING_FACES:,}" in text
    assert str(contours.DEFAULT_COARSENESS) in text


def test_version_reads_no_array_library():
    out = _probe("--version")
    assert out["rc"] == 0 and out["text"].startswith("gpulab ")
    assert out["heavy"] == []


def test_the_light_defaults_are_the_kernels_names():
    """The kernels re-export the light modules' values under their usual names (one
    declaration: the value is written once)."""
    from gpu_kernels.echo import defaults as ed
    from gpu_kernels.echo import motion, synthetic
    from gpu_kernels.flow import blockmatch, search
    from gpu_kernels.flow import defaults as fd
    from gpu_kernels.imseg import color, kmeans
    from gpu_kernels.imseg import defaults as idf
    from gpu_kernels.mesh import colors, segment
    from gpu_kernels.mesh import defaults as md
    from gpu_kernels.mvs import defaults as mvd
    from gpu_kernels.mvs import optimize

    assert segment.WORKING_FACES is md.WORKING_FACES and colors.DEFAULT_SHADING is md.DEFAULT_SHADING
    assert motion.DEFAULT_ALPHA is ed.DEFAULT_ALPHA and synthetic.DEFAULT_SIZE is ed.SYNTH_SIZE
    assert blockmatch.DEFAULT_RADIUS is fd.BM_RADIUS and search.DEFAULT_PATCH is fd.SEARCH_PATCH
    assert color.MAX_Q is idf.MAX_Q and kmeans.MAX_K is idf.MAX_K
    assert optimize.DEFAULT_WINDOW is mvd.WINDOW


# --------------------------------------------------------------------------- the helpers
def test_lazy_module_loads_on_first_use_and_forwards_writes():
    name = "gpulab_test_lazy_target"
    mod = types.ModuleType(name)
    mod.value = 1
    lazy = LazyModule(name)
    assert not is_loaded(lazy)
    sys.modules[name] = mod
    try:
        assert lazy.value == 1
        assert is_loaded(lazy)
        lazy.value = 2                      # a test's monkeypatch reaches the real module
        assert mod.value == 2
        mod.value = 3                       # and one of the real module is seen through it
        assert lazy.value == 3
        with pytest.raises(AttributeError):
            _ = lazy.missing
    finally:
        del sys.modules[name]
    assert lazy_module("json") is sys.modules["json"]   # already imported: the module itself


def test_lazy_function_has_the_real_signature_and_name():
    f = lazy_function("json:dumps")
    assert f.__name__ == "dumps"
    assert "sort_keys" in inspect.signature(f).parameters
    assert f([1]) == "[1]"
    with pytest.raises(ValueError):
        lazy_function("json.dumps")


def test_lazy_exports_keeps_the_function_over_a_submodule_of_the_same_name():
    """gpu_kernels.flow.lucas_kanade is a function (as the eager __init__ bound it), even after
    the submodule of that name is imported."""
    import gpu_kernels.flow
    import gpu_kernels.flow.lucas_kanade  # noqa: F401
    from gpu_kernels.flow import lucas_kanade, search

    assert callable(lucas_kanade) and not isinstance(lucas_kanade, types.ModuleType)
    assert isinstance(search, types.ModuleType)
    assert gpu_kernels.flow.metrics.__name__ == "gpu_kernels.flow.metrics"   # submodules still reachable
    getattr_, dir_ = lazy_exports("gpu_kernels.flow", {})
    with pytest.raises(AttributeError):
        getattr_("no_such_name")


def test_numba_tries_openmp_before_tbb():
    """In the window, VTK's old TBB made numba print a NumbaWarning at the first CPU flow;
    gpulab asks numba for OpenMP first (a user's NUMBA_THREADING_LAYER_PRIORITY wins)."""

    pytest.importorskip("numba")
    code = ("import gpu_kernels, numba.core.config as c; print(' '.join(c.THREADING_LAYER_PRIORITY))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_THREADING")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split()[0] == "omp"
    env["NUMBA_THREADING_LAYER_PRIORITY"] = "workqueue omp tbb"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split()[0] == "workqueue"
