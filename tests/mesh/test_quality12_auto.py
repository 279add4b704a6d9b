"""The learned merge loop compiled, and its gaps closed (issue 22, session 12: gpu_kernels/mesh/_numba_merge.py,
learned.py, boundary.py):

- the compiled loop (hand-made, learned, blend; slivers, the learned stop, several components, the thickness
  term) makes the NumPy loop's merges with the same strengths bit for bit;
- both loops are one: the hand-made and the learned merges build the same state (``boundary._MergeState``);
- a cancel ends every merge loop (compiled and NumPy tables, the arc sums, the learned loop) within a block of
  rounds, and the k = "auto" / integer-k entry points pass it on;
- the learned loop's cost is bounded by the CLUSTERS: more than ``LEARNED_MAX_CLUSTERS`` in all are merged in runs
  of whole components (tables never larger than the cap), one component over it takes the hand-made merges;
- a convex mesh (no concave edge: c0 = 0) gives finite strengths, so its merges follow a score, not the pairs' index;
- GPU: the learned labels are the CPU's on several meshes and k, and at k = "auto" with the learned switch.
"""

from __future__ import annotations

import time
from pathlib import Path

import _quality_fixtures as fx  # noqa: E402
import numpy as np
import pytest
from test_lead11_convex import icosphere  # noqa: E402  (tests/mesh is on sys.path under pytest)

from app.io.mesh_io import read_mesh
from gpu_kernels.jobs import Cancelled, Progress
from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import defaults
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

ROOT = Path(__file__).resolve().parents[2]
# the fish, its fixture and the over-segmentation (one copy: tests/mesh/_quality_fixtures.py)
KW, _overseg, fish = fx.KW, fx.overseg, fx.fish


@pytest.fixture(scope="module")
def graph(fish):
    return sg.k_merge_graph(sg.prepare_mesh(*fish, **KW).graph)


def _two_components(graph, lab):
    """The labels split in two pseudo-components (by the label's parity), as the several-component rows are."""
    K = int(lab.max()) + 1
    lc = (np.arange(K) % 2).astype(np.int64)
    return lc


def _both(monkeypatch, fn):
    out = []
    for on in (True, False):
        monkeypatch.setattr(bd, "COMPILED_MERGE", on)
        st: list = []
        lab, mg = fn(st)
        out.append((np.asarray(lab), [tuple(map(int, x)) for x in mg], np.asarray(st, dtype=np.float64)))
    return out


CASES = [  # policy, target, min_area, stop_p, seed, two components
    ("learned", 4, 0.0, None, 0, False),
    ("learned", 6, 0.03, None, 1, False),
    ("learned", 2, 0.03, 0.5, 2, False),
    ("blend", 5, 0.02, None, 3, False),
    ("hand", 3, 0.03, None, 4, False),
    ("learned", 3, 0.02, None, 5, True),
    ("learned", 2, 0.02, 0.45, 6, True),
]


@pytest.mark.parametrize("policy,k,min_area,stop_p,seed,two", CASES)
def test_the_compiled_loop_is_the_numpy_loop(graph, monkeypatch, policy, k, min_area, stop_p, seed, two):
    lab = _overseg(graph, 36, seed)
    lc = _two_components(graph, lab) if two else np.zeros(int(lab.max()) + 1, dtype=np.int64)
    tg = {c: k for c in np.unique(lc).tolist()}
    model = ln.shipped_auto_model() if stop_p is not None else ln.shipped_model()
    (la, ma, sa), (lb, mb, sb) = _both(monkeypatch, lambda st: ln.learned_merge(
        graph, lab, tg, lc, min_area=min_area, policy=policy, model=model, strengths=st, stop_p=stop_p))
    np.testing.assert_array_equal(la, lb)
    assert ma == mb and len(ma) > 0
    np.testing.assert_array_equal(sa, sb)  # (the same floats, not close ones)


def test_the_hand_made_compiled_loop_is_its_numpy_loop_with_a_stop(graph, monkeypatch):
    lab = _overseg(graph, 40, 7)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    (la, ma, sa), (lb, mb, sb) = _both(monkeypatch, lambda st: bd.merge_weakest_boundaries(
        graph, lab, {0: 2}, lc, stop={0: 1.2}, strengths=st, min_area=0.02))
    np.testing.assert_array_equal(la, lb)
    assert ma == mb and len(ma) > 0
    np.testing.assert_array_equal(sa, sb)


