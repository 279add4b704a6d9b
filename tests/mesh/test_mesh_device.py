"""The device asked for reaches the job: the exact job a tab starts, run with ``device="cpu"``
on a GPU host, computes on the CPU (and with ``device="cuda"`` on the GPU)."""

from __future__ import annotations

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box  # noqa: E402  (tests/mesh is on sys.path under pytest)

from app.tools import mesh_seg
from app.tools.base import execute, run_job
from gpu_kernels import backend


@pytest.mark.gpu
def test_a_tab_job_asked_for_the_cpu_runs_on_the_cpu_on_a_gpu_host():
    import cupy as cp

    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    job = run_job(mesh_seg.TOOL, data, {"k": 3})  # what MeshTab's Segment button starts
    saved = backend._default_spec
    backend.set_default_device("cuda")  # a process default that must NOT be used
    try:
        cp.get_default_memory_pool().free_all_blocks()
        before = cp.get_default_memory_pool().total_bytes()
        res, be, _ = execute(job, device="cpu")
        assert be.name == "cpu"
        assert res.device == "cpu" and res.seg.info["device"] == "cpu"
        assert res.seg.info["method"] in ("cpu", "cpu-mt")
        assert cp.get_default_memory_pool().total_bytes() == before  # not one byte on the GPU
        res_gpu, be_gpu, _ = execute(job, device="cuda:0")
        assert be_gpu.is_gpu and res_gpu.seg.info["device"] == "cuda:0"
        assert res_gpu.seg.info["method"].startswith("gpu")
        # the same parts, whatever numbers each device gives them
        from scipy.optimize import linear_sum_assignment

        a, b = res_gpu.seg.labels, res.seg.labels
        table = np.zeros((a.max() + 1, b.max() + 1))
        np.add.at(table, (a, b), 1)
        rows, cols = linear_sum_assignment(-table)
        assert table[rows, cols].sum() / a.size > 0.98
    finally:
        backend._default_spec = saved


def test_the_job_uses_the_device_it_is_given(monkeypatch):
    """Without a GPU too: the backend passed in is the one the library receives."""
    from gpu_kernels.mesh import segment as seg_lib

    seen = {}
    real = seg_lib.segment_mesh

    def spy(*a, device=None, **k):
        seen["device"] = device
        return real(*a, device=device, **k)

    monkeypatch.setattr(seg_lib, "segment_mesh", spy)
    v, f, _ = box_bar_box()
    res, be, _ = execute(run_job(mesh_seg.TOOL, mesh_seg.from_arrays(v, f), {"k": 3, "apsp": "cpu"}),
                         device="cpu")
    assert seen["device"] is be and be.name == "cpu" and res.seg.k == 3
