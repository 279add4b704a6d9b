"""The bundle's helpers (issue 23): stripping the libraries without breaking one, and the About
box's text reaching the log, where package-check reads it in the frozen app."""

from __future__ import annotations

import importlib.util
import logging
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOLS = all(shutil.which(t) for t in ("gcc", "strip", "readelf"))
need_tools = pytest.mark.skipif(not TOOLS, reason="needs gcc, strip and readelf (binutils)")


def _strip_module():
    spec = importlib.util.spec_from_file_location("gpulab_strip_libs", ROOT / "packaging" / "strip_libs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cc(out: pathlib.Path, src: str, *args: str) -> pathlib.Path:
    c = out.with_suffix(".c")
    c.write_text(src)
    subprocess.run(["gcc", "-shared", "-fPIC", "-g", "-o", str(out), str(c), *args], check=True)
    c.unlink()
    return out


def _symtab(p: pathlib.Path) -> bool:
    return " .symtab " in subprocess.run(["readelf", "-S", "-W", str(p)], capture_output=True, text=True).stdout


@need_tools
def test_strip_libs_strips_what_loads_and_leaves_what_it_cannot_check(tmp_path):
    sl = _strip_module()
    good = _cc(tmp_path / "libgood.so", "int gpulab_answer(void) { return 42; }\n")
    dep = _cc(tmp_path / "libdep.so", "int gpulab_dep(void) { return 1; }\n")
    user = _cc(tmp_path / "libuser.so.1", "int gpulab_dep(void);\nint f(void) { return gpulab_dep(); }\n",
               f"-L{tmp_path}", "-ldep")
    dep.unlink()  # libuser.so.1 cannot load now: a strip of it could not be checked
    user_bytes = user.read_bytes()
    assert _symtab(good) and _symtab(user)
    r = subprocess.run([sys.executable, str(ROOT / "packaging" / "strip_libs.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "stripped 1 of 2" in r.stdout, r.stdout
    assert not _symtab(good)
    assert sl.loads([good], tmp_path) == {str(good): True}
    assert user.read_bytes() == user_bytes  # untouched


@need_tools
def test_strip_libs_puts_back_a_library_that_no_longer_loads(tmp_path, monkeypatch, capsys):
    sl = _strip_module()
    lib = _cc(tmp_path / "libx.so", "int gpulab_x(void) { return 7; }\n")
    original = lib.read_bytes()
    calls = []

    def fake_loads(paths, libdir):  # loads before the strip, never after it
        calls.append(list(paths))
        return {str(p): len(calls) == 1 for p in paths}

    monkeypatch.setattr(sl, "loads", fake_loads)
    assert sl.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "put back (did not load after strip): libx.so" in out
    assert lib.read_bytes() == original
    assert len(calls) == 3  # before, after, and the second chance alone


def test_about_box_logs_what_it_shows(qapp, caplog):
    from app.gui.about import AboutDialog

    with caplog.at_level(logging.INFO, logger="app.gui.about"):
        box = AboutDialog(device="cpu")
    logged = [r.getMessage() for r in caplog.records if r.name == "app.gui.about"]
    assert logged == ["About gpulab:\n" + box.text()]
    assert "Installed as: source checkout" in box.text()
    box.deleteLater()


def test_cuda_runtime_hook_puts_the_bundle_first_in_the_site_packages(tmp_path):
    """cuda-pathfinder finds CuPy's CUDA libraries under site.getsitepackages(); in a CUDA bundle
    they are under sys._MEIPASS/nvidia, which the runtime hook names first (and only then)."""
    hook = ROOT / "packaging" / "pyi_rth_gpulab_cuda.py"
    code = (
        "import runpy, site, sys\n"
        "before = site.getsitepackages()\n"
        "sys._MEIPASS = sys.argv[1]\n"
        f"runpy.run_path({str(hook)!r})\n"
        "print(site.getsitepackages()[0] == sys.argv[1], site.getsitepackages()[1:] == before)\n"
    )
    run = lambda: subprocess.run([sys.executable, "-c", code, str(tmp_path)],  # noqa: E731
                                 capture_output=True, text=True, check=True).stdout.split()
    assert run() == ["False", "False"]  # no nvidia/ folder: a CPU bundle's site is left alone
    (tmp_path / "nvidia").mkdir()
    assert run() == ["True", "True"]


@pytest.mark.parametrize("body, want", [
    (None, "CuPy is not installed (ModuleNotFoundError: No module named 'cupy')"),
    ("raise ImportError('\\n' + '=' * 64 + '\\nFailed to import CuPy.\\n\\nOriginal error:\\n"
     "  ModuleNotFoundError: No module named \\'graphlib\\'\\n' + '=' * 64)",
     "CuPy is installed but cannot be imported (ModuleNotFoundError: No module named 'graphlib')"),
    ("raise OSError('libcuda.so.1: cannot open shared object file')",
     "CuPy is installed but cannot be imported (OSError: libcuda.so.1: cannot open shared object file)"),
])
def test_the_reason_for_the_numpy_path_names_the_cause(tmp_path, body, want):
    """What `gpulab info` and the About box say when CuPy fails to import: CuPy's own error is a
    banner that starts with a blank line (a frozen CUDA bundle said only "ImportError: ")."""
    if body is not None:
        (tmp_path / "cupy").mkdir()
        (tmp_path / "cupy" / "__init__.py").write_text(body + "\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            + ("sys.modules['cupy'] = None\n" if body is None else "")
            + "from gpu_kernels import backend\nprint(backend._import_cupy())\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    got = r.stdout.strip()
    if body is None:  # sys.modules[name] = None: Python's own wording
        assert got.startswith("CuPy is not installed (ModuleNotFoundError: "), got
    else:
        assert got == want