def test_the_hand_made_and_the_learned_merges_share_one_state(graph, monkeypatch):
    """The duplicate of session 11 (the learned loop re-wrote the hand-made loop's tables): both now build
    ``boundary._MergeState``; the learned one adds its extra tables."""
    built = []
    orig = bd._MergeState.__init__

    def spy(self, *a, **kw):
        built.append(bool(kw.get("extra")))
        orig(self, *a, **kw)

    monkeypatch.setattr(bd._MergeState, "__init__", spy)
    lab = _overseg(graph, 20, 8)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    bd.merge_weakest_boundaries(graph, lab, {0: 4}, lc)
    ln.learned_merge(graph, lab, {0: 4}, lc, model=ln.shipped_model())
    assert built == [False, True]


class _CancelAfter(Progress):
    """A progress whose cancel flag goes up at its ``n``-th check."""

    def __init__(self, n):
        super().__init__()
        self.n, self.checks = n, 0

    def check(self):
        self.checks += 1
        if self.checks >= self.n:
            self.cancel()
        super().check()


@pytest.mark.parametrize("loop", ["compiled", "numpy", "arcs", "learned", "learned-numpy"])
def test_a_cancel_ends_the_merge_loops(graph, monkeypatch, loop):
    """Every merge loop checks the cancel flag (every boundary.CANCEL_ROUNDS rounds, and between the compiled
    loop's blocks of rounds): cancelled at its second check, it raises before it has merged down to its target."""
    monkeypatch.setattr(bd, "CANCEL_ROUNDS", 4)
    monkeypatch.setattr(bd, "COMPILED_MERGE", loop in ("compiled", "learned"))
    if loop == "arcs":
        monkeypatch.setattr(bd, "DENSE_MERGE_MAX", 8)
    lab = _overseg(graph, 40, 9)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    prog = _CancelAfter(2)
    merges: list = []
    with pytest.raises(Cancelled):
        if loop.startswith("learned"):
            ln.learned_merge(graph, lab, {0: 2}, lc, model=ln.shipped_model(), strengths=merges, progress=prog)
        else:
            bd.merge_weakest_boundaries(graph, lab, {0: 2}, lc, strengths=merges, progress=prog)
    assert prog.checks == 2 and len(merges) < int(lab.max()) + 1 - 2


def test_k_merge_and_auto_merge_pass_the_cancel_on(graph):
    lab = _overseg(graph, 30, 10)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    for fn in (lambda p: ln.k_merge(graph, lab, {0: 3}, lc, progress=p),
               lambda p: ln.auto_merge(graph, lab, {0: 2}, lc, {0}, progress=p),
               lambda p: bd.merge_weakest_boundaries(graph, lab, {0: 3}, lc, progress=p)):
        prog = Progress()
        prog.cancel()
        with pytest.raises(Cancelled):
            fn(prog)


def _spheres(n, sub=2):
    """``n`` disjoint icospheres in a row (``n`` mesh components)."""
    v0, f0 = icosphere(sub)
    vs, fs = [], []
    for i in range(n):
        vs.append(v0 + np.array([3.0 * i, 0.0, 0.0]))
        fs.append(f0 + i * v0.shape[0])
    return np.concatenate(vs), np.concatenate(fs)


def test_the_learned_loop_is_bounded_by_the_clusters_not_the_components(monkeypatch):
    """Many components: the tables never hold more than LEARNED_MAX_CLUSTERS clusters (one K x K loop over all
    of them took minutes at 120 components, reviewer session 11); every component reaches its target."""
    v, f = _spheres(12)
    g = sg.prepare_mesh(v, f, **KW).graph
    comp = np.asarray(g.component)
    per = 24
    lab = np.zeros(g.n, dtype=np.int64)
    for c in range(12):
        faces = np.flatnonzero(comp == c)
        rng = np.random.default_rng(c)
        seeds = faces[rng.choice(faces.size, per, replace=False)]
        d = ((g.centroids[faces, None, :] - g.centroids[seeds][None]) ** 2).sum(axis=2)
        lab[faces] = c * per + np.argmin(d, axis=1)
    lab, _ = bd.merge_islands(g, lab.astype(np.int32))
    lab = np.asarray(lab, dtype=np.int64)
    lc = np.repeat(np.arange(12), per)
    assert lc.size == 288 > defaults.LEARNED_MAX_CLUSTERS
    sizes = []
    orig = bd._MergeState.__init__

    def spy(self, *a, **kw):
        orig(self, *a, **kw)
        sizes.append(self.K)

    monkeypatch.setattr(bd._MergeState, "__init__", spy)
    t = time.perf_counter()
    out, merges = ln.learned_merge(g, lab, {c: 3 for c in range(12)}, lc, model=ln.shipped_model())
    assert time.perf_counter() - t < 60
    assert sizes and max(sizes) <= defaults.LEARNED_MAX_CLUSTERS and sum(sizes) == 288
    for c in range(12):
        assert np.unique(out[comp == c]).size == 3
        assert np.isin(np.unique(out[comp == c]), np.flatnonzero(lc == c)).all()
    # one run where they fit: the same merges as one loop over all
    monkeypatch.setattr(defaults, "LEARNED_MAX_CLUSTERS", 1000)
    sizes.clear()
    one, merges_one = ln.learned_merge(g, lab, {c: 3 for c in range(12)}, lc, model=ln.shipped_model())
    assert sizes == [288] and len(merges_one) == len(merges)


