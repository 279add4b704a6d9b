"""Issue 22 (session 9): the thickness's GPU kernels (gpu_kernels/cuda/mesh_thickness.cu) compute
the formula of the brute-force search they replaced (a CuPy product), bit for bit.

- ``mesh_thick_nearest`` (the search of one step in one kernel per chunk): the same indices (the
  first of equal distances, as ``argmin``) and the same distances. On the CPU through the test
  suite's CUDA emulator against an exact reference of the formula ``(|q|² + |s|²) - (2q)·s`` (the
  dot product's rounding written out with fractions), and on a GPU against that reference and the
  CPU path (the k-d tree). Session 10 removed the CuPy product path (cuBLAS) these were first
  checked against, and its switch ``FUSED_NEAREST``.
- ``mesh_thick_balls`` (every step of every face in one launch): the same radii as the host loop,
  emulated against the host loop with a search of the same arithmetic, and on a GPU against the
  host loop with the per-step kernel; the orders of the three-term sums are probed (NumPy's einsum here)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from gpu_kernels.mesh import thickness as th


def _fma(a: float, b: float, c: float) -> float:
    return float(Fraction(a) * Fraction(b) + Fraction(c))   # one rounding, as fma


def _reference(q, s, mode):
    """(dist, index) of the formula with the dot product rounded as ``mode`` says (NumPy's
    sums for |q|² and |s|², as CuPy's on three terms: left to right)."""
    qq = (q * q).sum(axis=1)
    s2 = (s * s).sum(axis=1)
    d_out = np.empty(len(q))
    j_out = np.empty(len(q), dtype=np.int64)
    for i, row in enumerate(q):
        a0, a1, a2 = (2.0 * row).tolist()
        best, bj = None, -1
        for j, (b0, b1, b2) in enumerate(s.tolist()):
            if mode == 0:
                g = _fma(a2, b2, _fma(a1, b1, a0 * b0))
            elif mode == 1:
                g = _fma(a0, b0, _fma(a1, b1, a2 * b2))
            else:
                g = (a0 * b0 + a1 * b1) + a2 * b2
            d = (float(qq[i]) + float(s2[j])) - g
            if best is None or d < best:
                best, bj = d, j
        d_out[i] = np.sqrt(max(best, 0.0))
        j_out[i] = bj
    return d_out, j_out


def _points(seed, nq=120, ns=600):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(ns, 3)) * [3.0, 1.0, 0.2] + [100.0, -7.0, 0.5]   # far from 0: cancellation
    q = s[rng.integers(0, ns, nq)] + rng.normal(size=(nq, 3)) * 1e-3
    s[3 + 256] = s[3]           # a duplicate sample on the same thread of the kernel's block: a tie
    s[3 + 128] = s[3]           # and one on another thread: the first of the three wins
    q[0] = s[3]
    return q, s


_REF: dict = {}


def _ref(seed, mode):
    if (seed, mode) not in _REF:
        _REF[seed, mode] = _reference(*_points(seed), mode)
    return _REF[seed, mode]


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_the_fused_search_is_the_formula_bit_for_bit_emulated(mode):
    import cuda_emu

    if cuda_emu.available():
        pytest.skip(cuda_emu.available())
    be = cuda_emu.emu_backend()
    q, s = _points(1)
    query = th._nearest_on_device(cuda_emu.xp, s, device=be, dot_mode=mode)
    d, j = query(q)
    rd, rj = _ref(1, mode)
    np.testing.assert_array_equal(j, rj)
    assert j[0] == 3
    assert np.array_equal(d.view(np.int64), rd.view(np.int64))


