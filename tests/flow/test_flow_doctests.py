"""The examples in the flow modules' docstrings run and print what they say."""

import doctest
import importlib

import pytest

MODULES = ["gpu_kernels.ops.filters", "gpu_kernels.ops.pyramid", "gpu_kernels.ops.warp", "gpu_kernels.ops.color",
           "gpu_kernels.flow.api", "gpu_kernels.flow.blockmatch", "gpu_kernels.flow.lucas_kanade",
           "gpu_kernels.flow.refine", "gpu_kernels.flow.metrics", "gpu_kernels.flow.colorwheel",
           "gpu_kernels.flow.synthetic", "app.io.flow_io", "app.io.video_io", "app.tools.flow_progress"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    import sys

    importlib.import_module(name)
    mod = sys.modules[name]
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0 and res.attempted > 0, res
