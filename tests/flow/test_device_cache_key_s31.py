"""Per-device caches keep an emulator's objects apart from the real device's (session 31).

On the H200, with the whole suite in one run, the GPU flow tests failed with "cudaErrorInvalidResourceHandle" in
every pytest worker that had run an emulated flow test first: the flow's second stream was cached by device number,
the emulator (tests/cuda_emu) says device 0 too, and the real device 0 then got the emulator's stream and event.
``backend.cache_key`` is now the key of those caches (the flow's stream and graph plans, MVS's device memory), as the
kernel cache already kept emulated modules apart. The review after session 32 put the other per-device caches on the
same key: the SM count, the small constant arrays (ops) and imseg's record of cooperative launches."""
import types

import cuda_emu as emu  # tests/cuda_emu (tests/ is on sys.path through its conftest)
import numpy as np
import pytest

from gpu_kernels import backend
from gpu_kernels.flow import search


def test_the_key_tells_an_emulator_from_the_device_of_the_same_number():
    be = emu.emu_backend()
    assert be.device_id == 0 and be.is_gpu
    real0 = types.SimpleNamespace(is_gpu=True, device_id=0)
    assert backend.cache_key(real0) == ("cuda", 0)
    assert backend.cache_key(be) == ("emu", id(be))
    assert backend.cache_key(backend.get_backend("cpu")) == ("cpu", 0)


def test_an_emulated_second_stream_is_not_the_devices(monkeypatch):
    monkeypatch.setattr(search, "_side", {})
    be = emu.emu_backend()
    s = search._side_stream(be)
    assert s is not None and type(s).__module__ == emu.__name__, "the emulator makes its own stream"
    assert list(search._side) == [("emu", id(be))]
    assert ("cuda", 0) not in search._side and 0 not in search._side


def test_mvs_device_memory_is_remembered_per_backend(monkeypatch):
    from gpu_kernels.mvs import stereo

    monkeypatch.setattr(stereo, "_device_bytes", {})
    be = emu.emu_backend()
    stereo.release_pool(be)
    assert stereo._device_bytes == {("emu", id(be)): be.mem_info()[1]}


@pytest.mark.gpu
def test_the_gpu_flow_runs_after_an_emulated_one_in_the_same_process():
    from gpu_kernels.flow.synthetic import synthetic_pair

    p = synthetic_pair("translation", size=(96, 128), magnitude=5.0)
    kw = dict(quality="fb")  # the backward flow on the second stream
    before = search.inverse_search_flow(p.img1, p.img2, device="cuda", **kw).to_numpy()
    search._side_stream(emu.emu_backend())  # what an emulated flow test leaves behind
    after = search.inverse_search_flow(p.img1, p.img2, device="cuda", **kw).to_numpy()
    for name in ("u", "v", "quality"):
        np.testing.assert_array_equal(getattr(after, name), getattr(before, name))


def test_the_other_per_device_caches_take_the_same_key(monkeypatch):
    """One rule for every per-device cache: the SM count, the constant arrays and imseg's cooperative record key by
    ``cache_key`` (they had rules of their own: the type's name and the number, or the number alone)."""
    from gpu_kernels.imseg import learned as imseg_learned
    from gpu_kernels.ops import _gpu

    be = emu.emu_backend()
    monkeypatch.setattr(backend, "_SMS", {})
    backend.sm_count(be)
    assert list(backend._SMS) == [backend.cache_key(be)]
    monkeypatch.setattr(_gpu, "_arrays", {})
    cpu = backend.get_backend("cpu")
    _gpu.cached_device_array(cpu, np.arange(3.0))
    assert [k[:2] for k in _gpu._arrays] == [("cpu", 0)]
    monkeypatch.setattr(imseg_learned, "_COOPERATIVE", {})
    assert imseg_learned._cooperative_ok(cpu) is True and imseg_learned._COOPERATIVE == {}  # CPU: nothing to ask


@pytest.mark.gpu
def test_imseg_remembers_cooperative_launches_by_the_same_key(monkeypatch):
    from gpu_kernels.imseg import learned as imseg_learned

    monkeypatch.setattr(imseg_learned, "_COOPERATIVE", {})
    be = backend.get_backend("cuda")
    assert imseg_learned._cooperative_ok(be) is True
    assert list(imseg_learned._COOPERATIVE) == [backend.cache_key(be)] == [("cuda", be.device_id)]