def test_the_dot_orders_differ_on_these_points():
    """Each order's distances differ from the two others' somewhere on these points, so the test
    above fails when the kernel forms the dot product in another order."""
    dist = [_ref(1, m)[0] for m in (0, 1, 2)]
    for a in range(3):
        for b in range(a + 1, 3):
            assert not np.array_equal(dist[a].view(np.int64), dist[b].view(np.int64)), (a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("nq", [1, 255, 2048, 2049, 5000])
def test_the_search_on_the_gpu_is_the_formula_and_the_cpu_paths_answer(nq):
    """The GPU search (session 10: the only one on a device; the CuPy product path it was checked
    against is removed) against the CPU path: the k-d tree's nearest sample (the ties aside: the
    kernel takes the first) at the same distance, and the exact formula bit for bit on rows around
    the chunk edges."""
    import cupy
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(nq)
    s = rng.normal(size=(6000, 3)) * [1.0, 0.5, 0.1] + [3.0, 0.0, -1.0]
    s[4000] = s[17]
    q = np.concatenate([s[rng.integers(0, 6000, nq)] + rng.normal(size=(nq, 3)) * 1e-2, s[[17]]])[:nq]
    q[-1] = s[17]
    d1, j1 = th._nearest_on_device(cupy, s)(q)
    assert j1[-1] == 17
    d0, j0 = cKDTree(s).query(q)
    same = j1 == j0
    alt = np.linalg.norm(s[j1] - q, axis=1)         # another sample only where it is as near
    assert np.all(same | (np.abs(alt - d0) <= 1e-12 * (1 + d0)))
    assert same.mean() > 0.99
    # the formula's cancellation: |d² error| ~ eps (|q|² + |s|²), so ~1e-7 absolute near 0 here
    np.testing.assert_allclose(d1, d0, rtol=1e-9, atol=1e-6)
    rows = sorted({0, nq - 1, *[r for r in (2046, 2047, 2048, 2049, 4095, 4096) if r < nq],
                   *rng.integers(0, nq, 6).tolist()})
    rd, rj = _reference(q[rows], s, th.THICK_DOT_MODE)
    np.testing.assert_array_equal(j1[rows], rj)
    assert np.array_equal(d1[rows].view(np.int64), rd.view(np.int64))


def _ellipsoid(faces):
    """A flat ellipsoid's hull (many equidistant samples: its rings), ``faces`` faces where the fast
    simplifier is installed, its dual graph, and the graph's smoothing arcs."""
    from scipy.spatial import ConvexHull

    from gpu_kernels.mesh.dualgraph import clean_mesh, dual_graph
    from gpu_kernels.mesh.simplify import available_simplifiers, simplify_mesh

    u, w = np.meshgrid(np.linspace(0, 2 * np.pi, 120, endpoint=False), np.linspace(0.05, np.pi - 0.05, 60))
    pts = np.c_[(2 * np.sin(w) * np.cos(u)).ravel(), (np.sin(w) * np.sin(u)).ravel(), (0.3 * np.cos(w)).ravel()]
    hull = ConvexHull(pts)
    v, f = pts, hull.simplices
    out = np.einsum("ij,ij->i", np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), v[f].mean(axis=1)) > 0
    f = np.where(out[:, None], f, f[:, ::-1])
    if "fast" in available_simplifiers():
        v, f = simplify_mesh(v, f, faces, method="fast")
        v, f, _, _ = clean_mesh(v, f)
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)
    return v, f, g, dict(src=g.src, dst=g.dst, areas=g.areas)


@pytest.mark.gpu
def test_the_per_step_thickness_on_the_gpu_equals_the_cpu_path(monkeypatch):
    """The thickness with the per-step GPU search (the ball loop off) against the CPU path (k-d
    tree), as tests/mesh/test_mesh_thickness.py compares the default: every face the same radius where
    the CPU path breaks the ties between equidistant samples as the kernel did (session 10, review A #9:
    it allowed 1 % of faces any value)."""
    import cupy

    v, f, g, kw = _ellipsoid(4000)
    monkeypatch.setattr(th, "LOOP_ON_DEVICE", False)      # the search per step, not the loop kernel
    check_thickness_follows_the_search(monkeypatch, v, f, g, kw, cupy)


def test_the_per_step_thickness_follows_the_search_emulated(monkeypatch):
    """The same check through the test suite's CUDA emulator (the per-step path: the ball-loop kernel is for
    CuPy only) on a smaller hull; it has ties (the hull's rings), and a search that takes a farther sample
    now and then is caught."""
    import functools

    import cuda_emu

    if cuda_emu.available():
        pytest.skip(cuda_emu.available())
    v, f, g, kw = _ellipsoid(500)
    real = functools.partial(th._nearest_on_device, device=cuda_emu.emu_backend())
    assert check_thickness_follows_the_search(monkeypatch, v, f, g, kw, cuda_emu.xp, real) > 0

    def farther(xp, samples, **k):
        q = real(xp, samples, **k)

        def query_fused(c):
            d, j = q(c)
            j = j.copy()
            j[::97] = (j[::97] + 1) % len(samples)
            return d, j
        return query_fused
    with pytest.raises(AssertionError, match="farther sample"):
        check_thickness_follows_the_search(monkeypatch, v, f, g, kw, cuda_emu.xp, farther)


