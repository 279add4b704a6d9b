"""The shared PSB meshes in the quality tests (test_quality_*.py): the skip where the data is
absent, one mesh with its human segmentations, and a CPU run with one module setting changed,
scored against the humans."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

PSB = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "psb"
_BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def needs_psb(mesh_id: int):
    """Skip unless PSB mesh ``mesh_id`` is in the shared data."""
    return pytest.mark.skipif(not (PSB / "off" / f"{mesh_id}.off").exists(),
                              reason="the shared PSB data (../shared/data/psb) is absent")


def psb_mesh(mesh_id: int):
    """``(vertices, faces, humans)`` of PSB mesh ``mesh_id`` (benchmarks/mesh_psb.py's reader)."""
    if str(_BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(_BENCHMARKS))
    import mesh_psb as mp

    v, f = mp.load_mesh(PSB, mesh_id)
    return v, f, mp.load_human(PSB, mesh_id)


def segment_with(monkeypatch, module, name: str, value, v, f, humans, k="auto"):
    """``(k found, mean Rand Index error against the humans)`` of a CPU segmentation at ``k``
    with ``module.name`` set to ``value``."""
    from gpu_kernels.mesh import segment_mesh
    from gpu_kernels.mesh.metrics import rand_index_error

    monkeypatch.setattr(module, name, value)
    seg = segment_mesh(v, f, k=k, device="cpu")
    return seg.k, float(np.mean([rand_index_error(seg.labels, h) for h in humans]))
