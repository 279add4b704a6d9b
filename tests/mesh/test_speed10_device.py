"""Session 10: ``gpu_kernels.backend.current_device`` / ``device_of``, the one way library code
finds the device of the calling thread or of an array (it replaced ``thickness._device_of`` and
cluster.py's ``get_backend(f"cuda:{D.device.id}")``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gpu_kernels import backend


def test_the_cpu_where_cupy_cannot_be_used(monkeypatch):
    monkeypatch.setattr(backend, "_import_cupy", lambda: "CuPy is not installed (test)")
    assert backend.current_device() is backend.get_backend("cpu")


def test_a_numpy_array_is_on_the_cpu():
    assert backend.device_of(np.zeros(3)) is backend.get_backend("cpu")
    assert backend.device_of([1, 2]) is backend.get_backend("cpu")
    assert backend.device_of(None).label == "cpu"


def test_an_array_with_a_cuda_interface_is_on_its_device(monkeypatch):
    class _Dev:
        id = 3

    class _Arr:
        __cuda_array_interface__: dict = {}
        device = _Dev()

    monkeypatch.setattr(backend, "_cuda_backend", lambda i: backend.Backend("cuda", i, np))
    be = backend.device_of(_Arr())
    assert (be.name, be.device_id, be.label) == ("cuda", 3, "cuda:3")


@pytest.mark.gpu
def test_on_the_gpu_the_current_device_follows_the_thread():
    import cupy

    n = cupy.cuda.runtime.getDeviceCount()
    assert backend.current_device() is backend.get_backend("cuda:0")
    last = n - 1
    seen = {}

    def worker():
        with cupy.cuda.Device(last):
            seen["in"] = backend.current_device()
        seen["out"] = backend.current_device()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen["in"] is backend.get_backend(f"cuda:{last}")
    assert seen["out"].label == "cuda:0"
    with cupy.cuda.Device(last):
        a = cupy.zeros(4)
    assert backend.device_of(a) is backend.get_backend(f"cuda:{last}")
    assert backend.device_of(cupy.zeros(2)) is backend.get_backend("cuda:0")