def check_thickness_follows_the_search(monkeypatch, v, f, g, kw, xp, search=None):
    """Every face's thickness on the device (per-step search ``search``, default the kernel's) equals the CPU
    path's (k-d tree) where the CPU path breaks each tie as the device did: every sample the device chose
    instead of the k-d tree's is as near (each step checked), and no face is left free. Without and with the
    smoothing (``kw``). Returns the ties seen (the device took another, equidistant sample)."""
    search = search or th._nearest_on_device
    real_kd = th.kd_nearest
    seen = 0
    for smooth in (False, True):
        calls, chosen = _checked_search(monkeypatch, search)
        b = th.face_thickness(v, f, g.centroids, g.normals, xp=xp, **(kw if smooth else {}))
        assert calls == ["query_fused"]
        monkeypatch.setattr(th, "kd_nearest", _following(chosen, real_kd))
        a = th.face_thickness(v, f, g.centroids, g.normals, **(kw if smooth else {}))
        monkeypatch.setattr(th, "kd_nearest", real_kd)
        np.testing.assert_allclose(b, a, rtol=1e-9)   # every face
        plain = th.face_thickness(v, f, g.centroids, g.normals, **(kw if smooth else {}))
        np.testing.assert_allclose(np.median(b), np.median(plain), rtol=1e-9)
        seen += len(chosen)
    return seen


def _checked_search(monkeypatch, real):
    """Wrap the device search so that each step's answer is checked against the k-d tree's: another sample
    only where it is as near (a tie; the kernel takes the first of equal computed distances, which differ
    from the exact ones by the formula's rounding, ~eps (|q|² + |s|²) in d²). Returns the calls and the
    device's other choices (query row's bytes -> sample)."""
    from scipy.spatial import cKDTree

    calls, chosen = [], {}

    def spy(xp, samples, **k):
        q = real(xp, samples, **k)
        calls.append(q.__name__)
        tree = cKDTree(samples)
        s2max = float((samples * samples).sum(axis=1).max())

        def checked(c):
            d1, j1 = q(c)
            d0, j0 = tree.query(c)
            alt = np.linalg.norm(samples[j1] - c, axis=1)
            eps = 1e-13 * (1.0 + (c * c).sum(axis=1) + s2max)
            assert np.all((j1 == j0) | (np.abs(alt ** 2 - d0 ** 2) <= eps)), "a farther sample than the k-d tree's"
            other = np.flatnonzero(j1 != j0)
            chosen.update((np.ascontiguousarray(c[i]).tobytes(), int(j1[i])) for i in other)
            return d1, j1
        return checked
    monkeypatch.setattr(th, "_nearest_on_device", spy)
    return calls, chosen


def _following(chosen, real_kd):
    """The k-d tree's search, but the device's sample where the device chose another, as near, for that row."""
    def kd(tree, c):
        d, j = real_kd(tree, c)
        if chosen:
            c = np.ascontiguousarray(c, dtype=np.float64)
            j = np.array([chosen.get(row.tobytes(), jj) for row, jj in zip(c, j, strict=True)], dtype=j.dtype)
        return d, j
    return kd


def _box_mesh():
    """A bulged 4 x 2 x 0.4 box (thickness's own doctest shape), wound outwards."""
    from scipy.spatial import ConvexHull

    g1 = np.linspace(-1, 1, 9)
    q = np.array([(x, y, z) for x in g1 for y in g1 for z in g1 if max(abs(x), abs(y), abs(z)) == 1])
    w = 1 - q ** 2
    q = q + 0.03 * np.sign(q) * (np.abs(q) == 1) * np.c_[w[:, 1] * w[:, 2], w[:, 0] * w[:, 2], w[:, 0] * w[:, 1]]
    v = q * [2.0, 1.0, 0.2] + [10.0, -3.0, 1.0]
    f = ConvexHull(v).simplices
    out = np.einsum("ij,ij->i", np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]),
                    v[f].mean(axis=1) - v.mean(axis=0)) > 0
    return v, np.where(out[:, None], f, f[:, ::-1])


