"""benchmarks/imseg_session10_gala.py (issue 21, session 10: a GALA-style learned agglomeration)
computes what its pre-registered rule (benchmarks/results/imseg_q_session10.md) says: the learned
merge's rounds with the production cost as the score are the production merge, the per-edge sums are
exact, the tree arrays are walked as trees, the labels of the training examples are the humans'
majority disagreement, the superpixel bound is a bound, and the decision needs 7 of 8 permutations.
Synthetic scene, CPU, no BSDS data, no scikit-learn (the trees are built by hand)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from imseg_bench import load_benchmark
from test_imseg_session3_bench import _scene  # the synthetic scene with two "human" segmentations


@pytest.fixture(scope="module")
def G():
    return load_benchmark("imseg_session10_gala")


@pytest.fixture(scope="module")
def scene(G):
    img, gts = _scene(3)
    return G.prepare(("7", img, gts, None))


@pytest.mark.parametrize("c", [2.6, 3.0, 3.3])
def test_the_cost_as_score_is_the_production_merge(G, scene, c):
    from gpu_kernels.imseg import contours as C

    g = scene["graph"]
    ref, _, _ = C.merge_np(g, 0, C.coarseness_threshold(c), 1 / math.sqrt(scene["h"] * scene["w"]),
                           min_area=C.min_region_area(scene["S"]))
    got = G.merge(scene, G.cost_score, float(C.coarseness_threshold(c)))
    np.testing.assert_array_equal(C._resolve(got)[0], C._resolve(ref)[0])


def test_edge_sums_are_exact(G, scene):
    g = scene["graph"]
    np.testing.assert_array_equal(g["gh"].sum(1), g["el"])  # every boundary pixel pair in one bin
    assert g["hist"].reshape(g["R"], 3, G.NB).sum(2).tolist() == np.repeat(g["area"][:, None], 3, 1).tolist()
    # after merging, the merged state's sums are those of the superpixels it holds
    st, ea, eb, el, eg, gh = G.init_state(scene)
    X, cost = G.edge_features(st, ea, eb, el, eg, gh, 1 / math.sqrt(scene["h"] * scene["w"]),
                              float(st["area"].sum()), g["R"], g["R"])
    assert X.shape == (len(ea), G.NFEAT) and np.isfinite(X).all()
    assert ((X[:, 5:9] >= 0) & (X[:, 5:9] <= 1)).all() and (np.diff(X[:, 5:9], axis=1) <= 0).all()


def _stump(feature: int, thr: float, lo: float, hi: float, base: float = 0.0) -> dict:
    """One tree: x[feature] <= thr -> lo, else hi (the exported array form)."""
    return {"feat": np.array([[feature, 0, 0]], np.int32), "thr": np.array([[thr, 0, 0]]),
            "left": np.array([[1, 0, 0]], np.int32), "right": np.array([[2, 0, 0]], np.int32),
            "leaf": np.array([[False, True, True]]), "val": np.array([[0.0, lo, hi]]), "base": base}


def test_the_tree_walk(G):
    m = _stump(2, 0.5, 0.1, 0.9, base=0.05)
    X = np.array([[0, 0, 0.2], [0, 0, 0.5], [0, 0, 0.7], [0, 0, -3.0]], np.float32)
    want = np.float32([0.15, 0.15, 0.95, 0.15])
    np.testing.assert_array_equal(G.predict(m, X), want)
    np.testing.assert_array_equal(G.predict_fast(m, X), want)
    two = {k: (np.concatenate([v, v]) if isinstance(v, np.ndarray) else v) for k, v in m.items()}
    two["val"] = np.concatenate([m["val"], -m["val"]])  # the second tree cancels the first
    np.testing.assert_array_equal(G.predict_fast(two, X), np.float32([0.05] * 4))
    neg = _stump(0, 0.0, -1.0, -1.0)
    assert (G.predict(neg, X) == 0).all()  # clipped at 0


def test_a_score_on_the_colour_distance_merges_by_it(G, scene):
    """A stump on the colour distance: pairs under the split merge (p 0), the others never (p 1)."""
    from gpu_kernels.imseg import contours as C

    m = _stump(2, math.log(4.0), 0.0, 1.0)
    into = G.merge(scene, G.model_score(m), 0.5, cleanup=False)
    seg, n = C._resolve(into)
    assert 1 <= n < scene["graph"]["R"]
    # no adjacent pair of final regions has a colour distance² under 4 (it would have merged)
    g = scene["graph"]
    area = np.bincount(seg - 1, weights=g["area"])
    rsum = np.stack([np.bincount(seg - 1, weights=g["rsum"][:, k]) for k in range(3)], 1)
    a, b = seg[g["ea"]] - 1, seg[g["eb"]] - 1
    ok = a != b
    d2 = (((rsum[a[ok]] / area[a[ok], None]) - (rsum[b[ok]] / area[b[ok], None])) ** 2).sum(1) / 256
    assert (d2 >= 4.0 * (1 - 1e-4)).all()


def test_examples_label_the_humans_disagreement(G, scene):
    X, Y = G.examples(scene)
    assert X.shape[1] == G.NFEAT and len(X) == len(Y) <= G.PER_IMAGE
    assert ((Y >= 0) & (Y <= 1)).all() and 0 < Y.mean() < 1
    assert set(np.unique(Y * 2).tolist()) <= {0.0, 1.0, 2.0}  # two humans: 0, 1/2, 1


def test_the_superpixel_bound_is_a_bound(G, scene):
    import imseg_session7_quality as S7

    b = G.bound_row(scene)
    d = S7.run({**scene}, S7.DEFAULT)
    assert b[0] > d[0] and b[1] > d[1] and b[2] < d[2]
    # one human segmentation that is the superpixels themselves: the bound is perfect
    sp = {"graph": scene["graph"], "cont": [(np.arange(scene["graph"]["R"]), np.arange(scene["graph"]["R"]),
                                             scene["graph"]["area"].astype(float), scene["graph"]["R"])]}
    np.testing.assert_allclose(G.bound_row(sp), (1.0, 1.0, 0.0), atol=1e-12)


def test_margin_pick(G):
    d = np.array([[0.5, 0.8, 1.7, 27.0]] * 4)
    rows = np.stack([d + [0.01, 0.001, -0.05, 0], d + [0.02, -0.001, -0.1, 0], d + [0.03, 0.01, -0.3, -10],
                     d + [0.005, 0.002, -0.02, 0]], 1)
    # margins: 0 -> 0.001, 1 loses PRI, 2 has 17 segments, 3 -> 0.002
    assert G.margin_pick(rows, d) == 3
    rows[:, 3, 0] -= 0.01  # 3 now loses covering
    assert G.margin_pick(rows, d) == 0
    assert G.margin_pick(rows[:, 1:2], d) == -1


def _part(seeds, beats, with_all=True, pick=1):
    p = {"default_train": [0.5, 0.8, 1.7, 27.0], "taus": [0.3, 0.4],
         "perms": [{"seed": s, "picks": [0.3], "held": [0.51, 0.81, 1.6, 25.0] if b else [0.51, 0.79, 1.6, 25.0],
                    "beats": b} for s, b in zip(seeds, beats, strict=True)]}
    if with_all:
        p.update(all200_rows=[[0.5, 0.8, 1.7, 27.0]] * 2, all200_pick_index=pick, model_all200={})
    return p


def test_the_decision_needs_seven_of_eight(G):
    ok = G.combine([_part(range(1001, 1005), [True] * 4), _part(range(1005, 1009), [True, True, True, False], False)])
    assert ok["n_beat"] == 7 and ok["accepted"] and ok["all200_pick"] == 0.4
    no = G.combine([_part(range(1001, 1005), [True] * 4), _part(range(1005, 1009), [True, True, False, False], False)])
    assert no["n_beat"] == 6 and not no["accepted"]
    default = G.combine([_part(range(1001, 1009), [True] * 8, pick=-1)])
    assert not default["accepted"] and default["all200_pick"] is None
    half = G.combine([_part(range(1001, 1005), [True] * 4)])
    assert not half["accepted"]  # 4 permutations are not the rule's 8
