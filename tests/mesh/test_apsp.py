"""All-pairs shortest paths: every method against scipy's Dijkstra (or a NumPy FW)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from gpu_kernels.backend import BackendError
from gpu_kernels.graph import apsp
from gpu_kernels.graph.apsp import (
    ApspMemoryError,
    _reference_fw,
    all_pairs_shortest_paths,
    apsp_memory_bytes,
    max_nodes_for_memory,
    zorder_tiles,
)
from gpu_kernels.jobs import Cancelled, Progress


# --------------------------------------------------------------------------- graphs
def random_graph(n, m=None, seed=0, components=1, dup=True):
    """Random sparse graph; ``components`` > 1 splits the nodes into disconnected blocks;
    some edges repeated with other weights (the minimum must win)."""
    rng = np.random.default_rng(seed)
    m = 3 * n if m is None else m
    if n == 0:
        return np.zeros(0, int), np.zeros(0, int), np.zeros(0)
    comp = rng.integers(0, components, n)
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    keep = comp[s] == comp[d]
    s, d = s[keep], d[keep]
    # a path through each component's nodes so most nodes are reachable
    for c in range(components):
        nodes = rng.permutation(np.flatnonzero(comp == c))
        s = np.r_[s, nodes[:-1]]
        d = np.r_[d, nodes[1:]]
    w = rng.uniform(0.05, 2.0, s.size)
    if dup and s.size:
        k = max(1, s.size // 10)
        s = np.r_[s, d[:k]]            # the same edge the other way round, another weight
        d = np.r_[d, s[:k]]
        w = np.r_[w, rng.uniform(0.05, 2.0, k)]
    return s, d, w


def scipy_ref(n, s, d, w, directed=False):
    """scipy Dijkstra with duplicate edges reduced to their minimum (scipy would sum them)."""
    if not directed:
        s, d = np.maximum(s, d), np.minimum(s, d)
        s, d, w = np.r_[s, d], np.r_[d, s], np.r_[w, w]
    keep = s != d
    s, d, w = s[keep], d[keep], w[keep]
    best = {}
    for a, b, x in zip(s.tolist(), d.tolist(), w.tolist(), strict=True):
        if (a, b) not in best or x < best[(a, b)]:
            best[(a, b)] = x
    if best:
        k = np.array(list(best.keys()))
        g = sp.csr_matrix((np.array(list(best.values())), (k[:, 0], k[:, 1])), shape=(n, n))
    else:
        g = sp.csr_matrix((n, n))
    return dijkstra(g, directed=True)


def torus_dual(a, b, seed=0):
    """Dual graph of a triangulated a x b torus (2ab faces, each with 3 neighbours)."""
    rng = np.random.default_rng(seed)

    def f(i, j, t):
        return 2 * ((i % a) * b + (j % b)) + t

    src, dst = [], []
    for i in range(a):
        for j in range(b):
            # quad (i,j) -> lower triangle 0 and upper triangle 1
            src += [f(i, j, 0), f(i, j, 0), f(i, j, 1)]
            dst += [f(i, j, 1), f(i + 1, j, 1), f(i, j + 1, 0)]
    s, d = np.array(src), np.array(dst)
    return 2 * a * b, s, d, rng.uniform(0.5, 1.5, s.size)


def assert_close(got, ref, rtol=1e-5, atol=1e-5):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape
    assert np.array_equal(np.isinf(got), np.isinf(ref)), "reachability differs"
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- CPU
@pytest.mark.parametrize("method", ["cpu", "cpu-mt"])
@pytest.mark.parametrize("n,components", [(0, 1), (1, 1), (7, 1), (65, 3), (200, 1), (333, 4)])
def test_cpu_methods_match_scipy(method, n, components):
    s, d, w = random_graph(n, seed=n, components=components)
    got = all_pairs_shortest_paths(n, s, d, w, method=method, workers=2)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    assert_close(got, scipy_ref(n, s, d, w))


def test_cpu_directed_and_reference_fw():
    n = 90
    s, d, w = random_graph(n, seed=5, dup=True)
    ref = scipy_ref(n, s, d, w, directed=True)
    assert_close(_reference_fw(n, s, d, w, directed=True), ref)
    assert_close(all_pairs_shortest_paths(n, s, d, w, directed=True, method="cpu"), ref)
    assert_close(all_pairs_shortest_paths(n, s, d, w, directed=True, method="cpu-mt", workers=2), ref)


def test_edges_both_ways_and_zero_weights():
    # undirected: listing an edge once or both ways gives the same result; 0 weights are edges
    s = np.array([0, 1, 2, 1])
    d = np.array([1, 2, 3, 0])
    w = np.array([0.0, 1.0, 2.0, 5.0])
    got = all_pairs_shortest_paths(5, s, d, w, method="cpu")
    assert got[0, 1] == 0.0 and got[1, 0] == 0.0
    assert got[0, 3] == 3.0 and got[3, 0] == 3.0
    assert np.isinf(got[4, :4]).all() and got[4, 4] == 0.0


def test_mesh_dual_graph_cpu():
    n, s, d, w = torus_dual(6, 9)
    ref = scipy_ref(n, s, d, w)
    assert_close(all_pairs_shortest_paths(n, s, d, w, method="cpu"), ref)
    assert_close(_reference_fw(n, s, d, w), ref)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "args,kw,match",
    [
        ((3, [0], [1], [-1.0]), {}, "non-negative"),
        ((3, [0], [1], [np.nan]), {}, "NaN"),
        ((3, [0], [3], [1.0]), {}, "out of range"),
        ((3, [-1], [1], [1.0]), {}, "out of range"),
        ((3, [0, 1], [1], [1.0]), {}, "same length"),
        ((3, [0.5], [1], [1.0]), {}, "integer"),
        ((-1, [], [], []), {}, ">= 0"),
        ((3, [0], [1], [1.0]), {"method": "gpu-sym", "directed": True}, "undirected"),
        ((3, [0], [1], [1.0]), {"method": "dijkstra"}, "unknown APSP method"),
        ((3, [0], [1], [1.0]), {"method": "cpu", "out": "packed"}, "packed"),
    ],
)
def test_bad_input(args, kw, match):
    with pytest.raises(ValueError, match=match):
        all_pairs_shortest_paths(*args, **kw)


def test_gpu_method_without_gpu_raises_backend_error():
    with pytest.raises(BackendError):
        all_pairs_shortest_paths(3, [0], [1], [1.0], method="gpu", device="cpu")
    with pytest.raises(BackendError):
        all_pairs_shortest_paths(3, [0], [1], [1.0], method="gpu-sym", device="cpu")


def test_auto_on_cpu_uses_cpu_mt():
    s, d, w = random_graph(40, seed=3)
    got = all_pairs_shortest_paths(40, s, d, w, method="auto", device="cpu", workers=2)
    assert isinstance(got, np.ndarray)
    assert_close(got, scipy_ref(40, s, d, w))


def test_host_memory_error():
    with pytest.raises(ApspMemoryError) as ei:
        all_pairs_shortest_paths(1000, [0], [1], [1.0], method="cpu", free_bytes=1 << 20)
    e = ei.value
    assert e.needed > e.free == 1 << 20
    assert 0 < e.max_n < 1000
    assert apsp_memory_bytes(e.max_n, "cpu") <= e.free
    assert "simplify" in str(e) and "GiB" in str(e)


# --------------------------------------------------------------------------- memory formulas
def test_memory_formulas():
    n, b = 1000, 64
    npad = 1024
    t = npad // b
    assert apsp_memory_bytes(n, "gpu", b) >= 4 * npad * npad
    packed = apsp_memory_bytes(n, "gpu-sym", b, out="packed")
    assert packed >= 4 * (t * (t + 1) // 2) * b * b
    assert packed < 0.6 * 4 * npad * npad          # about half of the dense matrix
    assert apsp_memory_bytes(n, "gpu-sym", b) == packed + 4 * n * n
    assert apsp_memory_bytes(n, "cpu") >= 4 * n * n
    for method in ("gpu", "gpu-sym", "cpu", "cpu-mt"):
        free = 3 * 1024**3
        m = max_nodes_for_memory(free, method)
        assert apsp_memory_bytes(m, method) <= free < apsp_memory_bytes(m + 1, method)
    assert max_nodes_for_memory(3 * 1024**3, "gpu-sym", out="packed") > max_nodes_for_memory(3 * 1024**3, "gpu")


@pytest.mark.parametrize("method", ["gpu", "gpu-sym", "cpu", "cpu-mt"])
def test_memory_estimate_is_monotone(method):
    sizes = list(range(0, 3000, 7)) + list(range(12000, 12600, 13))
    mem = [apsp_memory_bytes(n, method) for n in sizes]
    assert all(a <= b for a, b in zip(mem, mem[1:], strict=False))
    for n in (1000, 3000, 12288, 20000):
        free = apsp_memory_bytes(n, method) - 1
        m = max_nodes_for_memory(free, method)
        assert m < n and apsp_memory_bytes(m, method) <= free < apsp_memory_bytes(m + 1, method)


def test_zorder_tiles():
    idx, tiles = zorder_tiles(5)
    assert len(tiles) == 15
    assert (tiles[:, 0] >= tiles[:, 1]).all()
    assert (idx[tiles[:, 0], tiles[:, 1]] == np.arange(15)).all()
    assert (idx[np.triu_indices(5, 1)] == -1).all()
    assert [tuple(x) for x in tiles[:4]] == [(0, 0), (1, 0), (1, 1), (2, 0)]


# --------------------------------------------------------------------------- progress / cancel
@pytest.mark.parametrize("method", ["cpu", "cpu-mt"])
def test_progress_and_cancel_cpu(method):
    n = 300
    s, d, w = random_graph(n, seed=9)
    seen = []
    all_pairs_shortest_paths(n, s, d, w, method=method, workers=2,
                             progress=Progress(lambda f, st: seen.append((f, st)), min_interval=0))
    assert seen and seen[-1][0] == 1.0
    assert all(st.startswith("APSP") for _, st in seen)
    assert len({round(f, 3) for f, _ in seen}) > 3

    p = Progress(min_interval=0)
    calls = []

    def cb(f, st):
        calls.append(f)
        if len(calls) == 3:
            p.cancel()

    p._callback = cb
    with pytest.raises(Cancelled):
        all_pairs_shortest_paths(n, s, d, w, method=method, workers=2, progress=p)


# --------------------------------------------------------------------------- GPU
GPU_SIZES = [1, 7, 64, 65, 200, 1000, 3001]


def _cp():
    return pytest.importorskip("cupy")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [None, "float32"])
@pytest.mark.parametrize("method", ["gpu", "gpu-sym"])
@pytest.mark.parametrize("n", GPU_SIZES)
def test_gpu_matches_scipy(method, n, dtype):
    cp = _cp()
    s, d, w = random_graph(n, seed=100 + n, components=1 if n < 200 else 3)
    got = all_pairs_shortest_paths(n, s, d, w, method=method, device="cuda", dtype=dtype)
    assert isinstance(got, cp.ndarray) and got.dtype == cp.float32 and got.shape == (n, n)
    assert got.flags.c_contiguous
    assert_close(cp.asnumpy(got), scipy_ref(n, s, d, w))


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["gpu", "gpu-sym"])
@pytest.mark.parametrize("dtype", ["int32", "int32-nodpx"])
@pytest.mark.parametrize("n", [65, 1000])
def test_gpu_int32_matches_scipy(method, dtype, n):
    cp = _cp()
    s, d, w = random_graph(n, seed=7 + n, components=2)
    got = all_pairs_shortest_paths(n, s, d, w, method=method, device="cuda", dtype=dtype)
    assert got.dtype == cp.float32
    assert_close(cp.asnumpy(got), scipy_ref(n, s, d, w), rtol=2e-5, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [32, 64, 128])
def test_gpu_tile_sizes(tile):
    cp = _cp()
    n = 300
    s, d, w = random_graph(n, seed=11, components=2)
    ref = scipy_ref(n, s, d, w)
    for method in ("gpu", "gpu-sym"):
        assert_close(cp.asnumpy(all_pairs_shortest_paths(n, s, d, w, method=method, device="cuda", tile=tile)), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [{"pipe": 1}, {"pipe": 0}, {"skip": 0}, {"bm": 64, "bn": 64},
                                 {"bm": 64, "bn": 64, "pipe": 1}, {"bm": 128, "bn": 64, "kc": 16}])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_gpu_kernel_variants(cfg, dtype):
    """Pipelined product and sub-blocked 128-tiles (several CUDA blocks per tile)."""
    cp = _cp()
    from gpu_kernels.backend import get_backend

    n = 1000
    s, d, w = random_graph(n, seed=21, components=2)
    ref = scipy_ref(n, s, d, w)
    tile = 128 if "bm" in cfg else 64
    prep = apsp._prepare_edges(n, s, d, w, False)
    for reorder in (True, False):
        packed = apsp.floyd_warshall_sym_packed(n, device="cuda", tile=tile, dtype=dtype, config=cfg,
                                                reorder=reorder, _prepared=prep)
        assert sorted(packed.perm.tolist()) == list(range(n))
        assert_close(cp.asnumpy(packed.to_dense()), ref)
    dense = apsp.floyd_warshall_dense(*prep, directed=False, be=get_backend("cuda"), progress=Progress(),
                                      tile=tile, dtype=dtype, config=cfg)
    assert_close(cp.asnumpy(dense), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["gpu", "gpu-sym"])
def test_gpu_mesh_dual_graph(method):
    cp = _cp()
    n, s, d, w = torus_dual(30, 41)       # 2460 faces
    got = all_pairs_shortest_paths(n, s, d, w, method=method, device="cuda")
    assert_close(cp.asnumpy(got), scipy_ref(n, s, d, w))


@pytest.mark.gpu
@pytest.mark.parametrize("reorder", [True, False])
def test_gpu_sym_reorder_and_disconnected(reorder):
    """Many components and isolated nodes: skipped all-inf tiles must stay exact."""
    cp = _cp()
    n = 1500
    s, d, w = random_graph(n, m=n, seed=31, components=40)
    keep = (s % 17 != 3) & (d % 17 != 3)          # some isolated nodes
    s, d, w = s[keep], d[keep], w[keep]
    got = all_pairs_shortest_paths(n, s, d, w, method="gpu-sym", device="cuda", reorder=reorder)
    assert_close(cp.asnumpy(got), scipy_ref(n, s, d, w))


@pytest.mark.gpu
def test_gpu_directed():
    cp = _cp()
    n = 777
    s, d, w = random_graph(n, seed=2, components=2)
    got = all_pairs_shortest_paths(n, s, d, w, method="gpu", directed=True, device="cuda")
    assert_close(cp.asnumpy(got), scipy_ref(n, s, d, w, directed=True))


@pytest.mark.gpu
def test_gpu_packed_output():
    cp = _cp()
    n = 300
    s, d, w = random_graph(n, seed=4)
    packed = all_pairs_shortest_paths(n, s, d, w, method="gpu-sym", device="cuda", out="packed")
    assert isinstance(packed, apsp.PackedDistances)
    t = (n + 63) // 64
    assert packed.nbytes == 4 * (t * (t + 1) // 2) * 64 * 64
    assert_close(cp.asnumpy(packed.to_dense()), scipy_ref(n, s, d, w))


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["gpu", "gpu-sym"])
def test_gpu_memory_error_and_auto(method):
    _cp()
    n = 3000
    s, d, w = random_graph(n, seed=1)
    free = apsp_memory_bytes(n, method) - 1
    with pytest.raises(ApspMemoryError) as ei:
        all_pairs_shortest_paths(n, s, d, w, method=method, device="cuda", free_bytes=free)
    assert ei.value.max_n < n and ei.value.free == free
    # auto falls back to the CPU when nothing fits
    got = all_pairs_shortest_paths(200, *random_graph(200, seed=1), method="auto", device="cuda",
                                   free_bytes=1000, workers=2)
    assert isinstance(got, np.ndarray)


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["gpu", "gpu-sym"])
def test_gpu_progress_and_cancel(method):
    _cp()
    n = 2000
    s, d, w = random_graph(n, seed=8)
    seen = []
    all_pairs_shortest_paths(n, s, d, w, method=method, device="cuda",
                             progress=Progress(lambda f, st: seen.append((f, st)), min_interval=0))
    assert seen[-1] == (1.0, "APSP: tile round 32/32")
    assert any("tile round" in st for _, st in seen)
    p = Progress(min_interval=0)

    def cb(f, st):
        if f > 0.2:
            p.cancel()

    p._callback = cb
    with pytest.raises(Cancelled):
        all_pairs_shortest_paths(n, s, d, w, method=method, device="cuda", progress=p)


def test_auto_cpu_method_follows_size_cores_and_pool(monkeypatch):
    from gpu_kernels.graph import apsp as mod

    monkeypatch.setattr(mod, "_pool", None)
    monkeypatch.setattr(mod, "default_workers", lambda: 1)
    assert mod.auto_cpu_method(50_000) == "cpu"          # one core: nothing to share
    monkeypatch.setattr(mod, "default_workers", lambda: 2)
    assert mod.auto_cpu_method(900) == "cpu"             # small graph: pool start-up dominates
    assert mod.auto_cpu_method(1500) == "cpu"            # cold pool: starting it costs more than it saves
    assert mod.auto_cpu_method(4000) == "cpu-mt"         # two cores pay from a few thousand nodes
    assert mod.auto_cpu_method(50_000) == "cpu-mt"
    monkeypatch.setattr(mod, "_pool", object())          # the pool is running (the window keeps it)
    monkeypatch.setattr(mod, "_pool_workers", 2)
    assert mod.auto_cpu_method(1500) == "cpu-mt"
    monkeypatch.setattr(mod, "default_workers", lambda: 16)
    monkeypatch.setattr(mod, "_pool", None)
    assert mod.auto_cpu_method(20_000) == "cpu-mt"
