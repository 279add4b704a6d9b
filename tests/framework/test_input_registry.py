"""One reader registry (issue 19): every input decision goes through ``app.io.registry``.

The window's Open filter and drag and drop (``Tool.handles`` / ``ToolTab.handles``), the
generated command's input check, batch's default item expansion, the echo loader's folders,
pairs and truth, and the reader fuzz test all read the same :class:`InputKind`; changing a
kind there changes all of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.io import registry
from app.io.registry import INPUT_KINDS, InputKind, check_input, input_kind
from app.io.volume_io import read_sequence, write_displacement, write_volume
from app.tools import TOOLS
from app.tools.base import Tool
from app.tools.params import Param, ParamSet
from gpu_kernels.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_every_tool_names_a_registered_kind_and_takes_its_patterns():
    for t in TOOLS:
        kind = input_kind(t.inputs)
        assert t.input is kind
        assert t.input_extensions == kind.patterns and t.input_kind == kind.title
    assert {t.inputs for t in TOOLS} == {"mesh", "frames", "volumes", "scene", "image"}


def test_every_pattern_of_a_kind_has_a_registered_reader():
    import importlib
    import pkgutil

    import app.io

    for m in pkgutil.iter_modules(app.io.__path__):
        importlib.import_module(f"app.io.{m.name}")
    read = {e for r in registry.READERS for e in r.extensions}
    for name in ("mesh", "image", "volumes"):
        for pat in input_kind(name).patterns:
            ok = any(pat.endswith(e) for e in read) or pat in (".mhd", ".nhdr", ".dcm") or \
                name == "mesh" and pat not in (".ply", ".obj", ".off", ".stl")   # pymeshlab's formats
            assert ok, (name, pat)
    assert "echo study" in {r.name for r in registry.READERS}


def test_folders_pairs_and_truth_come_from_the_kind(tmp_path):
    frames = tmp_path / "frames"
    frames.mkdir()
    for n in ("f10.png", "f2.png", "f1.png", "flow_gt.png"):
        (frames / n).write_bytes(b"x")
    (frames / "flow10.flo").write_bytes(b"x")
    fr = input_kind("frames")
    assert fr.accepts(frames) and input_kind("image").accepts(frames)
    assert not input_kind("mesh").accepts(frames) and not input_kind("volumes").accepts(frames)
    # natural order, ground truth never listed or paired
    assert [p.name for p in fr.files_in(frames)] == ["f1.png", "f2.png", "f10.png"]
    assert fr.partner(frames / "f2.png").name == "f10.png" and fr.partner(frames / "f10.png") is None
    assert [p.name for p in fr.truth_beside(frames / "f1.png")] == ["flow10.flo", "flow_gt.png"]
    # an explicitly named truth-like file is still a file of the kind
    assert fr.matches(frames / "flow_gt.png")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not any(k.accepts(empty) for k in INPUT_KINDS.values())
    scene = tmp_path / "colmap"
    (scene / "sparse" / "0").mkdir(parents=True)
    assert input_kind("scene").accepts(scene)


def test_dicom_folder_without_extensions_is_a_volume_input(tmp_path):
    d = tmp_path / "series"
    d.mkdir()
    (d / "IM0001").write_bytes(b"\0" * 128 + b"DICM" + b"\0" * 64)
    assert input_kind("volumes").accepts(d)
    assert [k.name for k in registry.kinds_for(d)] == ["volumes"]


def test_check_input_is_one_line(tmp_path):
    with pytest.raises(InputError, match="no such file") as e:
        check_input("mesh", tmp_path / "none.ply")
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="is a folder; give one file"):
        check_input("mesh", tmp_path)
    with pytest.raises(InputError, match="holds no volumes"):
        check_input("volumes", tmp_path)
    (tmp_path / "a.nii.gz").write_bytes(b"x")
    assert check_input("volumes", tmp_path) == tmp_path


def _tool(name, kind):
    return Tool(name=name, title=name, key=name, description="x", params=ParamSet([Param("a", int, 1, "A", "a")]),
                load=lambda p, progress=None: p, run=lambda d, p, *, device, progress=None: d,
                summary=lambda r: [], inputs=kind)


def test_a_kind_declared_once_drives_handles_and_batch_items(tmp_path):
    kind = registry.register_input(InputKind("test-stacks", "Stacks", (".stk",), folder="its stacks",
                                             not_inputs=r"^truth"))
    try:
        tool = _tool("stacker", "test-stacks")
        for n in ("b.stk", "a.stk", "truth.stk", "c.txt"):
            (tmp_path / n).write_bytes(b"x")
        assert tool.handles(tmp_path / "A.STK") and not tool.handles(tmp_path / "c.txt")
        assert tool.handles(tmp_path)                           # a folder of stacks
        assert [i.key for i in tool.items([tmp_path])] == ["a", "b"]   # expansion: the registry's
        assert tool.input.filter == "Stacks (*.stk)"
        # the same kind, changed in the registry, changes the tool's decisions
        registry.register_input(InputKind("test-stacks", "Stacks", (".stk",)))
        assert not tool.handles(tmp_path)
    finally:
        INPUT_KINDS.pop(kind.name, None)


def test_a_tool_declared_with_extensions_gets_a_kind_of_its_own():
    t = Tool(name="legacy-x", title="L", key="lx", description="x", params=ParamSet([]),
             load=lambda p, progress=None: p, run=lambda d, p, *, device, progress=None: d, summary=lambda r: [],
             input_extensions=(".LX",), input_kind="Lx files")
    try:
        assert t.inputs == "legacy-x" and input_kind("legacy-x").patterns == (".lx",)
        assert t.handles("a.lx") and t.input_kind == "Lx files"
    finally:
        INPUT_KINDS.pop("legacy-x", None)


# ----------------------------------------------------------------------------- the echo study
def _vol(seed, shape=(6, 7, 8)):
    return np.random.default_rng(seed).integers(0, 255, shape, dtype=np.uint8)


def test_read_sequence_pairs_a_lone_volume_and_skips_truth_files(tmp_path):
    write_volume(tmp_path / "a.nii.gz", _vol(0))
    write_displacement(tmp_path / "gt_000_001.npy", np.zeros((3, 6, 7, 8), np.float32))
    write_volume(tmp_path / "b.nii.gz", _vol(1, (6, 7, 9)))      # another grid: skipped
    write_volume(tmp_path / "c.nii.gz", _vol(2))
    s = read_sequence(tmp_path / "a.nii.gz")
    assert s.names == ["a.nii.gz", "c.nii.gz"] and s.n_frames == 2
    with pytest.raises(InputError, match="must share a grid"):
        read_sequence(tmp_path)                                  # a folder of frames: every frame


def test_read_sequence_reads_stored_truth_and_checks_it(tmp_path):
    f = np.stack([_vol(0), _vol(1), _vol(2)])
    gt = np.random.default_rng(3).normal(0, 1, (3, 6, 7, 8)).astype(np.float16)
    np.savez_compressed(tmp_path / "s.npz", frames=f, gt_001_002=gt, myocardium_001=f[1] > 100)
    s = read_sequence(tmp_path / "s.npz")
    assert set(s.truth) == {(1, 2)} and s.truth[(1, 2)].dtype == np.float32 and set(s.masks) == {1}
    assert s.truth_source == "stored in s.npz"
    assert np.array_equal(s.truth[(1, 2)], gt.astype(np.float32))
    pair = read_sequence(tmp_path / "s.npz", frames=(1, 2))
    assert pair.n_frames == 2 and set(pair.truth) == {(0, 1)} and set(pair.masks) == {0}
    np.savez_compressed(tmp_path / "bad.npz", frames=f, gt_000_001=gt[:, :3])
    with pytest.raises(InputError, match="a truth field must be"):
        read_sequence(tmp_path / "bad.npz")


def test_the_bundled_sample_loads_its_truth_without_the_generator():
    code = ("import sys, json; from app.tools import echo; d = echo.load(echo.samples()[0]); "
            "print(json.dumps([len(d.truth), len(d.masks), d.truth_source, "
            "'gpu_kernels.echo.synthetic' in sys.modules]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [3, 4, "stored in lv_synthetic.npz", False]


def test_the_echo_command_reads_through_read_sequence_only():
    """The command maps arguments; the walk from args to the study is one call into app.io."""
    src = (ROOT / "app" / "commands" / "echo.py").read_text(encoding="utf-8")
    assert src.count("volume_io.read_sequence(") == 1
    for bounce in ("echo.load(", "echo.load_pair(", "echo.with_frames(", "echo.with_truth(", "TOOL.load("):
        assert bounce not in src, bounce


@pytest.mark.gui
def test_the_window_opens_a_dropped_folder_in_the_tab_the_registry_names(qtbot, tmp_path):
    pytest.importorskip("PySide6")
    pytest.importorskip("pytestqt")
    from app.gui.main_window import MainWindow

    write_volume(tmp_path / "a.nii.gz", _vol(0))
    write_volume(tmp_path / "b.nii.gz", _vol(1))
    win = MainWindow()
    qtbot.addWidget(win)
    tab = win.tab_for_path(tmp_path)
    assert tab is not None and tab.tool.inputs == "volumes"
    assert tab.open_filter() == input_kind("volumes").filter
    with qtbot.waitSignal(tab.input_loaded, timeout=20000):
        assert win.open_path(tmp_path)
    assert tab.data.n_frames == 2 and tab.data.names == ["a.nii.gz", "b.nii.gz"]
    win.close()


def test_a_dicom_series_folder_is_a_volumes_input_and_reads_as_one_volume(tmp_path):
    import locale

    sitk = pytest.importorskip("SimpleITK")
    saved = locale.setlocale(locale.LC_ALL)          # GDCM's writer sets the C locale
    try:
        v = np.random.default_rng(2).integers(0, 1000, size=(4, 8, 9)).astype(np.int16)
        folder = tmp_path / "series"
        folder.mkdir()
        writer = sitk.ImageFileWriter()
        writer.KeepOriginalImageUIDOn()
        for z in range(v.shape[0]):
            sl = sitk.GetImageFromArray(v[z])
            for tag, val in [("0020|000e", "1.2.826.0.1.3680043.2.1125.1.7"), ("0020|0032", f"0\\0\\{2.0 * z}"),
                             ("0020|0013", str(z + 1)), ("0020|0037", "1\\0\\0\\0\\1\\0"), ("0008|0060", "MR")]:
                sl.SetMetaData(tag, val)
            writer.SetFileName(str(folder / f"IM{z:04d}.dcm"))
            writer.Execute(sl)
            (folder / f"IM{z:04d}.dcm").rename(folder / f"IM{z:04d}")   # no extension, as scanners write them
    finally:
        locale.setlocale(locale.LC_ALL, saved)
    assert [k.name for k in registry.kinds_for(folder)] == ["volumes"]
    assert check_input("volumes", folder) == folder
    s = read_sequence(folder)
    assert s.n_frames == 1 and s.shape == v.shape
    np.testing.assert_array_equal(s.frames[0], v)
