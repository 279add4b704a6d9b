"""The optional compiled CPU path of the flow (numba, gpu_kernels/flow/_numba_kernels.py) against the
NumPy path it replaces: kernel by kernel on random inputs, and the whole default flow on a real pair.
The kernels do NumPy's float32 operations in NumPy's order, so the results are compared for equality.
Skipped where numba is not installed (it is optional: ``pip install gpulab[fast]``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba", reason="numba is optional (pip install gpulab[fast]): the compiled CPU path is off")

from gpu_kernels.backend import get_backend  # noqa: E402
from gpu_kernels.flow import _numba, refine, search  # noqa: E402
from gpu_kernels.flow import _numba_kernels as nk  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _img(rng, H, W, smooth=2.0):
    from scipy import ndimage

    return ndimage.gaussian_filter(rng.random((H, W)), smooth).astype(np.float32) * np.float32(4)


@pytest.mark.parametrize("H,W,bands,edge,occ,mask", [(37, 53, 1, 0.0, 0.0, False), (64, 48, 2, 6.0, 0.1, False),
                                                      (61, 40, 3, 6.0, 0.1, True), (9, 30, 2, 0.0, 0.1, True)])
def test_tv_warp_iterate_matches_numpy(H, W, bands, edge, occ, mask):
    """One warp and its iterations (refine._warp_np + refine._iterate_np) against the compiled
    band kernel, with and without the edge-aware TV, the occlusion weight and a mask, in one band
    and in several (halos recomputed): equal to the bit."""
    rng = np.random.default_rng(H * W + bands)
    I1, I2 = _img(rng, H, W), _img(rng, H, W)
    u = (rng.standard_normal((H, W)) * 2).astype(np.float32)
    v = (rng.standard_normal((H, W)) * 2).astype(np.float32)
    p = (rng.standard_normal((4, H, W)) * 0.1).astype(np.float32)
    w = (rng.random((H, W)) > 0.2).astype(np.float32) if mask else None
    be = get_backend("cpu")
    ginv = refine._edge_ginv(be, I1, edge) if edge > 0 else None
    i2x, i2y = refine._grad_np(I2)
    I2s = np.stack([I2, i2x, i2y])
    i1g = refine._grad_np(I1)
    lt, theta, taut, iters = 30.0, 0.3, 0.25 / 0.3, 7
    ua, va, pa = u.copy(), v.copy(), p.copy()
    gxy, rc = refine._warp_np(I1, I2s, ua, va, w, i1g, occ)
    refine._iterate_np(ua, va, pa, gxy, rc, lt, theta, taut, iters, ginv)
    uo, vo, po = np.empty_like(u), np.empty_like(v), np.empty_like(p)
    f32 = np.float32
    nk.tv_warp_iterate(I1, I2s, i1g[0], i1g[1], w if w is not None else I1, w is not None, float(occ), u, v, p,
                       ginv if ginv is not None else I1, ginv is not None, f32(lt), f32(theta), f32(taut), iters,
                       bands, uo, vo, po)
    np.testing.assert_array_equal(uo, ua)
    np.testing.assert_array_equal(vo, va)
    np.testing.assert_array_equal(po, pa)


@pytest.mark.parametrize("patch,stride,radius,rounds", [(8, 4, 3, 4), (6, 3, 0, 0), (12, 5, 2, 2), (4, 4, 1, 3)])
def test_coarse_match_and_densify_match_numpy(monkeypatch, patch, stride, radius, rounds):
    """The patches' inverse search (integer search, propagation, Gauss-Newton) and densification,
    NumPy and compiled: equal to the bit (patch sizes 4 to 12, so the NumPy sums of 16 to 144
    values, whose order the kernels follow)."""
    rng = np.random.default_rng(patch + radius)
    H, W = 70, 90
    I1 = _img(rng, H, W, 1.5)
    I2 = np.roll(I1, (2, -3), (0, 1)) + np.float32(0.01) * rng.random((H, W)).astype(np.float32)
    u0 = (rng.standard_normal((H, W)) * 0.5).astype(np.float32)
    v0 = (rng.standard_normal((H, W)) * 0.5).astype(np.float32)
    be = get_backend("cpu")
    out = {}
    for on in (False, True):
        monkeypatch.setattr(_numba, "ENABLED", on)
        pu, pv, pc, conf = search.coarse_match(be, I1, I2, u0, v0, patch=patch, stride=stride, iters=12, rounds=rounds,
                                               radius=radius)
        du, dv = search.densify(be, I1, I2, pu, pv, conf, u0, v0, patch=patch, eps=0.01, prior=1.0)
        out[on] = (pu, pv, pc, conf, du, dv)
    for a, b in zip(out[False], out[True], strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.abs(out[True][0]).max() > 1.0      # the patches found the motion (3 px): not a trivial comparison


def _real_pair(size):
    import cv2

    env = os.environ.get("GPULAB_SHARED_DATA")
    root = Path(env) if env else ROOT / ".." / "shared" / "data"
    d = root / "flow-large" / "flyingchairs" / "0000000"
    if not (d / "img0.png").exists():
        pytest.skip(f"FlyingChairs pair not found at {d} (set GPULAB_SHARED_DATA)")
    return [cv2.resize(cv2.imread(str(d / f)), size, interpolation=cv2.INTER_LINEAR) for f in ("img0.png", "img1.png")]


def test_default_flow_matches_numpy_path(monkeypatch):
    """The whole default flow (inverse_search_flow, its fill and quality map) on a real pair
    resized to 320 x 240: the compiled path gives the NumPy path's flow and map."""
    a, b = _real_pair((320, 240))
    res = {}
    for on in (False, True):
        monkeypatch.setattr(_numba, "ENABLED", on)
        res[on] = search.inverse_search_flow(a, b, device="cpu")
    for k in ("u", "v", "quality"):
        x, y = getattr(res[False], k), getattr(res[True], k)
        assert np.abs(x - y).max() <= 1e-5, k
    assert np.abs(res[True].u).max() > 1.0        # a real motion


