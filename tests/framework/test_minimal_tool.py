"""Adding a sixth tool needs only its declaration: a :class:`Tool` (with stages, a display-only
parameter and exports) and a tab, both declared in this file, appear in the CLI (a generated
subcommand with one flag per parameter and per export), in batch (its worker processes find
the tool through ``GPULAB_TOOLS``) and in the window, with no registry edited."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from app.io.image_io import IMAGE_EXTENSIONS, read_image, write_image
from app.tools import Export, Param, ParamSet, Tool, register, unregister
from app.tools.stages import Pipeline, Stage

HERE = Path(__file__).resolve().parent


# ----------------------------------------------------------------------------- the tool (Qt-free)
@dataclass
class Thresholded:
    mask: np.ndarray
    picture: np.ndarray
    params: dict
    device: str
    elapsed: float


def _grey(ctx):
    xp = ctx.device.xp
    img = xp.asarray(ctx.data, dtype=xp.float32)
    return (img.mean(axis=2) if img.ndim == 3 else img) / 255.0


def _mask(ctx):
    return ctx["grey"] > ctx.p["level"]


def _finish(data, out, p, *, device, elapsed):
    m = device.asnumpy(out["mask"])
    return Thresholded(m, (m * 255).astype(np.uint8), p, device.label, elapsed)


def _display(result, p):
    return replace(result, picture=(result.mask * (255 if p["invert"] is False else 0)
                                    + (~result.mask) * (0 if p["invert"] is False else 255)).astype(np.uint8),
                   params={**result.params, "invert": p["invert"]})


PARAMS = ParamSet([
    Param("level", float, 0.5, "Level", "threshold on the grey level, 0..1", minimum=0, maximum=1, step=0.05),
    Param("invert", bool, False, "Invert picture", "show the background white", display=True),
])
PIPELINE = Pipeline([Stage("grey", _grey), Stage("mask", _mask, params=("level",))], finish=_finish, params=PARAMS)


def run(data, params, *, device, progress=None):
    return SIXTH.apply_display(PIPELINE.run(data, params, device=device, progress=progress), PARAMS.validate(params))


SIXTH = Tool(
    name="threshold", title="Threshold", key="threshold", description="Threshold an image's grey level.",
    params=PARAMS, stages=PIPELINE, display=_display,
    load=lambda path, *, progress=None: read_image(path), run=run,
    summary=lambda r: [f"foreground: {100 * r.mask.mean():.1f} %", f"  on {r.device}"],
    exports=(Export("mask", "Mask", (".png",), lambda r, path: [write_image(path, r.picture)], cli_option="-o"),
             Export("table", "Foreground share", (".csv",),
                    lambda r, path: [Path(path).write_text(f"foreground\n{r.mask.mean():.6f}\n") and Path(path)],
                    cli_option="--table")),
    input_extensions=IMAGE_EXTENSIONS, input_kind="Images", input_noun="Image",
    tab=f"{__name__}:ThresholdTab",
    samples=lambda: [],
)


def _tab_class():
    from PySide6.QtWidgets import QLabel

    from app.tabs.base import ToolTab

    class ThresholdTab(ToolTab):
        tool = SIXTH

        def build_view(self):
            return QLabel("Open an image")

        def show_input(self, data):
            self.view.setText(f"{data.shape[1]} x {data.shape[0]}")

        def show_result(self, result):
            self.view.setText(f"foreground {100 * result.mask.mean():.1f} %")

    return ThresholdTab


def __getattr__(name):  # the tab class is built (and Qt imported) only when the window asks for it
    if name == "ThresholdTab":
        cls = _tab_class()
        globals()["ThresholdTab"] = cls
        return cls
    raise AttributeError(name)


@pytest.fixture
def sixth(tmp_path):
    register(SIXTH)
    img = np.zeros((24, 32, 3), np.uint8)
    img[:, 16:] = 200
    write_image(tmp_path / "half.png", img)
    try:
        yield tmp_path / "half.png"
    finally:
        unregister(SIXTH.name)


def test_the_cli_has_a_generated_subcommand(sixth, tmp_path, capsys):
    from app.cli import build_parser, main

    parser, names = build_parser()
    assert "threshold" in names
    assert main(["threshold", str(sixth), "-o", str(tmp_path / "m.png"), "--table", str(tmp_path / "t.csv"),
                 "--level", "0.3", "--device", "cpu", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "foreground: 50.0 %" in out
    assert read_image(tmp_path / "m.png").mean() == pytest.approx(127.5, abs=1)
    assert (tmp_path / "t.csv").read_text().splitlines()[1] == "0.500000"
    # a bad flag is one clear line, and the copied command line parses back
    assert main(["threshold", str(sixth), "-o", str(tmp_path / "x.png"), "--level", "2"]) == 2
    assert "level must lie in [0, 1], not 2" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
    cmd = SIXTH.command_line([sixth], {"level": 0.3, "invert": True}, output=str(tmp_path / "c.png"))
    assert "--level 0.3" in cmd and "--invert true" in cmd


def test_batch_runs_the_tool_in_its_workers(sixth, tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    from app.batch import run_batch

    monkeypatch.setenv("GPULAB_TOOLS", f"{__name__}:SIXTH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    s = run_batch("threshold", [sixth.parent], tmp_path / "out", params={"level": 0.3}, workers=1, gpus="none")
    assert s.done == 1 and s.failed == 0, s.records
    assert (tmp_path / "out" / "half-mask.png").is_file() and (tmp_path / "out" / "half-table.csv").is_file()


def test_the_window_has_its_tab(sixth, qtbot):
    pytest.importorskip("PySide6")
    pytest.importorskip("pytestqt")
    from app.gui.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    tabs = [t for t in win.tabs if t.tool is SIXTH]
    assert len(tabs) == 1 and type(tabs[0]).__name__ == "ThresholdTab"
    tab = tabs[0]
    tab.set_input(read_image(sixth), sixth)
    tab.form.set_value("level", 0.3)
    with qtbot.waitSignal(tab.result_shown, timeout=20000):
        assert tab.run(device="cpu")
    assert tab.view.text() == "foreground 50.0 %"
    win.close()
