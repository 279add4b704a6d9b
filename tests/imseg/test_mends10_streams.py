"""Review A #14 (session 10): one per-device stream helper (``_util.device_stream``) for the early copies'
side stream (``_util._side_stream``) and the graphs' capturing stream (``graphs._capture_stream``): each
keeps its own stream a device, created once, as the two copies of the helper did."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpu_kernels.imseg import _util as U
from gpu_kernels.imseg import graphs as G


def _fake(label, made):
    def stream(non_blocking=False):
        made.append((label, non_blocking))
        return object()
    return SimpleNamespace(label=label, xp=SimpleNamespace(cuda=SimpleNamespace(Stream=stream)))


def test_each_use_keeps_its_own_stream_per_device(monkeypatch):
    monkeypatch.setattr(U, "_SIDE", {})
    monkeypatch.setattr(G, "_STREAMS", {})
    made = []
    a, b = _fake("cuda:0", made), _fake("cuda:1", made)
    side0, side1 = U._side_stream(a), U._side_stream(b)
    cap0 = G._capture_stream(a)
    assert len({id(side0), id(side1), id(cap0)}) == 3
    assert U._side_stream(a) is side0 and U._side_stream(b) is side1 and G._capture_stream(a) is cap0
    assert made == [("cuda:0", True), ("cuda:1", True), ("cuda:0", True)]   # non-blocking, once each
    assert U.device_stream(U._SIDE, a) is side0 and U.device_stream(G._STREAMS, a) is cap0


@pytest.mark.gpu
def test_the_streams_on_the_gpu():
    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    side, cap = U._side_stream(be), G._capture_stream(be)
    assert side is not cap and U._side_stream(be) is side and G._capture_stream(be) is cap
    assert side.ptr != 0 and cap.ptr != 0 and side.ptr != cap.ptr   # non-default streams, two of them
