"""A stand-in ``pymeshlab`` module for tests: its MeshSet's quadric decimation calls ``on_filter(kwargs)`` and returns
the mesh unchanged (used by test_speed12_simplify and test_mesh16_speed_clock)."""

from __future__ import annotations

import sys
import types

import numpy as np


def stand_in_pymeshlab(monkeypatch, on_filter, file: str | None = None) -> types.ModuleType:
    """Put a stand-in ``pymeshlab`` into ``sys.modules`` (undone by ``monkeypatch``). ``file``: its ``__file__`` (the
    real module's, for a test that needs the real plugin's clock slot); ``on_filter`` may raise to fail the filter."""

    class Mesh:
        def __init__(self, vertex_matrix, face_matrix):
            self._v, self._f = np.asarray(vertex_matrix), np.asarray(face_matrix)

        def vertex_matrix(self):
            return self._v

        def face_matrix(self):
            return self._f

    class MeshSet:
        def add_mesh(self, m):
            self._m = m

        def meshing_decimation_quadric_edge_collapse(self, **kw):
            on_filter(kw)

        def current_mesh(self):
            return self._m

    mod = types.ModuleType("pymeshlab")
    mod.Mesh, mod.MeshSet = Mesh, MeshSet
    if file is not None:
        mod.__file__ = file
    monkeypatch.setitem(sys.modules, "pymeshlab", mod)
    return mod
