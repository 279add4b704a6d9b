"""Fake tools, tabs and jobs for the GUI tests (no GPU, no real tool needed).

``SlowTab`` is a complete :class:`~app.tabs.base.ToolTab` over a small fake tool whose
parameters cover every kind of form field.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import QLabel

from app.errors import UserError
from app.io.atomic import atomic_write
from app.tabs.base import ToolTab
from app.tools import Export, Param, ParamSet, Tool
from gpu_kernels.errors import InputError


# ----------------------------------------------------------------------------- jobs
def slow_write(out: Path, steps: int = 20, delay: float = 0.01, *, device=None, progress):
    """Writes ``steps`` lines to ``out`` (atomically), reporting after each."""
    with atomic_write(out, "w") as f:
        for i in range(steps):
            f.write(f"line {i}\n")
            f.flush()
            time.sleep(delay)
            progress.update((i + 1) / steps, f"step {i + 1} of {steps}")
    return out


def failing_job(message: str = "kaboom", *, device=None, progress):
    progress.update(0.1, "about to fail")
    raise RuntimeError(message)


def user_error_job(*, device=None, progress):
    raise UserError("the file has no faces; give a mesh, not a point cloud")


class OutOfMemoryError(Exception):
    """Named like cupy.cuda.memory.OutOfMemoryError."""


def oom_job(*, device=None, progress):
    raise OutOfMemoryError("Out of memory allocating 12,884,901,888 bytes")


def stubborn_job(seconds: float, *, device=None, progress):
    """Ignores Cancel for ``seconds`` (like one long library call)."""
    time.sleep(seconds)
    return "done"


# ----------------------------------------------------------------------------- a fake tool
@dataclass
class SlowData:
    path: Path
    text: str

    @property
    def name(self):
        return self.path.name


@dataclass
class SlowResult:
    data: SlowData
    params: dict
    device: str
    steps_done: int


def load_slow(path, *, progress=None):
    text = Path(path).read_text()
    if text == "bad":
        raise InputError("not a slow file")
    return SlowData(Path(path), text)


def run_slow(data, params, *, device, progress):
    p = SLOW_PARAMS.validate(params)
    for i in range(p["steps"]):
        time.sleep(p["delay"])
        progress.update((i + 1) / p["steps"], f"step {i + 1} of {p['steps']}")
    return SlowResult(data, p, device.label, p["steps"])


def write_txt(result, path):
    with atomic_write(path, "w") as f:
        f.write(f"result: {result.steps_done} steps on {result.device}\n")
    return [Path(path)]


SLOW_PARAMS = ParamSet([
    Param("steps", int, 20, "Steps", "number of steps", minimum=1, maximum=100000),
    Param("scale", float, 0.5, "Scale", "a scale", minimum=0, maximum=10, auto=True, typical=0.5),
    Param("method", str, "gpu-sym", "Method", "a method", choices=("gpu-sym", "gpu", "cpu")),
    Param("edges", bool, False, "Edges", "draw edges"),
    Param("name", str, "abc", "Name", "a name"),
    Param("limit", int, None, "Limit", "an optional limit", minimum=1, maximum=10**6, optional=True),
    Param("delay", float, 0.0, "Delay", "seconds per step", minimum=0, maximum=1, advanced=True, decimals=3),
])

SLOW_TOOL = Tool(name="slow", title="Slow tool", key="slow", description="A fake tool for the tests.",
                 params=SLOW_PARAMS, load=load_slow, run=run_slow,
                 summary=lambda r: [f"{r.data.name}", f"  {r.steps_done} steps"],
                 exports=(Export("txt", "Text", (".txt",), write_txt),),
                 input_extensions=(".slow", ".slw.gz"), input_kind="Slow files")


class SlowTab(ToolTab):
    tool = SLOW_TOOL

    def __init__(self, parent=None, *, host=None):
        super().__init__(parent, host=host)
        self.opened: list[Path] = []
        self.shown: list = []

    def build_view(self):
        return QLabel("slow view")

    def show_input(self, data):
        self.opened.append(data.path)

    def show_result(self, result):
        self.shown.append(result)


OTHER_TOOL = Tool(name="other", title="Other tool", key="other", description="Another fake tool.",
                  params=ParamSet([Param("n", int, 1, "N", "n", minimum=0, maximum=9)]),
                  load=load_slow, run=lambda data, params, *, device, progress: data,
                  summary=lambda r: [], input_extensions=(".oth",), input_kind="Other files")


class OtherTab(ToolTab):
    tool = OTHER_TOOL

    def build_view(self):
        return QLabel("other view")

    def show_input(self, data):
        pass

    def show_result(self, result):
        pass
