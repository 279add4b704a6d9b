"""Host-side pieces of the GPU path that need no GPU: the depth maps that wait for their
download and the geometry memo."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.mvs import optimize
from gpu_kernels.mvs.grow import DepthMap


class _SlowDownload:
    """A download still under way: the arrays hold zeros until ``wait`` has run."""

    def __init__(self, maps, arrays, values):
        self.maps, self.arrays, self.values, self.waits = maps, arrays, values, 0

    def wait(self):
        self.waits += 1
        for a, v in zip(self.arrays, self.values, strict=True):
            a[...] = v
        for m in self.maps:
            m.pending = m.device = None


@pytest.mark.parametrize("field", ["depth", "normal", "conf", "iters", "hs", "ht"])
def test_a_map_read_while_it_comes_down_waits_for_it(field):
    """Reading any array of a map whose download is under way (``grow_depth_maps(keep_device=
    True)``) waits for the download first: the values read are the downloaded ones, never the
    half-filled array; the wait runs once, and the map then holds no device copies."""
    arrs = {f: np.zeros((4, 5, 3) if f == "normal" else (4, 5), np.float32) for f in
            ("depth", "normal", "conf", "iters", "hs", "ht")}
    m = DepthMap(0, *(arrs[f] for f in ("depth", "normal", "conf", "iters", "hs", "ht")), neighbors=[1, 2])
    want = {f: float(i + 1) for i, f in enumerate(arrs)}
    pend = _SlowDownload([m], list(arrs.values()), list(want.values()))
    m.pending, m.device = pend, ("on the device",)
    got = getattr(m, field)
    assert np.all(got == want[field]), (field, got.ravel()[:3])
    assert pend.waits == 1 and m.pending is None and m.device is None
    for f in arrs:  # the others are there too, without another wait
        assert np.all(getattr(m, f) == want[f])
    assert pend.waits == 1


def test_a_map_without_a_download_is_a_plain_record():
    """No download: the arrays are the ones given, writable in place (the preview callback sets
    ``depth``), and ``n_samples`` counts the finite depths."""
    d = np.full((3, 3), np.nan, np.float32)
    d[1, 1] = 2.0
    m = DepthMap(0, d, np.zeros((3, 3, 3)), *(np.zeros((3, 3)) for _ in range(4)), neighbors=[])
    assert m.depth is d and m.n_samples == 1
    m.depth = np.ones((3, 3), np.float32)
    assert m.n_samples == 9


def test_the_geometry_memo_gives_fresh_tables_and_follows_the_cameras():
    """build_geometry from its memo equals the tables built afresh, returns copies (writing them
    changes no later call), and a camera moved in place gives new tables, not the memo's."""
    from gpu_kernels.mvs.synth import render_synthetic_scene

    cams = render_synthetic_scene(n_views=5, width=48, height=36).scene.cameras
    refs, nbrs = [0, 2], [[1, 2, 3], [0, 1, 3, 4]]
    fresh = optimize._build_geometry(cams, refs, nbrs, 4)
    a = optimize.build_geometry(cams, refs, nbrs, 4)
    b = optimize.build_geometry(cams, refs, nbrs, 4)
    for x, y, z in zip(fresh, a, b, strict=True):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)
    b[0][...] = 0
    np.testing.assert_array_equal(optimize.build_geometry(cams, refs, nbrs, 4)[0], fresh[0])
    cams[3].t[0] += 0.25  # moved in place
    moved = optimize.build_geometry(cams, refs, nbrs, 4)
    np.testing.assert_array_equal(moved[0], optimize._build_geometry(cams, refs, nbrs, 4)[0])
    assert not np.array_equal(moved[0], fresh[0])


