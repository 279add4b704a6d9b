"""The k = "auto" layout's extra integer-k run (``auto_layout="concave"``) has its own progress range, named
"auto-k layout", after the first result's: the bar never says done before it starts, and a cancel during
it stops the run (reviewer A's finding, session 9). Tool and library."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import pytest

from app.tools import mesh_seg
from gpu_kernels.backend import get_backend
from gpu_kernels.jobs import Cancelled, Progress
from gpu_kernels.mesh import segment as sg

CPU = get_backend("cpu")
WORKING = 1500  # a simplified working resolution: the same stages and bar, in less time


@pytest.fixture(scope="module")
def fish():
    return mesh_seg.from_arrays(*fx.fish_arrays())


def _tool(fish, progress):
    return mesh_seg.run(fish, {"apsp": "cpu", "auto_layout": "concave", "max_faces": WORKING}, device=CPU,
                        progress=progress)


def _library(fish, progress):
    return sg.segment_mesh(fish.vertices, fish.faces, k="auto", apsp_method="cpu", device="cpu",
                           auto_layout="concave", max_faces=WORKING, progress=progress)


@pytest.mark.parametrize("run", [_tool, _library], ids=["tool", "library"])
def test_the_bar_is_not_done_before_the_extra_run(fish, run):
    seen = []
    run(fish, Progress(lambda f, s: seen.append((f, s or "")), min_interval=0.0))
    first = next((i for i, (_, s) in enumerate(seen) if "auto-k layout" in s), None)
    assert first is not None, f"no 'auto-k layout' update: {seen[-5:]}"
    before = [f for f, _ in seen[:first]]
    assert max(before) < 0.99, f"the bar reached {max(before)} before the extra run"
    assert seen[-1][0] == pytest.approx(1.0)


@pytest.mark.parametrize("run", [_tool, _library], ids=["tool", "library"])
def test_a_cancel_during_the_extra_run_stops_it(fish, run):
    box = {}

    def cb(f, s):
        if s and "auto-k layout" in s:
            box["seen"] = True
            box["p"].cancel()

    box["p"] = Progress(cb, min_interval=0.0)
    with pytest.raises(Cancelled):
        run(fish, box["p"])
    assert box.get("seen")
