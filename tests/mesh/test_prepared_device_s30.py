"""A prepared mesh's later stages run on the device that prepared it where they are given none (session 30).

Found on the H200: ``prepare_mesh(..., device="cpu")`` and then ``segment_prepared(prep)`` (``device=None``) picked
the GPU ("auto") for the clustering and stopped in a CuPy kernel on the prepared mesh's host arrays (a TypeError;
tests/mesh/test_gain_power_session19.py's k = "auto" case, which the GPU host's ``pytest -m gpu`` never ran). Now
``PreparedMesh.device`` records the backend that prepared it, and a stage given ``device=None`` takes it; a device
given explicitly is used as before."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels import backend as be
from gpu_kernels.mesh import segment as sg

fish, prep = fx.fish, fx.prep


def test_the_prepared_mesh_records_its_device(prep):
    assert prep.device == "cpu"


def test_a_stage_without_a_device_takes_the_preparing_one(prep, monkeypatch):
    asked = []
    real = sg.get_backend

    def spy(device=None):
        asked.append(device)
        return real(device)

    monkeypatch.setattr(sg, "get_backend", spy)
    a = sg.segment_prepared(prep, k=4)
    b = sg.segment_prepared(prep, k="auto")
    assert asked and None not in asked and set(asked) == {"cpu"}
    # a device given explicitly is used as it is
    asked.clear()
    c = sg.segment_prepared(prep, k=4, device="cpu")
    assert set(asked) == {"cpu"} and np.array_equal(a.labels, c.labels)
    assert b.k >= 2


def test_a_mesh_without_the_field_behaves_as_before(prep, monkeypatch):
    import dataclasses

    old = dataclasses.replace(prep, device=None)
    asked = []
    real = sg.get_backend
    monkeypatch.setattr(sg, "get_backend", lambda device=None: asked.append(device) or real(device))
    sg.cluster_prepared(old, k=4)
    assert None in asked


@pytest.mark.gpu
def test_gpu_a_cpu_prepared_mesh_segments_on_the_cpu_with_no_device(fish):
    assert be.cupy_available()
    p = sg.prepare_mesh(*fish, max_faces=None, **fx.KW)
    ref = sg.segment_prepared(p, k="auto", device="cpu")
    got = sg.segment_prepared(p, k="auto")
    assert np.array_equal(ref.labels, got.labels) and got.info["device"] == "cpu"
    got6 = sg.segment_prepared(p, k=6)
    assert np.array_equal(sg.segment_prepared(p, k=6, device="cpu").labels, got6.labels)
    # and one prepared on the GPU stays there
    q = sg.prepare_mesh(*fish, max_faces=None, device="cuda")
    assert q.device.startswith("cuda") and sg.segment_prepared(q, k=4).info["device"].startswith("cuda")
