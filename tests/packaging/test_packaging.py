"""Packaging (issue 23): declared dependencies, optional extras and their hints, one version,
where the resources are found, the desktop files, install.sh and the bundle helpers.

Building and installing the wheel is `make wheel-check` (packaging/wheel_check.sh); the frozen
bundle is `make package-check`. These tests are the fast, structural half.
"""

from __future__ import annotations

import ast
import configparser
import importlib.metadata as md
import inspect
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PY = sys.executable
APP_ID = "org.gpulab.gpulab"
LINUX = ROOT / "packaging" / "linux"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    return _norm(re.split(r"[\s<>=!~\[;(]", req.strip(), maxsplit=1)[0])


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    core = {_req_name(r) for r in PYPROJECT["project"]["dependencies"]}
    extras = {k: {_req_name(r) for r in v} for k, v in PYPROJECT["project"]["optional-dependencies"].items()}
    return core, extras


def _imports(top_level_only: bool = False):
    """(file, line, module, guarded) for every absolute import in app/ and gpu_kernels/.
    ``guarded``: inside a function, or in a try whose handlers catch ImportError."""
    for pkg in ("app", "gpu_kernels"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            guarded_nodes: set[int] = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    guarded_nodes |= {id(n) for n in ast.walk(node)}
                if isinstance(node, ast.Try) and any(
                        h.type is None or "ImportError" in ast.unparse(h.type) or "Exception" in ast.unparse(h.type)
                        for h in node.handlers):
                    guarded_nodes |= {id(n) for b in node.body for n in ast.walk(b)}
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                    guarded_nodes |= {id(n) for b in node.body for n in ast.walk(b)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for n in names:
                    yield path.relative_to(ROOT), node.lineno, n.split(".")[0], id(node) in guarded_nodes


# the import name -> distribution for modules that may be absent here (CuPy on a CPU host)
KNOWN = {"cupy": {"cupy-cuda12x", "cupy-cuda13x"}, "cupyx": {"cupy-cuda12x", "cupy-cuda13x"},
         "cupy_backends": {"cupy-cuda12x", "cupy-cuda13x"},
         # PySide6's own binding runtime: PySide6-Essentials requires shiboken6 of its exact version
         "shiboken6": {"pyside6-essentials"}}
# imported only where present, never required (each is inside try/except ImportError)
UNDECLARED_OPTIONAL = {"dask_cuda"}
# what an extra brings (tests/extras_table.py, shared with conftest's skips): never imported at module level, so
# gpulab starts without it
from extras_table import EXTRA_MODULES  # noqa: E402 - tests/ is on sys.path through its conftest


@pytest.mark.installed
def test_every_third_party_import_is_a_declared_dependency():
    core, extras = _declared()
    declared = core | set().union(*extras.values())
    dists = md.packages_distributions()
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    missing = []
    for path, line, mod, _guarded in _imports():
        if mod in stdlib or mod in ("app", "gpu_kernels") or mod in UNDECLARED_OPTIONAL:
            continue
        provided = {_norm(d) for d in dists.get(mod, ())} | KNOWN.get(mod, set())
        if not provided & declared:
            missing.append(f"{path}:{line}: {mod} (from {sorted(provided) or 'nothing installed'})")
    assert not missing, "imported but not declared in pyproject.toml:\n" + "\n".join(sorted(set(missing)))
    # the two: Pillow and vtk are named themselves, not only pulled in by others
    assert {"pillow", "vtk"} <= core


def test_extras_are_declared_and_not_in_the_core():
    core, extras = _declared()
    assert extras["medical"] == {"simpleitk"}
    assert extras["batch"] == {"dask", "distributed"}
    assert extras["cuda12"] == {"cupy-cuda12x"} and extras["cuda13"] == {"cupy-cuda13x"}
    assert not core & {"simpleitk", "dask", "distributed", "cupy-cuda12x", "cupy-cuda13x"}
    # the dev venv (make test) has both extras: their tests run in CI
    assert {"gpulab"} <= extras["dev"]
    assert any("medical" in r and "batch" in r for r in PYPROJECT["project"]["optional-dependencies"]["dev"])


def test_extra_modules_are_never_imported_at_module_level():
    bad = [f"{p}:{line}: {mod}" for p, line, mod, guarded in _imports()
           if mod in EXTRA_MODULES and not guarded]
    assert not bad, "an extra's module imported at module level (gpulab would not start without it):\n" + \
        "\n".join(bad)


def _block(monkeypatch, *modules):
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)  # `import m` raises ImportError


def test_without_simpleitk_reading_and_writing_give_the_medical_hint(tmp_path, monkeypatch):
    from app.io import volume_io

    _block(monkeypatch, "SimpleITK")
    mha = tmp_path / "v.mha"
    mha.write_text("ObjectType = Image\nNDims = 3\nDimSize = 2 2 2\nElementType = MET_UCHAR\n"
                   "ElementDataFile = LOCAL\n")
    with mha.open("ab") as fh:
        fh.write(bytes(8))
    with pytest.raises(volume_io.VolumeIOError) as e:
        volume_io.read_volume(mha)
    msg = str(e.value)
    assert "install gpulab[medical] to read MetaImage files" in msg and "\n" not in msg
    dcm = tmp_path / "series"
    dcm.mkdir()
    (dcm / "a.dcm").write_bytes(b"\0" * 128 + b"DICM")
    with pytest.raises(volume_io.VolumeIOError, match=r"install gpulab\[medical\] to read DICOM series"):
        volume_io.read_volume(dcm / "a.dcm")
    out = tmp_path / "out.nrrd"
    with pytest.raises(volume_io.VolumeIOError, match=r"install gpulab\[medical\] to write"):
        volume_io.write_volume(out, np.zeros((2, 2, 2), np.float32))
    assert not out.exists() and not list(tmp_path.glob(".*part*"))


def _run_blocked(block: list[str], argv: list[str], cwd) -> subprocess.CompletedProcess:
    code = ("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in block)
            + "from app.cli import main\nsys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "GPULAB_DEVICE": "cpu", "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([PY, "-c", code, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_cli_without_simpleitk_is_one_line(tmp_path):
    a = tmp_path / "a.nrrd"
    a.write_text("NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: raw\n\n")
    r = _run_blocked(["SimpleITK"], ["echo", str(a), str(a), "-o", str(tmp_path / "u.npy")], ROOT)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "install gpulab[medical] to read NRRD files" in lines[0], r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "u.npy").exists()


def test_cli_batch_without_dask_is_one_line(tmp_path):
    from app.tools.base import resources_dir

    img = resources_dir() / "samples" / "imseg" / "coffee.jpg"
    out = tmp_path / "out"
    r = _run_blocked(["dask", "distributed"], ["batch", "imseg", str(img), "--out", str(out), "--quiet"], ROOT)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "install gpulab[batch] to run batches" in lines[0], r.stderr
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.installed
def test_one_version_from_pyproject():
    import app
    import gpu_kernels
    from gpu_kernels.backend import versions

    assert md.version("gpulab") == VERSION, "the installed metadata is stale: reinstall (make dev)"
    assert app.__version__ == VERSION and gpu_kernels.__version__ == VERSION
    assert versions()["gpulab"] == VERSION
    r = subprocess.run([PY, "-m", "app", "--version"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == f"gpulab {VERSION}", r.stdout + r.stderr
    # no second copy of the number in the sources
    for f in ("app/__init__.py", "gpu_kernels/__init__.py", "app/cli.py", "app/gui/about.py"):
        assert f'"{VERSION}"' not in (ROOT / f).read_text(), f
    meta = ET.parse(LINUX / f"{APP_ID}.metainfo.xml").getroot()
    assert meta.find("releases/release").get("version") == VERSION, "add a <release> for the new version"


def _resources_dir_at(fake_file: pathlib.Path) -> pathlib.Path:
    """Run app.tools.base.resources_dir's own code as if it lived at ``fake_file``."""
    from app.tools import base

    ns = {"pathlib": pathlib, "__file__": str(fake_file)}
    exec(inspect.getsource(base.resources_dir), ns)
    return ns["resources_dir"]()


def _icon(folder: pathlib.Path) -> None:
    (folder / "icons").mkdir(parents=True)
    (folder / "icons" / "gpulab.svg").write_text("<svg/>")


def test_resources_dir_installed_checkout_and_stray_folder(tmp_path):
    # an installed wheel: site-packages/app/resources, and another package's site-packages/resources
    site = tmp_path / "site-packages"
    (site / "app" / "tools").mkdir(parents=True)
    _icon(site / "app" / "resources")
    (site / "resources" / "samples").mkdir(parents=True)
    assert _resources_dir_at(site / "app" / "tools" / "base.py") == site / "app" / "resources"
    # the stray folder is never taken, even with an icons/ folder of its own
    shutil.rmtree(site / "app" / "resources")
    (site / "resources" / "icons").mkdir()
    assert _resources_dir_at(site / "app" / "tools" / "base.py") != site / "resources"
    # a checkout: resources/ at the top
    co = tmp_path / "checkout"
    (co / "app" / "tools").mkdir(parents=True)
    _icon(co / "resources")
    assert _resources_dir_at(co / "app" / "tools" / "base.py") == co / "resources"
    # this checkout
    from app.tools.base import resources_dir

    assert resources_dir() == ROOT / "resources"


def _desktop() -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None, strict=True)
    cp.optionxform = str
    cp.read(LINUX / f"{APP_ID}.desktop")
    return cp


# what gpulab opens, by extension -> the MIME type the entry must list
OPENS = {".ply": "model/x-ply", ".obj": "model/obj", ".off": "model/x-off", ".stl": "model/stl",
         ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".tif": "image/tiff",
         ".tiff": "image/tiff", ".bmp": "image/bmp", ".pfm": "image/x-portable-floatmap",
         ".flo": "application/x-middlebury-flo", ".nii": "application/x-nifti",
         ".nii.gz": "application/x-nifti-gz", ".mha": "image/x-metaimage", ".mhd": "image/x-metaimage",
         ".nrrd": "image/x-nrrd", ".nhdr": "image/x-nrrd", ".dcm": "application/dicom",
         ".mp4": "video/mp4", ".avi": "video/x-msvideo", ".mov": "video/quicktime", ".mkv": "video/x-matroska",
         ".webm": "video/webm", ".mpg": "video/mpeg"}
# types shared-mime-info defines itself; the rest come from our org.gpulab.gpulab-mime.xml
STANDARD = {"model/obj", "model/stl", "image/png", "image/jpeg", "image/tiff", "image/bmp", "application/dicom",
            "video/mp4", "video/x-msvideo", "video/quicktime", "video/x-matroska", "video/webm", "video/mpeg"}


def test_desktop_entry_lists_the_types_gpulab_opens():
    from app.io.image_io import IMAGE_EXTENSIONS
    from app.io.volume_io import VOLUME_EXTENSIONS

    e = _desktop()["Desktop Entry"]
    assert e["Icon"] == APP_ID and e["Exec"] == "gpulab %F" and e["Type"] == "Application"
    listed = set(filter(None, e["MimeType"].split(";")))
    for ext in (*IMAGE_EXTENSIONS, *(x for x in VOLUME_EXTENSIONS if x not in (".npy", ".npz")),
                ".ply", ".obj", ".off", ".stl", ".flo", ".pfm"):
        assert OPENS[ext] in listed, f"{ext} ({OPENS[ext]}) missing from MimeType"
    ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
    ours = {t.get("type"): {g.get("pattern") for g in t.findall("m:glob", ns)}
            for t in ET.parse(LINUX / f"{APP_ID}-mime.xml").getroot().findall("m:mime-type", ns)}
    for t in listed - STANDARD:
        assert t in ours, f"{t} is neither standard nor defined in {APP_ID}-mime.xml"
    for ext, t in OPENS.items():
        if t in ours:
            assert f"*{ext}" in ours[t], f"{t} lacks the glob *{ext}"


def test_the_window_says_which_desktop_entry_it_belongs_to(qapp):
    from app.gui.app import make_app

    assert make_app().desktopFileName() == APP_ID
    assert _desktop()["Desktop Entry"]["StartupWMClass"] == "gpulab"


def test_metainfo_names_the_entry_and_the_licence():
    root = ET.parse(LINUX / f"{APP_ID}.metainfo.xml").getroot()
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").text == f"{APP_ID}.desktop"
    assert root.findtext("project_license") == PYPROJECT["project"]["license"] == "MIT"
    assert "MIT License" in (ROOT / "LICENSE").read_text()


def test_icon_pngs_have_their_sizes():
    for n in (16, 22, 24, 32, 48, 64, 128, 256, 512):
        png = ROOT / "resources" / "icons" / "hicolor" / f"{n}x{n}" / "apps" / f"{APP_ID}.png"
        head = png.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n", png
        assert struct.unpack(">II", head[16:24]) == (n, n), png


@pytest.mark.parametrize("tool,args", [("desktop-file-validate", [str(LINUX / f"{APP_ID}.desktop")]),
                                       ("appstreamcli", ["validate", "--no-net",
                                                         str(LINUX / f"{APP_ID}.metainfo.xml")])])
def test_desktop_files_validate(tool, args):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (make desktop-check installs it)")
    r = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def _fake_bundle(tmp_path: pathlib.Path) -> pathlib.Path:
    """The archive's layout as build_bundle.sh stages it, with a stand-in executable."""
    b = tmp_path / f"gpulab-{VERSION}-linux-x86_64"
    (b / "gpulab").mkdir(parents=True)
    exe = b / "gpulab" / "gpulab"
    exe.write_text(f"#!/bin/sh\necho gpulab {VERSION}\n")
    exe.chmod(0o755)
    for sub, src in (("applications", f"{APP_ID}.desktop"), ("metainfo", f"{APP_ID}.metainfo.xml")):
        (b / "share" / sub).mkdir(parents=True)
        shutil.copy(LINUX / src, b / "share" / sub / src)
    (b / "share" / "mime" / "packages").mkdir(parents=True)
    shutil.copy(LINUX / f"{APP_ID}-mime.xml", b / "share" / "mime" / "packages" / f"{APP_ID}.xml")
    shutil.copytree(ROOT / "resources" / "icons" / "hicolor", b / "share" / "icons" / "hicolor")
    shutil.copy(LINUX / "install.sh", b / "install.sh")
    shutil.copy(ROOT / "LICENSE", b / "LICENSE")
    (b / "VERSION").write_text(VERSION)
    return b


def test_install_sh_installs_and_uninstalls(tmp_path):
    b = _fake_bundle(tmp_path / "unpacked dir")  # a space in the path
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    r = subprocess.run(["sh", str(b / "install.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    share = home / ".local" / "share"
    desktop = share / "applications" / f"{APP_ID}.desktop"
    exec_line = next(ln for ln in desktop.read_text().splitlines() if ln.startswith("Exec="))
    exe = share / "gpulab" / "app" / "gpulab"
    assert exec_line == f'Exec="{exe}" %F'
    assert subprocess.run([str(exe)], capture_output=True, text=True).stdout.strip() == f"gpulab {VERSION}"
    assert (home / ".local" / "bin" / "gpulab").resolve() == exe.resolve()
    for n in (16, 48, 256, 512):
        assert (share / "icons" / "hicolor" / f"{n}x{n}" / "apps" / f"{APP_ID}.png").is_file()
    assert (share / "metainfo" / f"{APP_ID}.metainfo.xml").is_file()
    assert (share / "mime" / "packages" / f"{APP_ID}.xml").is_file()
    if shutil.which("desktop-file-validate"):
        v = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True)
        assert v.returncode == 0, v.stdout + v.stderr
    # a second install replaces the first; then --uninstall leaves nothing of ours
    r = subprocess.run(["sh", str(b / "install.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["sh", str(b / "install.sh"), "--uninstall"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    left = [p for p in (home / ".local").rglob("*") if p.is_file() and (APP_ID in p.name or "gpulab" in p.name)]
    assert not left, left
    assert not (share / "gpulab").exists()
    r = subprocess.run(["sh", str(b / "install.sh"), "--uninstall"], env=env, capture_output=True, text=True)
    assert r.returncode == 1 and "not installed" in r.stderr


def test_install_sh_leaves_a_foreign_gpulab_command_alone(tmp_path):
    b = _fake_bundle(tmp_path)
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    mine = home / ".local" / "bin" / "gpulab"
    mine.write_text("#!/bin/sh\necho pip's gpulab\n")
    env = {**os.environ, "HOME": str(home)}
    r = subprocess.run(["sh", str(b / "install.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "left" in r.stdout, r.stdout + r.stderr
    assert mine.read_text().startswith("#!/bin/sh\necho pip's")
    subprocess.run(["sh", str(b / "install.sh"), "--uninstall"], env=env, check=True, capture_output=True)
    assert mine.is_file()


def test_dedupe_links_duplicates_and_keeps_contents(tmp_path):
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        from dedupe import dedupe
    finally:
        sys.path.remove(str(ROOT / "packaging"))
    blob = os.urandom(300 * 1024)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "lib.so").write_bytes(blob)
    (tmp_path / "a" / "lib.so.4").write_bytes(blob)
    (tmp_path / "b.so").write_bytes(blob[::-1])
    n, saved = dedupe(tmp_path)
    assert (n, saved) == (1, len(blob))
    links = [p for p in tmp_path.rglob("*") if p.is_symlink()]
    assert len(links) == 1 and links[0].read_bytes() == blob and not os.path.isabs(os.readlink(links[0]))
    assert not (tmp_path / "b.so").is_symlink()


def test_compare_outputs_finds_a_changed_array(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        np.save(d / "x.npy", np.arange(6.0))
        (d / "s-summary.txt").write_text("regions: 5\n  time 12 ms\n")
    (b / "s-summary.txt").write_text("regions: 5\n  time 80 ms\n")  # timings are not compared
    cmd = [PY, str(ROOT / "packaging" / "compare_outputs.py"), str(a), str(b)]
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    np.save(b / "x.npy", np.arange(6.0) + 1)
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 1 and "x.npy" in r.stdout


def test_about_box_says_how_gpulab_was_installed_and_whether_it_has_cupy(qapp, monkeypatch):
    from app.gui import about

    assert about.install_kind() == "source checkout"
    text = about.about_text("cpu")
    line = next(ln for ln in text.splitlines() if ln.startswith("Installed as: "))
    assert line.startswith("Installed as: source checkout, ")
    assert ("with CuPy" in line) == (about.versions().get("cupy") is not None)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert about.install_kind() == "stand-alone bundle"