def test_two_threads_reading_a_map_while_it_comes_down_both_see_it_whole():
    """A map read from two threads at once while its download runs (the window and the worker):
    the second reader waits for the download the first one started, not only the first."""
    import threading
    import time

    from gpu_kernels.mvs.grow import _Pending

    arrs = [np.zeros((8, 8), np.float32) for _ in range(5)] + [np.zeros((8, 8, 3), np.float32)]
    m = DepthMap(0, arrs[0], arrs[5], *arrs[1:5], neighbors=[1])

    class _Future:
        def result(self):
            time.sleep(0.2)  # the copy engine at work
            for a in arrs:
                a[...] = 5.0
            return [64]

    m.pending = _Pending(_Future(), [m])
    seen = {}
    start = threading.Barrier(2)

    def read(name):
        start.wait()
        if name == "late":
            time.sleep(0.05)  # the first reader is inside the wait by now
        seen[name] = float(m.depth.min())

    ts = [threading.Thread(target=read, args=(n,)) for n in ("first", "late")]
    for t in ts:
        t.start()
    for t in ts:
        t.join(5)
    assert seen == {"first": 5.0, "late": 5.0}, seen
    assert m.pending is None and m.stats["samples"] == 64


def _fake_cupy(alloc):
    """A stand-in ``cupy`` module whose pinned allocator is ``alloc``."""
    import types

    cp = types.ModuleType("cupy")
    cp.cuda = types.SimpleNamespace(alloc_pinned_memory=alloc)
    return cp


def test_page_locked_memory_running_out_falls_back_to_ordinary_arrays(monkeypatch):
    """Where page-locked host memory runs out (CuPy raises after freeing its pinned pool), the
    maps and the cloud come down into ordinary arrays, as with ``GPULAB_MVS_PINNED=0``, instead
    of the reconstruction failing; a pinned allocation that works is used."""
    import sys

    from gpu_kernels.mvs import transfer

    class CUDARuntimeError(RuntimeError):  # what CuPy raises (cudaErrorMemoryAllocation)
        pass

    def no_memory(size):
        raise CUDARuntimeError("cudaErrorMemoryAllocation: out of memory")

    specs = [((4, 5), np.float32), ((4, 5, 3), np.float32), ((3,), np.int32)]
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(no_memory))
    assert transfer.pinned_arrays(specs) is None
    outs, jobs = transfer.host_arrays(specs, True)
    for j in jobs:
        j.result()
    assert [(o.shape, o.dtype) for o in outs] == [((4, 5), np.float32), ((4, 5, 3), np.float32), ((3,), np.int32)]
    got = []
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(lambda size: got.append(size) or bytearray(size)))
    outs = transfer.pinned_arrays(specs)
    assert got and [(o.shape, o.dtype) for o in outs] == [((4, 5), np.float32), ((4, 5, 3), np.float32),
                                                          ((3,), np.int32)]