def test_fallback_when_disabled(monkeypatch):
    """ENABLED off: no compiled kernel runs (each would raise); on: they do."""
    def boom(*a, **k):
        raise AssertionError("compiled kernel called with the NumPy path selected")

    rng = np.random.default_rng(3)
    I1 = _img(rng, 48, 64)
    I2 = np.roll(I1, 1, 1)
    with monkeypatch.context() as m:
        for name in ("tv_warp_iterate", "patch_round", "patch_init", "patch_setup", "densify"):
            m.setattr(nk, name, boom)
        m.setattr(_numba, "_K", _numba._Locked(nk))
        m.setattr(_numba, "_TRIED", True)
        m.setattr(_numba, "ENABLED", False)
        assert _numba.kernels() is None
        r = search.inverse_search_flow(I1, I2, device="cpu", quality="ncc", fill=0)
        assert np.isfinite(r.u).all()
        m.setattr(_numba, "ENABLED", True)
        with pytest.raises(AssertionError, match="NumPy path selected"):
            search.inverse_search_flow(I1, I2, device="cpu", quality="ncc", fill=0)


def test_environment_switch_and_lazy_import():
    """GPULAB_FLOW_NUMBA=0 selects the NumPy path; importing the flow package and its CPU modules
    does not import numba (it loads on the first compiled call)."""
    code = ("import sys; from gpu_kernels.flow import _numba, search, refine; "
            "assert 'numba' not in sys.modules, 'numba imported early'; "
            "print(_numba.ENABLED, _numba.kernels() is None)")
    env = dict(os.environ, GPULAB_FLOW_NUMBA="0")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
    env["GPULAB_FLOW_NUMBA"] = "1"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_first_cpu_flow_says_it_compiles(monkeypatch):
    """The first CPU flow of a process prepares the compiled kernels before its first level and,
    when numba's disk cache does not hold them (the first run after installing: 10-20 s of
    compiling), says so on the progress bar first; a cached first run and later runs do not."""
    from gpu_kernels.flow.synthetic import synthetic_pair

    p = synthetic_pair("translation", size=(64, 80), magnitude=3.0)

    def messages():
        seen = []
        search.inverse_search_flow(p.img1, p.img2, device="cpu", progress=lambda f, s: seen.append(s))
        return seen

    monkeypatch.setattr(_numba, "_READY", False)
    monkeypatch.setattr(_numba, "_cached", lambda: False)
    seen = messages()
    assert seen and _numba.COMPILING in seen[0], seen[:3]           # before any level's message
    assert not any(_numba.COMPILING in (s or "") for s in messages())     # once a process
    monkeypatch.setattr(_numba, "_READY", False)
    monkeypatch.setattr(_numba, "_cached", lambda: True)
    assert not any(_numba.COMPILING in (s or "") for s in messages())     # loaded from the cache: silent
    monkeypatch.setattr(_numba, "_READY", False)
    seen = []
    refine.tvl1_refine(p.img1, p.img2, device="cpu", levels=2, warps=1, iters=2,
                       progress=lambda f, s: seen.append(s))
    assert not any(_numba.COMPILING in (s or "") for s in seen) and _numba._READY  # refine prepares them too