def test_numpy_einsum_has_one_probed_order_here():
    host = []
    for m, seed in ((4096, 1), (37, 3)):
        a, b = th._probe_terms(m, seed)
        host += [(np.einsum("ij,ij->i", a, b), a * b)]
    assert th._only_order(host) in (0, 1, 2)
    a, b = th._probe_terms(64, 9)
    assert th._only_order([(th._sum3(a * b, 1), a * b)]) == 1       # the probe tells the orders apart
    assert th._only_order([(th._sum3(a * b, 1), a * b), (th._sum3(a * b, 0), a * b)]) is None


@pytest.mark.parametrize("dev_order", [0, 2])
def test_the_ball_loop_kernel_gives_the_host_loops_radii_emulated(monkeypatch, dev_order):
    """mesh_thick_balls (every step of every face in one launch) against face_thickness's host
    loop with a search of the same arithmetic, bit for bit (no smoothing: thickness = 2 r)."""
    import cuda_emu

    if cuda_emu.available():
        pytest.skip(cuda_emu.available())
    from gpu_kernels.mesh.dualgraph import dual_graph

    v, f = _box_mesh()
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)
    a, b = th._probe_terms(4096, 1)
    host_order = th._only_order([(np.einsum("ij,ij->i", a, b), a * b), (np.einsum("ij,ij->i", a, a), a * a)])
    assert host_order is not None

    def ref_search(xp, samples, **kw):      # the product path's formula, DOT_MODE 2, |c|² in dev_order
        s = np.asarray(samples)
        s2 = (s * s).sum(axis=1)

        def query(c):
            qq = th._sum3(c * c, dev_order)
            a2 = 2.0 * c
            gm = (a2[:, None, 0] * s[None, :, 0] + a2[:, None, 1] * s[None, :, 1]) + a2[:, None, 2] * s[None, :, 2]
            d2 = (qq[:, None] + s2[None, :]) - gm
            j = np.argmin(d2, axis=1)
            return np.sqrt(np.maximum(d2[np.arange(len(c)), j], 0.0)), j
        return query
    monkeypatch.setattr(th, "_nearest_on_device", ref_search)
    fake = type("FakeXp", (), {"__name__": "numpy_stand_in"})()
    ref = th.face_thickness(v, f, g.centroids, g.normals, xp=fake)
    monkeypatch.setattr(th, "THICK_DOT_MODE", 2)
    n = th._orient_outward(v, f, np.asarray(g.normals, dtype=np.float64))
    p = np.asarray(g.centroids, dtype=np.float64)
    samples = np.concatenate([v[np.unique(f)], p])
    diag = float(np.linalg.norm(samples.max(axis=0) - samples.min(axis=0)))
    r = th._balls_on_device(cuda_emu.xp, p, n, samples, diag, orders=(dev_order, host_order),
                            device=cuda_emu.emu_backend())
    assert np.array_equal((2.0 * r).view(np.int64), ref.view(np.int64))
    assert len(np.unique(ref)) > 5 and ref.max() < 0.5 * diag     # the balls did shrink, to several sizes
    # a wrong order of the host's sums changes radii somewhere
    wrong = th._balls_on_device(cuda_emu.xp, p, n, samples, diag, orders=(dev_order, (host_order + 1) % 3),
                                device=cuda_emu.emu_backend())
    assert not np.array_equal(wrong, r)


@pytest.mark.gpu
def test_the_ball_loop_kernel_is_used_and_bit_identical_on_the_gpu(monkeypatch):
    import cupy

    from gpu_kernels.mesh.dualgraph import dual_graph

    assert None not in th._sum3_orders(cupy)
    v, f = _box_mesh()
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)
    kw = dict(src=g.src, dst=g.dst, areas=g.areas, xp=cupy)
    monkeypatch.setattr(th, "LOOP_ON_DEVICE", False)
    a = th.face_thickness(v, f, g.centroids, g.normals, **kw)
    monkeypatch.setattr(th, "LOOP_ON_DEVICE", True)
    calls = []
    real = th._balls_on_device

    def spy(*args, **k):
        out = real(*args, **k)
        calls.append(out is not None)
        return out
    monkeypatch.setattr(th, "_balls_on_device", spy)
    b = th.face_thickness(v, f, g.centroids, g.normals, **kw)
    assert calls == [True]
    assert np.array_equal(a.view(np.int64), b.view(np.int64))