def test_the_geometry_memo_is_safe_from_two_threads(monkeypatch):
    """Two runs (say two batch jobs) filling a full memo at once: both get their tables; neither
    fails evicting the entry the other one evicted first (the eviction is made slow here so that
    the two meet)."""
    import threading
    import time

    from gpu_kernels.mvs.synth import render_synthetic_scene

    class SlowDict(dict):
        def __iter__(self):
            keys = list(super().__iter__())
            time.sleep(0.1)  # the other thread picks the same oldest entry meanwhile
            yield from keys

    memo = SlowDict({("filler", i): None for i in range(optimize._GEO_MEMO_SIZE)})
    monkeypatch.setattr(optimize, "_GEO_MEMO", memo)
    cams = render_synthetic_scene(n_views=5, width=48, height=36).scene.cameras
    errors, got = [], {}

    def run(ref):
        try:
            got[ref] = optimize.build_geometry(cams, [ref], [[v for v in range(5) if v != ref]], 4)
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            errors.append(repr(exc))

    ts = [threading.Thread(target=run, args=(r,)) for r in (0, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert not errors, errors
    for r in (0, 1):
        np.testing.assert_array_equal(got[r][0], optimize._build_geometry(cams, [r], [[v for v in range(5) if v != r]],
                                                                          4)[0])
    assert len(memo) <= optimize._GEO_MEMO_SIZE


def test_a_run_stopped_between_groups_waits_for_the_maps_still_coming_down(monkeypatch):
    """grow_views(keep_device=True) stopped in its second group (a cancel, an error): the first
    group's maps, still coming down into page-locked arrays from device arrays, are waited for
    before the error leaves, so that neither buffer goes back to its pool with a copy in flight."""
    import types

    from gpu_kernels.mvs import stereo

    class Download:
        def __init__(self):
            self.waited = 0

        def wait(self):
            self.waited += 1

    first = Download()
    calls = []

    def grow(tex, _img, cameras, grp, nbrs, seeds, **kw):
        calls.append(grp)
        if len(calls) == 2:
            raise RuntimeError("cancelled")
        z = np.zeros((2, 2), np.float32)
        m = DepthMap(grp[0], z, np.zeros((2, 2, 3), np.float32), z, z, z, z, neighbors=list(nbrs[0]),
                     stats={"tried": 1, "free": 1})
        m.pending = first
        return [m]

    monkeypatch.setattr(stereo, "grow_depth_maps", grow)
    scene = types.SimpleNamespace(names=["a", "b", "c", "d"], cameras=[None] * 4, masks=None)
    tex = types.SimpleNamespace(backend=types.SimpleNamespace(is_gpu=False))
    prep = types.SimpleNamespace(views=[0, 1], neighbors={0: [1, 2, 3], 1: [0, 2, 3]}, textures=tex,
                                 view_seeds={0: None, 1: None})
    with pytest.raises(RuntimeError, match="cancelled"):
        stereo.grow_views(scene, prep, min_views=3, views_together=1, device="cpu", keep_device=True)
    assert len(calls) == 2 and first.waited == 1


def test_the_maps_host_arrays_are_allocated_on_the_run_s_device(monkeypatch):
    """The maps' page-locked host arrays are allocated in the download thread (prefault) with
    the run's device current there, as the download itself is: a fresh thread's current device
    is device 0, where the allocation would open a CUDA context of its own (and lock the pages
    for device 0's context only) when the run is on another GPU."""
    import contextlib
    import threading
    import types

    from gpu_kernels.mvs import grow

    current = threading.local()

    class Backend:
        device_id = 1

        @contextlib.contextmanager
        def activate(self):
            old = getattr(current, "device", 0)
            current.device = self.device_id
            try:
                yield
            finally:
                current.device = old

    seen = []

    def host_arrays(specs, pinned=False):
        seen.append(getattr(current, "device", 0))
        return [np.empty(sh, dt) for sh, dt in specs], []

    monkeypatch.setattr(grow, "host_arrays", host_arrays)
    gr = grow._DeviceGrower.__new__(grow._DeviceGrower)
    gr.be, gr.emu, gr.host_out = Backend(), False, None
    gr.rh = gr.rhs = gr.rht = gr.rc = gr.iters = np.zeros(6, np.float32)
    gr.nrm = np.zeros((6, 3), np.float32)
    gr.ctrl = np.zeros(8, np.int32)
    gr.g = types.SimpleNamespace(refs=[0, 1])
    gr.prefault()
    outs = gr._out()
    assert seen == [1]
    assert [o.shape for o in outs] == [(6,)] * 4 + [(6, 3), (6,), (2,), (8,)]  # + samples per view, control


def test_a_bad_pinned_max_setting_warns_and_keeps_the_default(monkeypatch):
    """GPULAB_MVS_PINNED_MAX that is not a number gave a traceback in the middle of a run."""
    from gpu_kernels.mvs import transfer

    monkeypatch.setenv("GPULAB_MVS_PINNED_MAX", "lots")
    with pytest.warns(UserWarning, match="not a number"):
        assert transfer._pinned_max() == transfer.PINNED_MAX
    monkeypatch.setenv("GPULAB_MVS_PINNED_MAX", "1e6")
    assert transfer._pinned_max() == 1_000_000
