"""Review A #13 (session 10): the mesh tool has one summary, with the auto-k layout line, for the CLI, the
exported *-summary.txt and the batch alike (``mesh_seg.summary`` is ``mesh_seg_exports.summary``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from app.tools import mesh_seg
from app.tools import mesh_seg_exports as E


def _result(note):
    info = {"auto_layout": note} if note else {}
    seg = SimpleNamespace(k=3, info=info, fuzzy=np.zeros(4, bool))
    data = SimpleNamespace(name="m.ply", vertices=np.zeros((4, 3)), faces=np.zeros((4, 3), int), warnings=[])
    return SimpleNamespace(data=data, seg=seg, params={"k": "auto"}, device="cpu", elapsed=1.0,
                           table=lambda: [], warnings=[])


def test_one_summary_with_the_layout_line():
    assert mesh_seg.summary is E.summary and mesh_seg.TOOL.summary is E.summary
    lines = E.summary(_result({"kept": "integer k", "concavity_auto": 0.2, "concavity_k": 0.35}))
    at = [i for i, line in enumerate(lines) if line.startswith("  auto-k layout: ")]
    assert len(at) == 1 and lines[at[0] - 1] == "  parts (k): 3 (auto)"
    assert not any("auto-k layout" in line for line in E.summary(_result(None)))
