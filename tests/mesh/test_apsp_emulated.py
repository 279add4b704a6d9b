"""The GPU APSP methods (``fw_dense.cu``, ``fw_sym.cu`` and their host code in
gpu_kernels.graph.apsp) run on the CPU through the test suite's CUDA emulator (tests/cuda_emu),
against SciPy's Dijkstra (the ``cpu`` method). This checks the blocked Floyd-Warshall's three
stages, its shared-memory tiles, the fixed-point path, the z-ordered packed layout and the
unpacking in CI, where there is no GPU; tests/mesh/test_apsp.py runs them on a real GPU."""

import cuda_emu
import numpy as np
import pytest

from gpu_kernels.graph import apsp

if cuda_emu.available():
    pytest.skip(cuda_emu.available(), allow_module_level=True)

BE = cuda_emu.emu_backend()


@pytest.fixture(autouse=True)
def _unpack_on_the_emulator(monkeypatch):
    # PackedDistances.to_dense asks for the real CuPy by name; the emulator's stands in
    monkeypatch.setattr(apsp, "_cupy", lambda: cuda_emu.xp)


def _graph(n, m, seed, directed=False):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    w = rng.random(m) * 3 + 0.1
    # a few nodes with no edge: +inf rows and columns
    keep = (s < n - 3) & (d < n - 3)
    return s[keep], d[keep], w[keep]


def _check(D, ref):
    D = np.asarray(D)
    assert D.shape == ref.shape and D.dtype == np.float32
    fin = np.isfinite(ref)
    assert fin.sum() > 0.3 * ref.size and (~fin).any()       # the graph has both
    np.testing.assert_array_equal(np.isfinite(D), fin)
    np.testing.assert_allclose(D[fin], ref[fin], rtol=2e-6, atol=2e-6)


CASES = [
    ("gpu", "float32", 32, True),
    ("gpu", "int32", 64, False),
    ("gpu-sym", "int32", 32, False),
    ("gpu-sym", "float32", 64, False),
]
SLOW_CASES = [
    pytest.param(m, dt, t, dr, marks=pytest.mark.slow)
    for m, dt, t, dr in [("gpu", "int32-nodpx", 32, False), ("gpu", "float32", 64, False),
                         ("gpu-sym", "int32-nodpx", 64, False), ("gpu-sym", "float32", 32, False),
                         ("gpu", "int32", 32, True)]
]


@pytest.mark.parametrize("method,dtype,tile,directed", CASES + SLOW_CASES)
def test_emulated_floyd_warshall_equals_dijkstra(method, dtype, tile, directed):
    n = 75                                  # not a multiple of the tile: padding, 2-3 tile rounds
    s, d, w = _graph(n, 220, seed=tile + len(dtype), directed=directed)
    ref = apsp.all_pairs_shortest_paths(n, s, d, w, directed=directed, method="cpu")
    D = apsp.all_pairs_shortest_paths(n, s, d, w, directed=directed, method=method, device=BE, tile=tile,
                                      dtype=dtype)
    _check(D, ref)


@pytest.mark.parametrize("reorder", [False, True])
def test_emulated_packed_tiles(reorder):
    """gpu-sym's packed lower tiles (z-order, FW order), read back on the host, give the same
    distances; with and without the Cuthill-McKee reordering (fw_sym_unpack and _unpack_perm)."""
    n = 70
    s, d, w = _graph(n, 200, seed=5)
    ref = apsp.all_pairs_shortest_paths(n, s, d, w, method="cpu")
    P = apsp.all_pairs_shortest_paths(n, s, d, w, method="gpu-sym", device=BE, tile=32, out="packed",
                                      reorder=reorder, dtype="float32")
    data = np.asarray(P.data)
    B = P.tile
    full = np.full((P.tile_index.shape[0] * B,) * 2, np.nan, np.float32)
    for z, (r, c) in enumerate(P.tiles):
        blk = data[z * B * B:(z + 1) * B * B].reshape(B, B)
        full[r * B:(r + 1) * B, c * B:(c + 1) * B] = blk
        full[c * B:(c + 1) * B, r * B:(r + 1) * B] = blk.T
    fw = full[:n, :n]
    perm = np.asarray(P.perm)
    host = np.empty_like(fw)
    host[np.ix_(perm, perm)] = fw                            # FW node i is the caller's perm[i]
    _check(host, ref)
    _check(P.to_dense(), ref)


def test_a_broken_stage_is_caught(monkeypatch):
    """The comparison can fail: with stage 3 (the bulk of the min-plus updates) skipped, the
    emulated result is no longer the shortest paths."""
    real = apsp.kernel

    def kernel(be, source, name, *a, **k):
        fn = real(be, source, name, *a, **k)
        return (lambda *args, **kw: None) if name.endswith("stage3") else fn

    monkeypatch.setattr(apsp, "kernel", kernel)
    n = 75
    s, d, w = _graph(n, 220, seed=1)
    ref = apsp.all_pairs_shortest_paths(n, s, d, w, method="cpu")
    D = apsp.all_pairs_shortest_paths(n, s, d, w, method="gpu", device=BE, tile=32, dtype="float32")
    with pytest.raises(AssertionError):
        _check(D, ref)