def test_an_integer_k_over_the_cluster_cap_takes_the_hand_made_merges(graph, monkeypatch):
    lab = _overseg(graph, 30, 11)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    learned, _ = ln.k_merge(graph, lab, {0: 4}, lc)
    hand, _ = bd.merge_weakest_boundaries(graph, lab, {0: 4}, lc)
    assert not np.array_equal(learned, hand)
    monkeypatch.setattr(defaults, "LEARNED_MAX_CLUSTERS", int(lab.max()))  # one cluster fewer than there are
    np.testing.assert_array_equal(ln.k_merge(graph, lab, {0: 4}, lc)[0], hand)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_convex_mesh_merges_by_finite_strengths(monkeypatch, compiled):
    """No concave edge (c0 = 0): the contrast was 0 / 0 = NaN for every pair, and both loops merged in the pairs'
    index order (reviewer, session 11); with the floor on c0 every strength is finite."""
    monkeypatch.setattr(bd, "COMPILED_MERGE", compiled)
    v, f = icosphere(3)
    g = sg.prepare_mesh(v, f, **KW).graph
    lab = _overseg(g, 16, 12)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    st: list = []
    bd.merge_weakest_boundaries(g, lab, {0: 3}, lc, strengths=st)
    assert len(st) == int(lab.max()) + 1 - 3 and np.isfinite(st).all()
    st = []
    ln.learned_merge(g, lab, {0: 3}, lc, model=ln.shipped_model(), strengths=st)
    assert np.isfinite(st).all()
    if not compiled:  # the learned features are finite too (the model sees a score)
        seen = []
        orig = ln.TreeModel.predict
        monkeypatch.setattr(ln.TreeModel, "predict", lambda self, X: seen.append(X) or orig(self, X))
        ln.learned_merge(g, lab, {0: 3}, lc, model=ln.shipped_model())
        assert seen and all(np.isfinite(X).all() for X in seen)


def test_the_numpy_log_is_the_c_librarys():
    """Both loops take the C library's log (NumPy's may be a SIMD kernel with another last bit)."""
    import math

    x = np.random.default_rng(13).random(2000) * 10.0 ** np.random.default_rng(14).integers(-12, 12, 2000)
    assert np.array_equal(ln._log(x), [math.log(t) for t in x])
    assert np.isnan(ln._log(np.array([np.nan]))[0]) and ln._log(np.array([0.0]))[0] == -np.inf


SAMPLES = ("dumbbell", "creature", "table")


def _mesh(name):
    return read_mesh(ROOT / "resources" / "samples" / f"{name}.ply")


@pytest.mark.gpu
@pytest.mark.parametrize("name", SAMPLES + ("fish",))
def test_the_learned_labels_are_the_cpus_on_the_gpu(name, fish, monkeypatch):
    """The learned merges on the GPU pipeline: the CPU's labels, several meshes x several k (the integer k's
    learned merges, the default) and k = "auto" with ``DEFAULT_AUTO_MERGE = "learned"``."""
    pytest.importorskip("cupy")
    v, f = fish if name == "fish" else _mesh(name)
    monkeypatch.setattr(defaults, "DEFAULT_K_MERGE", "learned")
    calls = []
    orig = ln.learned_merge
    monkeypatch.setattr(ln, "learned_merge", lambda *a, **kw: calls.append(1) or orig(*a, **kw))
    for k in (3, 8, 12, "auto"):
        monkeypatch.setattr(defaults, "DEFAULT_AUTO_MERGE", "learned" if k == "auto" else "hand")
        n0 = len(calls)
        cpu = sg.segment_mesh(v, f, k=k, **KW)
        gpu = sg.segment_mesh(v, f, k=k, device="cuda")
        assert len(calls) > n0, (name, k)  # (the learned loop ran)
        np.testing.assert_array_equal(cpu.labels, gpu.labels, err_msg=f"{name} k={k}")
