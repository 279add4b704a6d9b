"""One result shape and one bad-input error class (issue 19)."""

from __future__ import annotations

import inspect
import re

import pytest

from app.errors import classify
from app.tools import TOOLS
from app.tools.base import Tool, ToolResult


def test_no_tool_declares_its_headline_as_a_lambda():
    from app.tools import echo, flow, imseg, mesh_seg, mvs

    for mod in (echo, flow, imseg, mesh_seg, mvs):
        decl = inspect.getsource(mod)
        decl = decl[decl.index("TOOL = Tool("):]
        assert not re.search(r"\bheadline=lambda", decl), mod.__name__
        assert not re.search(r"\bmetrics=lambda", decl), mod.__name__
    assert len(TOOLS) >= 5


def test_the_result_shape_gives_headline_and_figures():
    class R(ToolResult):
        def __init__(self):
            self.params, self.device, self.elapsed, self.metrics = {"a": 1}, "CPU", 0.25, {"epe": 0.5, "n": "x"}

    r = R()
    assert r.headline() == "Done in 250 ms on CPU"
    assert r.figures() == {"seconds": 0.25, "epe": 0.5}
    t = next(iter(TOOLS))
    assert Tool.headline_of(t, r) == (t.headline(r) if t.headline else "Done in 250 ms on CPU")


def test_every_tool_result_class_has_the_shape():
    from app.tools import echo, flow, imseg, mesh_seg, mvs

    classes = [echo.EchoResult, flow.FlowRun, mesh_seg.MeshSegResult, mvs.MVSRun, imseg.ImsegResult]
    for cls in classes:
        fields = {f for f in getattr(cls, "__dataclass_fields__", {})}
        assert {"params", "device", "elapsed"} <= fields, cls
    for cls in classes[:4]:
        assert issubclass(cls, ToolResult) and "headline" in cls.__dict__, cls


def test_apsp_bad_input_is_the_users_error_in_one_line():
    from gpu_kernels.errors import InputError
    from gpu_kernels.graph.apsp import APSPInputError, all_pairs_shortest_paths

    for args, kw in [((2, [0], [5], [1.0]), {}), ((2, [0], [1], [float("nan")]), {}),
                     ((2, [0], [1], [1.0]), {"method": "nonsense"})]:
        with pytest.raises(APSPInputError) as e:
            all_pairs_shortest_paths(*args, **kw)
        assert isinstance(e.value, InputError) and isinstance(e.value, ValueError)
        kind, msg = classify(e.value, "mesh")
        assert kind == "user" and "\n" not in msg and "Error" not in msg
