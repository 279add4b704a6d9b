"""A learned merge score for an integer k's merges (issue 22, session 11; GALA-style, Nunez-Iglesias
et al. 2013, across categories).

The pipeline over-segments and merges adjacent clusters down to k, the weakest boundary first
(:func:`gpu_kernels.mesh.boundary.merge_weakest_boundaries`, the hand-made "contrast" strength). Here the
same greedy loop ranks the adjacent pairs by a small model's prediction of "these two clusters belong to
different human segments" instead (``policy="learned"``), or by the mean of the two ranks, the hand-made
strength's and the model's (``policy="blend"``). Slivers (``min_area``) still merge first, as in the
hand-made loop.

The model is boosted regression trees (depth <= 4, <= 64 trees) held as arrays (:class:`TreeModel`),
evaluated in NumPy; it is trained elsewhere (``benchmarks/mesh_session11_learned.py``, scikit-learn's
``HistGradientBoostingRegressor``).
:func:`learned_merge` with ``policy="hand"`` merges exactly as the hand-made loop (a test checks it) and
can record every round's candidate pairs' features (:data:`FEATURES`) for training.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass

import numpy as np

from gpu_kernels.mesh import boundary as _bd

__all__ = ["FEATURES", "TreeModel", "learned_merge", "pair_targets", "k_merge", "shipped_model", "MODEL", "auto_merge",
           "shipped_auto_model", "MODEL_AUTO", "AUTO_STOP_P", "AUTO_POLICY", "GAIN_POWER",
           "GAIN_BETA"]

#: the model :func:`k_merge` uses; None: the shipped one (:func:`shipped_model`). Benchmarks set a fold's model here
MODEL = None
#: the model :func:`auto_merge` uses; None: the shipped one (:func:`shipped_auto_model`)
MODEL_AUTO = None
#: k = "auto" with the learned score (:func:`auto_merge`): a component stops merging once every candidate pair of it
#: is predicted at least this likely to lie in different human segments: the Rand Index's break-even (merging A and B
#: lowers its error where a face pair of A x B more often shares a human segment than not); not tuned
AUTO_STOP_P = 0.5
#: the policy :func:`k_merge` uses: "gain" (session 13: the expected change of the Rand Index error; passed its
#: pre-registered round and the real-pipeline confirmation, held out 0.1334 -> 0.1228 against "learned" with the same
#: model, benchmarks/results/mesh_q_session13.md); "learned" (session 11's order: the lowest predicted p); "blend"
POLICY = "gain"
#: the "gain" order's area weight is ``(share_small x share_large) ** GAIN_POWER`` (session 19, helper mesh-q13):
#: 0.5 since session 19; below 1 the order leans toward "lowest p first" (0: "learned"'s order, up to its ties); 1.0 is
#: session 13's expected change of the Rand Index error (exactly its floats: the power is not taken at 1.0). 0.5
#: passed its pre-registered round against 1.0 (leave one category out, real pipeline, 16 new draws s1900-1915, H100):
#: meshes over 0.30 55 -> 51 (fewer on 7 draws, more on 3), protocol 0.1220 -> 0.1216; 0.75 failed it (53; mean
#: 0.1205); benchmarks/results/mesh_q13_session19.md. Read at each call of :func:`learned_merge` and passed to the
#: compiled loop as an argument (numba freezes globals when it compiles)
GAIN_POWER = 0.5
#: the "gain" order's caution (session 30): its gain is ``(2 p - 1 + GAIN_BETA) x weight``, so a pair whose p is near
#: 0.5 weighs against merging by its weight: the larger the two clusters, the stronger the evidence "same part" has to
#: be before they merge. A model that has not seen a shape gives its largest pairs p near 0.5 (session 29: bearing
#: 343's two largest parts at p 0.48 under one fold model, merged, and 0.51 under another, kept), where the plain
#: gain leaves the largest stake to noise. 0.0 is session 19's order exactly (the term is not added). 0.06 since
#: session 30: round beta30 (leave one category out, the real pipeline, 8 new draws s2376-s2383, H200; the mean of five
#: trainings of the shipped recipe, each pair on the same fold models) 0.1091 -> 0.1072, lower on 8 of 8 draws and in
#: 5 of 5 trainings (one by 1.5e-5); the trainings' spread 0.0035 -> 0.0017; meshes over 0.30 (of the means) 13 -> 13,
#: per training 61 -> 69 in all (303 and 381 slightly worse); most of the
#: gain is the bearing fold's (-0.031; without it -0.0003). In-sample (the shipped model, session 29's CPU pilot)
#: 0.1040 -> 0.1038. benchmarks/results/lead_session30_beta30.md. Read at each call of :func:`learned_merge` and passed
#: to the compiled loop as an argument
GAIN_BETA = 0.06
#: the policy :func:`auto_merge` uses (k = "auto"): "learned" (session 11: the lowest predicted p first); "gain" (the
#: expected change of the Rand Index error, as :data:`POLICY`) is judged for k = "auto" by session 13's helper mesh-q2
#: (benchmarks/results/mesh_q2_session13.md). The stop is the same under both: a component stops once none of its
#: candidate pairs is predicted under :data:`AUTO_STOP_P` (where one is, the lowest gain is negative, so "gain" too
#: merges a pair of p < AUTO_STOP_P); the order changes which clusters later pairs join, hence their predictions
AUTO_POLICY = "learned"
#: the policies of :func:`learned_merge`, by their codes in the compiled loop (:mod:`gpu_kernels.mesh._numba_merge`)
POLICIES = {"hand": 0, "learned": 1, "blend": 2, "gain": 3}


#: the per-pair features, in the model's column order
FEATURES = (
    "log_hand_strength",      # log of the hand-made contrast strength (thickness contrast included)
    "hand_rank",              # its rank among this round's candidates, 0 = weakest, scaled to [0, 1]
    "log_hand_over_min",      # log(strength / the round's weakest strength)
    "bnd_conc",               # mean concavity along the shared boundary / the mesh's mean concavity c0
    "inner_conc",             # mean concavity inside the union / c0
    "bnd_conc_std",           # the concavity's spread along the boundary / c0
    "bnd_concave_frac",       # share of the boundary's length on concave arcs
    "bnd_conc_hi_frac",       # share of the boundary's length with concavity above 2 c0
    "len_over_perim_small",   # boundary length / the smaller cluster's perimeter
    "len_over_perim_large",   # boundary length / the larger cluster's perimeter
    "share_small",            # the smaller cluster's share of the component's area
    "share_large",            # the larger cluster's share
    "log_area_ratio",         # log(area small / area large)
    "dlog_thickness",         # |mean log thickness A - B| (the merge graph's thickness)
    "rel_thickness_small",    # mean log thickness of the smaller - the component's
    "normal_angle",           # 1 - cos of the angle between the two clusters' mean normals
    "normal_spread_union",    # 1 - |area-weighted mean normal| of the union
    "normal_spread_small",    # the same for the smaller cluster
    "count_over_target",      # clusters now in the component / its target
    "count_over_start",       # clusters now / clusters at the start of the merges
    "thickness_small_minus_large",  # mean log thickness of the smaller cluster - the larger's (signed: a thin
                                    # part off a thick one < 0; the union's thickness against its parts)
)
#: the columns of the two areas' shares in :data:`FEATURES` (the ``"gain"`` policy's weights; the compiled loop
#: :mod:`gpu_kernels.mesh._numba_merge` reads them from here)
SHARE_COLS = (FEATURES.index("share_small"), FEATURES.index("share_large"))


#: session 24 (on since session 25: the shipped integer-k model reads it; k = "auto"'s does not): one more feature after
#: :data:`FEATURES`, ``"hull_depth_union"``: how deep the pair's union lies under its exact convex hull (the deepest
#: of the two clusters' kept face centroids under the hull of them all) over the square root of the component's
#: area. A body cut across into a front and a back keeps a shallow union; a leg joined to its body makes a deep one.
#: CPU pilot (all 76 shared meshes, the default result at 42 clusters, every adjacent pair labelled by each human,
#: leave one category out, 64 trees of depth 4): the per-mesh AUC of "same human part" from six of the features' kind
#: 0.759, with the exact hull's depth 0.795 (bust 303 0.754 -> 0.817, fourleg 381 0.774 -> 0.811). Round hull24c
#: passed it held out (0.1157 -> 0.1100). The depth is cached per pair and recomputed only for a merged cluster's
#: pairs: the compiled loop stops before a round that lacks some and :meth:`_Hull.fill` fills them outside, by the
#: compiled hull (:func:`gpu_kernels.mesh._numba_merge.hull_depth`: Qhull's depths to rounding at a quarter of its
#: time), Qhull where it cannot say, and the k-DOP of :data:`HULL_DIRS` (the supports of every face) where the union
#: has no full-dimensional hull (a flat pair). Read at each call of :func:`learned_merge`.
#:
#: Three variants failed their held-out rounds and their code is gone (session 26; last at commit 05cac22): the
#: k-DOP's depth instead of the exact hull's (round hull24: it over-states thin, slanted parts' depth), its excess
#: over the deeper cluster's own depth as a 23rd column (hull24b) and the union hull's volume that neither cluster's
#: own hull fills, ``1 - (V_a + V_b) / V_union`` (vol25). See benchmarks/RESULTS.md.
HULL_FEATURE = True
#: the face centroids a cluster keeps for the depth (evenly spaced in face order; a merge keeps this many of the
#: two lists joined, :func:`_hull_keep`); its supports take every face. Session 26's CPU pilot (as above, the
#: kept centroids' count alone changed): 32 / 48 / 64 / all scored AUC 0.8029 / 0.8037 / 0.8020 / 0.7974, noise
HULL_POINTS = 64
HULL_FEATURE_NAME = "hull_depth_union"


def _hull_dirs() -> np.ndarray:
    d = np.array([(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, -1, 0), (1, 0, 1), (1, 0, -1), (0, 1, 1), (0, 1, -1),
                  (1, 1, 1), (1, 1, -1), (1, -1, 1), (-1, 1, 1)], dtype=np.float64)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return np.ascontiguousarray(np.concatenate([d, -d]))


#: the k-DOP's 26 directions (the cube's faces, edges and corners)
HULL_DIRS = _hull_dirs()


def _hull_proj(pts: np.ndarray) -> np.ndarray:
    """(n, 26) each point along each of :data:`HULL_DIRS`: ``(x0 d0 + x1 d1) + x2 d2`` (the compiled loop's order)."""
    D = HULL_DIRS
    return (pts[:, 0:1] * D[:, 0] + pts[:, 1:2] * D[:, 1]) + pts[:, 2:3] * D[:, 2]


def _kdop_depth(S: np.ndarray, P: np.ndarray) -> float:
    """The deepest of the points ``P`` under the planes of the supports ``S`` along :data:`HULL_DIRS`."""
    return float((S - _hull_proj(P)).min(axis=1).max())


def _hull_keep(n: int, m: int) -> np.ndarray:
    """The kept rows of a list of ``n`` points: all up to ``m``, else ``m`` evenly spaced, ``(i n) // m``."""
    return np.arange(n, dtype=np.int64) if n <= m else (np.arange(m, dtype=np.int64) * n) // m


class _Hull:
    """Per cluster of a merge state: its supports along :data:`HULL_DIRS` (``sup``, (K, 26): the k-DOP of a flat
    pair) and up to ``m`` kept face centroids (``pts`` (K, m, 3), ``cnt``); :meth:`depth` the candidate pairs' union
    depths under their exact hull, cached per pair until one of the two merges; :meth:`fill` the compiled loop's;
    :meth:`merge` the update (the compiled loop does the same in place on the same arrays)."""

    def __init__(self, lab0: np.ndarray, centroids, K: int, m: int):
        c = np.asarray(centroids, dtype=np.float64)
        self._cache: dict = {}
        nd = HULL_DIRS.shape[0]
        self.m = int(m)
        self.sup = np.full((K, nd), -np.inf)
        self.pts = np.zeros((K, self.m, 3))
        self.cnt = np.zeros(K, dtype=np.int64)
        order = np.argsort(lab0, kind="stable")
        bounds = np.searchsorted(lab0[order], np.arange(K + 1))
        for k in range(K):
            faces = order[bounds[k]:bounds[k + 1]]  # (ascending: a stable sort)
            if faces.size == 0:
                continue
            self.sup[k] = _hull_proj(c[faces]).max(axis=0)
            keep = faces[_hull_keep(faces.size, self.m)]
            self.pts[k, :keep.size] = c[keep]
            self.cnt[k] = keep.size

    def depth(self, ulo, uhi) -> np.ndarray:
        """The pairs' union depths (unscaled), cached per pair until one of the two merges."""
        out = np.empty(len(ulo))
        for t, (p, q) in enumerate(zip(ulo, uhi, strict=True)):
            p, q = int(p), int(q)
            hit = self._cache.get((p, q))
            if hit is None:
                hit = self._cache[(p, q)] = self.pair_depth(p, q)
            out[t] = hit
        return out

    def pair_depth(self, p: int, q: int) -> float:
        """One pair's union depth, uncached: the kept points of ``p`` then ``q`` under their exact hull, or the
        k-DOP's depth of the two clusters' supports where there is no full-dimensional hull."""
        P = np.concatenate([self.pts[p, :self.cnt[p]], self.pts[q, :self.cnt[q]]])
        d = _exact_depth(P)
        return _kdop_depth(np.maximum(self.sup[p], self.sup[q]), P) if d is None else d

    def fill(self, table: np.ndarray, need: np.ndarray) -> None:
        """The compiled loop's exact depths: ``table[p, q]`` for each row ``(p, q)`` of ``need`` (the pairs the loop
        stopped for: NaN in its (K, K) table, which a merge sets back to NaN for the two clusters' rows and
        columns, as :meth:`merge` drops their cached pairs): the compiled hull's in one call
        (:func:`gpu_kernels.mesh._numba_merge.fill_exact`), then :meth:`pair_depth` for those it left NaN."""
        nm = _bd.compiled_merge()
        if nm is not None and nm.fill_exact(self.pts, self.cnt, np.ascontiguousarray(need), table) == 0:
            return
        for p, q in need:
            p, q = int(p), int(q)
            if table[p, q] != table[p, q]:
                table[p, q] = self.pair_depth(p, q)

    def columns(self, ulo, uhi, ca) -> np.ndarray:
        """The feature column: the union depth over ``sqrt(ca)``, (n, 1)."""
        return (self.depth(ulo, uhi) / np.sqrt(ca))[:, None]

    def merge(self, keep: int, gone: int) -> None:
        if self._cache:
            self._cache = {k: v for k, v in self._cache.items() if keep not in k and gone not in k}
        self.sup[keep] = np.maximum(self.sup[keep], self.sup[gone])
        P = np.concatenate([self.pts[keep, :self.cnt[keep]], self.pts[gone, :self.cnt[gone]]])
        idx = _hull_keep(P.shape[0], self.m)
        self.pts[keep, :idx.size] = P[idx]
        self.cnt[keep] = idx.size
        self.cnt[gone] = 0


def _exact_depth(P: np.ndarray) -> float | None:
    """The deepest of the points ``P`` under their convex hull (its distance to the hull), or None where there is no
    full-dimensional hull (flat or too few points). The compiled incremental hull's
    (:func:`gpu_kernels.mesh._numba_merge.hull_depth`, session 25: ~0.1 ms a pair where Qhull took ~0.3) where numba
    imports and it can say; else Qhull's facets' planes (round hull24c's values: the two agree to ~1e-15 of the
    extent, so the model trained on Qhull's reads the same)."""
    from scipy.spatial import ConvexHull, QhullError

    if P.shape[0] < 5:
        return None
    nm = _bd.compiled_merge()
    if nm is not None:
        d = nm.hull_depth(np.ascontiguousarray(P, dtype=np.float64))
        if d == d:
            return float(d)
    try:
        eq = ConvexHull(P).equations
    except (QhullError, ValueError):
        return None
    return float((-(P @ eq[:, :3].T + eq[:, 3])).min(axis=1).max())


class FeatureColumnsError(RuntimeError):
    """:mod:`gpu_kernels.mesh._numba_merge` fills :data:`FEATURES`' columns by number and no longer matches them
    (raised at its import; the optional-module loader lets it through, unlike a missing numba)."""


@dataclass
class TreeModel:
    """Boosted regression trees as arrays: ``feature`` (T, N) int (-1 at a leaf), ``threshold`` (T, N),
    ``left`` / ``right`` (T, N) int child indices, ``value`` (T, N) the leaf values; the prediction is
    ``init + rate * sum of the trees' leaf values`` (a sample goes left where ``x <= threshold``)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    init: float
    rate: float
    depth: int

    @classmethod
    def from_npz(cls, path) -> TreeModel:
        z = np.load(path)
        return cls(z["feature"].astype(np.int64), z["threshold"].astype(np.float64), z["left"].astype(np.int64),
                   z["right"].astype(np.int64), z["value"].astype(np.float64), float(z["init"]), float(z["rate"]),
                   int(z["depth"]))

    def save(self, path) -> None:
        np.savez_compressed(path, feature=self.feature.astype(np.int16), threshold=self.threshold,
                            left=self.left.astype(np.int16), right=self.right.astype(np.int16),
                            value=self.value, init=np.float64(self.init),
                            rate=np.float64(self.rate), depth=np.int64(self.depth))

    @classmethod
    def from_sklearn(cls, hgb) -> TreeModel:
        """From a fitted ``sklearn.ensemble.HistGradientBoostingRegressor`` (squared error, no missing values;
        its leaf values carry the learning rate already)."""
        preds = [p[0].nodes for p in hgb._predictors]
        n = max(len(t) for t in preds)
        T = len(preds)
        feat = np.full((T, n), -1, dtype=np.int64)
        thr = np.zeros((T, n))
        left = np.zeros((T, n), dtype=np.int64)
        right = np.zeros((T, n), dtype=np.int64)
        val = np.zeros((T, n))
        for i, t in enumerate(preds):
            m = len(t)
            leaf = t["is_leaf"].astype(bool)
            feat[i, :m] = np.where(leaf, -1, t["feature_idx"])
            thr[i, :m] = np.where(leaf, 0.0, t["num_threshold"])
            left[i, :m] = np.where(leaf, np.arange(m), t["left"])
            right[i, :m] = np.where(leaf, np.arange(m), t["right"])
            val[i, :m] = np.where(leaf, t["value"], 0.0)
        init = float(np.asarray(hgb._baseline_prediction).ravel()[0])
        depth = int(max(int(t["depth"].max()) for t in preds)) if preds else 0
        return cls(feat, thr, left, right, val, init, 1.0, depth)

    def predict(self, X) -> np.ndarray:
        """(n,) the predictions: compiled (numba, :func:`_compiled_predict`) where it imports, else NumPy; both
        add the trees in order, so they give the same floats."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        fn = _compiled_predict()
        if fn is not None:
            return fn(X, self.feature, self.threshold, self.left, self.right, self.value, float(self.init),
                      float(self.rate), int(self.depth))
        return self.predict_numpy(X)

    def predict_numpy(self, X) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=np.float64)
        n, dim = X.shape
        T, N = self.feature.shape
        flat = (np.arange(T) * N)[None, :]
        feat, thr = self.feature.ravel(), self.threshold.ravel()
        left, right, val = self.left.ravel(), self.right.ravel(), self.value.ravel()
        Xf = X.ravel()
        row = (np.arange(n) * dim)[:, None]
        node = np.zeros((n, T), dtype=np.int64)
        for _ in range(self.depth):
            g = flat + node
            f = feat[g]
            x = Xf[row + np.maximum(f, 0)]
            go = np.where(x <= thr[g], left[g], right[g])
            node = np.where(f >= 0, go, node)
        leaf = val[flat + node]
        acc = np.zeros(n)
        for t in range(T):  # (in order, as the compiled loop adds them)
            acc += leaf[:, t]
        return self.init + self.rate * acc


_PREDICT: list = []


def _compiled_predict():
    """The trees' prediction as a numba loop (None where numba does not import, or where
    :data:`gpu_kernels.mesh.boundary.COMPILED` is off)."""
    if not _bd.COMPILED:
        return None
    if not _PREDICT:
        try:
            from numba import njit
        except Exception:  # noqa: BLE001 - numba absent or broken: NumPy
            _PREDICT.append(None)
            return None

        @njit(cache=True, nogil=True)
        def predict(X, feature, threshold, left, right, value, init, rate, depth):  # pragma: no cover - compiled
            n = X.shape[0]
            T = feature.shape[0]
            out = np.empty(n)
            for i in range(n):
                acc = 0.0
                for t in range(T):
                    node = 0
                    for _ in range(depth):
                        f = feature[t, node]
                        if f < 0:
                            break
                        if X[i, f] <= threshold[t, node]:
                            node = left[t, node]
                        else:
                            node = right[t, node]
                    acc += value[t, node]
                out[i] = init + rate * acc
            return out

        _PREDICT.append(predict)
    return _PREDICT[0]


#: the shipped models by name ("k", "auto"), each decoded once; the lock makes a first use from two threads at once
#: (two segment calls in one process: ``gpulab batch`` with a multi-thread dask worker) decode it once, never hand
#: one of them the other's model (session 18's review: the list this replaced could)
_SHIPPED: dict = {}
_SHIPPED_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """A forked child gets a fresh lock: another thread of the parent may have held it, mid-decode, at the fork."""
    global _SHIPPED_LOCK
    _SHIPPED_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _shipped(name: str, attr: str) -> TreeModel:
    model = _SHIPPED.get(name)
    if model is None:
        with _SHIPPED_LOCK:
            model = _SHIPPED.get(name)
            if model is None:
                import base64
                import io

                from gpu_kernels.mesh import learned_model

                model = TreeModel.from_npz(io.BytesIO(base64.b64decode(getattr(learned_model, attr))))
                _SHIPPED[name] = model
    return model


def shipped_model() -> TreeModel:
    """The integer k's model, trained on all 19 PSB categories (session 25's: 22 columns, the last the exact hull's
    union depth; :mod:`gpu_kernels.mesh.learned_model`), loaded once."""
    return _shipped("k", "NPZ_BASE64")


def shipped_auto_model() -> TreeModel:
    """The k = "auto" model trained on all 19 PSB categories (session 11, round 2), loaded once."""
    return _shipped("auto", "NPZ_AUTO_BASE64")


def auto_merge(graph, labels, targets: dict, label_component, auto_components, *, min_area: float = 0.0,
               min_share: float = 0.0, progress=None):
    """k = "auto"'s merges by the learned score (``defaults.DEFAULT_AUTO_MERGE = "learned"``): in the order of
    :data:`AUTO_POLICY` by the model (:data:`MODEL_AUTO`, None: :func:`shipped_auto_model`), each component
    stopping at :data:`AUTO_STOP_P`, slivers
    (``min_area``) first; then the parts under ``min_share`` of their component join a neighbour
    (:func:`gpu_kernels.mesh.segment.absorb_small_parts`, as the hand-made rule does). Returns ``(labels, merges,
    strengths)`` as ``segment._merge_to_targets``' k = "auto" branch keeps them (labels not renumbered; the merged
    pairs' hand-made strengths). ``progress``: its cancel flag is checked while the merges run."""
    from gpu_kernels.mesh.segment import absorb_small_parts

    model = MODEL_AUTO if MODEL_AUTO is not None else shipped_auto_model()
    strengths: list = []
    merged, merges = learned_merge(graph, labels, targets, label_component, min_area=min_area, policy=AUTO_POLICY,
                                   model=model, strengths=strengths, stop_p=AUTO_STOP_P, progress=progress)
    extra_st: list = []
    lab, extra = absorb_small_parts(graph, np.asarray(merged).astype(np.int32), label_component, set(auto_components),
                                    min_share, extra_st, progress=progress)
    return np.asarray(lab).astype(np.int32), list(merges) + list(extra), strengths + extra_st


def k_merge(graph, labels, targets: dict, label_component, *, strengths: list | None = None, min_area: float = 0.0,
            progress=None):
    """An integer k's merges with the learned score (``defaults.DEFAULT_K_MERGE = "learned"``): as
    :func:`gpu_kernels.mesh.boundary.merge_weakest_boundaries` (the same arguments and return), with
    :data:`POLICY` and :data:`MODEL` (None: :func:`shipped_model`). Where one mesh component alone has more than
    :data:`gpu_kernels.mesh.defaults.LEARNED_MAX_CLUSTERS` clusters, the hand-made merges instead (the learned
    loop's cost grows with the clusters, and the model never saw so many)."""
    from gpu_kernels.mesh import defaults as _defaults

    lc = np.asarray(label_component)
    if lc.size and int(np.bincount(lc).max()) > int(_defaults.LEARNED_MAX_CLUSTERS):
        return _bd.merge_weakest_boundaries(graph, labels, targets, lc, strengths=strengths, min_area=min_area,
                                            progress=progress)
    model = MODEL if MODEL is not None else shipped_model()
    return learned_merge(graph, labels, targets, label_component, min_area=min_area, policy=POLICY, model=model,
                         strengths=strengths, progress=progress)


def pair_targets(comp: list, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(p_diff, ok)``: per pair, 1 - the mean over the human segmentations of the chance that a face of A
    and a face of B lie in the same human segment (``comp``: one (K, S) face-count table per human: each
    cluster's faces per human segment); ``ok`` where both clusters hold faces."""
    q = np.zeros(lo.size)
    ok = np.ones(lo.size, dtype=bool)
    for C in comp:
        na, nb = C[lo].sum(axis=1), C[hi].sum(axis=1)
        ok &= (na > 0) & (nb > 0)
        q += (C[lo] * C[hi]).sum(axis=1) / np.maximum(na * nb, 1e-300)
    return 1.0 - q / max(len(comp), 1), ok


def _log(x) -> np.ndarray:
    """``log`` elementwise by the C library (``math.log``; NaN or -inf where it has no finite value), as the
    compiled loop computes it: NumPy's own ``log`` is a SIMD kernel on some processors (AVX-512) whose last bit
    can differ, and the two loops must give the same floats."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.where(x > 0, 1.0, x))  # (NaN, -inf, NaN for the values math.log refuses)
    ok = np.flatnonzero(x > 0)
    if ok.size:
        xo = x[ok]
        out[ok] = np.fromiter(map(math.log, xo.tolist()), dtype=np.float64, count=ok.size)
    return out


def _pow(x, e: float) -> np.ndarray:
    """``x ** e`` elementwise by the C library (``math.pow``), as the compiled loop computes it (NumPy's ``power``
    has SIMD kernels and a square-root shortcut whose last bit can differ); ``x`` >= 0 here (areas' shares)."""
    x = np.asarray(x, dtype=np.float64)
    return np.fromiter((math.pow(v, e) for v in x.tolist()), dtype=np.float64, count=x.size)


def _groups(label_component, cap: int) -> list:
    """The mesh components, in runs of whole components of at most ``cap`` clusters each (one component with more
    is a run by itself); one run where every cluster fits."""
    lc = np.asarray(label_component)
    if lc.size <= cap:
        return [None]
    comps = np.unique(lc)
    sizes = np.bincount(lc, minlength=int(comps.max()) + 1)
    runs, cur, n = [], [], 0
    for c in comps.tolist():
        if cur and n + int(sizes[c]) > cap:
            runs.append(cur)
            cur, n = [], 0
        cur.append(c)
        n += int(sizes[c])
    runs.append(cur)
    return runs


def n_columns() -> int:
    """The merges' feature columns under the switches now: :data:`FEATURES`, then :data:`HULL_FEATURE_NAME` where
    :data:`HULL_FEATURE` is on (22 by default since session 25)."""
    return len(FEATURES) + (1 if HULL_FEATURE else 0)


def learned_merge(graph, labels, targets: dict, label_component, *, min_area: float = 0.0, policy: str = "learned",
                  model: TreeModel | None = None, strengths: list | None = None, record: dict | None = None,
                  record_top: int = 12, stop_p: float | None = None, progress=None):
    """:func:`gpu_kernels.mesh.boundary.merge_weakest_boundaries` (the "contrast" criterion, K x K tables) with
    the pair to merge chosen by ``policy``: ``"hand"`` (the hand-made strength: the same merges), ``"learned"``
    (the lowest predicted chance of different human segments), ``"blend"`` (the lowest mean of the two
    ranks; ties to the model) or ``"gain"`` (the lowest expected change of the Rand Index error, ``(2 p - 1)`` x
    the two clusters' shares of their component's area: a face pair of A x B turns "same" where p is the
    chance it is "different"; ties by the strength). ``strengths`` receives the merged pairs' hand-made strengths (0 for a sliver).
    ``record`` (``{"comp": [...]}`` as :func:`pair_targets`' tables): each round's ``record_top`` weakest
    candidates by the hand-made strength get their features appended to ``record["X"]`` and their targets to
    ``record["y"]``. ``stop_p`` (a learned policy; k = "auto" experiments): a component stops merging once every
    candidate pair of it is predicted at least this likely to be different. ``progress``: its cancel flag is
    checked every :data:`gpu_kernels.mesh.boundary.CANCEL_ROUNDS` rounds. Returns ``(labels, merges)`` as the
    hand-made loop does.

    The loop is compiled (:func:`gpu_kernels.mesh._numba_merge.greedy_merge`) where numba imports and no
    ``record`` is asked, else NumPy: the same merges and floats. With more than
    :data:`gpu_kernels.mesh.defaults.LEARNED_MAX_CLUSTERS` clusters in all, the mesh components are merged in runs
    of whole components of at most that many clusters (the rank features then see the run's candidates), so the
    cost grows with the number of components, not with its square."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be hand, learned, blend or gain, not {policy!r}")
    if policy != "hand" and model is None:
        raise ValueError("a learned policy needs a model")
    top = int(np.max(model.feature, initial=-1)) if model is not None else -1  # (the last column the model reads)
    ncol = n_columns()
    if top >= ncol:
        raise ValueError(f"the merge model reads feature column {top}, but the merges have {ncol} "
                         "(learned.HULL_FEATURE adds the 22nd)")
    # the hull's columns are made for a record, or for a model that reads one (k = "auto"'s model does not: its merges
    # then stay in the compiled loop at no cost)
    hull_on = HULL_FEATURE and (record is not None or (policy != "hand" and top >= len(FEATURES)))
    from gpu_kernels.mesh import defaults as _defaults

    lab0 = np.asarray(labels).astype(np.int64)
    label_component = np.asarray(label_component)
    runs = _groups(label_component, int(_defaults.LEARNED_MAX_CLUSTERS))
    if runs == [None]:
        state = _bd._MergeState(graph, lab0, targets, label_component, extra=True)
        if record is not None:
            state.comp_tab = [np.asarray(C, dtype=np.float64).copy() for C in record["comp"]]
        return _run(state, targets, min_area, policy, model, strengths, record, record_top, stop_p, progress,
                    _hull_centroids(graph) if hull_on else None)
    # several runs of components: each merged by itself on its own tables, the labels and merges mapped back
    out = lab0.copy()
    merges: list = []
    c0 = _bd._contrast_offset(*_lengths_conc(graph))
    for run in runs:
        idx = np.flatnonzero(np.isin(label_component, run))
        local = np.full(label_component.size, -1, dtype=np.int64)
        local[idx] = np.arange(idx.size)
        faces = np.flatnonzero(local[lab0] >= 0)
        sub = _subgraph(graph, faces)
        in_run = set(run)
        tg = {c: t for c, t in targets.items() if c in in_run}
        rec = None
        if record is not None:
            rec = {"comp": [np.asarray(C)[idx] for C in record["comp"]]}
            for key in ("X", "y"):
                rec[key] = record.setdefault(key, [])
        # (the whole mesh's contrast offset c0, as in one run)
        state = _bd._MergeState(sub, local[lab0[faces]], tg, label_component[idx], extra=True, c0=c0)
        if rec is not None:
            state.comp_tab = [np.asarray(C, dtype=np.float64).copy() for C in rec["comp"]]
        lab_r, mg = _run(state, tg, min_area, policy, model, strengths, rec, record_top, stop_p, progress,
                         _hull_centroids(sub) if hull_on else None)
        out[faces] = idx[np.asarray(lab_r, dtype=np.int64)]
        merges.extend((int(idx[k]), int(idx[g])) for k, g in mg)
    return out.astype(np.int32), merges


def _lengths_conc(graph):
    length = graph.edge_length if graph.edge_length is not None else np.ones(graph.n_edges)
    return length, _bd.merge_concavity(graph)


def _subgraph(graph, faces):
    """``graph`` restricted to ``faces`` (their arcs among themselves; the merge concavity of the whole graph
    carried, so the sums are the whole graph's): a light stand-in with the fields :class:`_MergeState` reads."""
    from types import SimpleNamespace

    F = graph.n
    new = np.full(F, -1, dtype=np.int64)
    new[faces] = np.arange(faces.size)
    s, d = np.asarray(graph.src), np.asarray(graph.dst)
    e = np.flatnonzero((new[s] >= 0) & (new[d] >= 0))
    length, conc = _lengths_conc(graph)
    th = getattr(graph, "thickness", None)
    sub = SimpleNamespace(n=int(faces.size), n_edges=int(e.size), src=new[s[e]], dst=new[d[e]],
                          edge_length=np.asarray(length)[e], concave=np.asarray(graph.concave)[e],
                          areas=np.asarray(graph.areas)[faces], normals=np.asarray(graph.normals)[faces],
                          thickness=None if th is None else np.asarray(th)[faces], ref_scale=0.0,
                          concavity=np.asarray(conc)[e],
                          centroids=None if getattr(graph, "centroids", None) is None
                          else np.asarray(graph.centroids)[faces])
    return sub


def _hull_centroids(graph):
    """The merge graph's face centroids, for the hull's columns."""
    c = getattr(graph, "centroids", None)
    if c is None:
        raise ValueError("learned.HULL_FEATURE needs the merge graph's face centroids")
    return c


def _gain_beta() -> float:
    """:data:`GAIN_BETA` as a float, checked: a finite number in [-1, 1]."""
    try:
        b = float(GAIN_BETA)
    except (TypeError, ValueError):
        b = float("nan")
    if not (math.isfinite(b) and -1.0 <= b <= 1.0):
        raise ValueError(f"learned.GAIN_BETA must be a finite number in [-1, 1], not {GAIN_BETA!r}")
    return b


def _cautious(p, beta: float):
    """The "gain" order's ``2 p - 1``, plus ``beta`` (:data:`GAIN_BETA`) where that is not 0."""
    c = 2.0 * p - 1.0
    return c + beta if beta != 0.0 else c


def _run(state, targets, min_area, policy, model, strengths, record, record_top, stop_p, progress, centroids=None):
    """The greedy loop of :func:`learned_merge` on ``state`` (a :class:`gpu_kernels.mesh.boundary._MergeState`
    with its extra tables): compiled where it can be, else NumPy. ``centroids`` (where :func:`learned_merge` wants
    the hull's columns): the merge graph's face centroids; None: the 21 columns alone."""
    hull = None
    if centroids is not None:
        hull = _Hull(state.lab0, centroids, state.K, HULL_POINTS)
    gain_power = float(GAIN_POWER)
    if policy == "gain" and not (math.isfinite(gain_power) and gain_power >= 0.0):
        raise ValueError(f"learned.GAIN_POWER must be a finite number >= 0, not {GAIN_POWER!r}")
    gain_beta = _gain_beta() if policy == "gain" else 0.0
    if record is None and _bd.COMPILED_MERGE and _bd.compiled_merge() is not None:
        return state.compiled(targets, min_area, strengths, policy=POLICIES[policy],
                              stop_p=stop_p, model=model, progress=progress, gain_power=gain_power,
                              gain_beta=gain_beta, hull=hull)
    if record is not None:
        record.setdefault("X", [])
        record.setdefault("y", [])
    label_component, area, comp_area = state.label_component, state.area, state.comp_area

    def pick(ulo, uhi, bl, over):
        strength, bnd, inner, m = state.contrast(ulo, uhi, bl)
        dth = np.abs(m[ulo] - m[uhi])
        X = None
        if policy != "hand" or record is not None:
            X = _features(strength, bnd, inner, bl, ulo, uhi, state.BX2, state.BV, state.BH, state.BL, area,
                          comp_area, label_component, m, state.comp_lg, dth, state.nrm, state.count, targets,
                          state.start, state.c0)
            if hull is not None:
                ca = np.maximum(comp_area[label_component[ulo]], 1e-300)
                X = np.concatenate([X, hull.columns(ulo, uhi, ca)], axis=1)
        if policy == "hand":
            j = int(np.argmin(strength))
        else:
            p = model.predict(X)
            if stop_p is not None:
                cl = label_component[ulo]
                stop = [c for c in over if not (p[cl == c] < stop_p).any()]
                if stop:
                    state.done.update(stop)
                    return -1
            if policy == "learned":
                j = int(np.lexsort((strength, p))[0])
            elif policy == "gain":
                c = _cautious(p, gain_beta)
                if gain_power == 1.0:  # (session 13's floats exactly)
                    g = c * X[:, SHARE_COLS[0]] * X[:, SHARE_COLS[1]]
                else:
                    g = c * _pow(X[:, SHARE_COLS[0]] * X[:, SHARE_COLS[1]], gain_power)
                j = int(np.lexsort((strength, g))[0])
            else:
                r = (np.argsort(np.argsort(strength, kind="stable"), kind="stable")
                     + np.argsort(np.argsort(p, kind="stable"), kind="stable"))
                j = int(np.lexsort((p, r))[0])
        if record is not None:
            sel = np.argsort(strength, kind="stable")[:record_top]
            y, ok = pair_targets(state.comp_tab, ulo[sel], uhi[sel])
            record["X"].append(X[sel][ok].astype(np.float32))
            record["y"].append(y[ok].astype(np.float32))
        return j, strength[j]

    if hull is not None:
        plain = state.merge

        def merge(keep, gone):
            hull.merge(keep, gone)
            plain(keep, gone)

        state.merge = merge  # (the greedy loop's merges update the hull's tables too)
    return state.greedy(targets, min_area, strengths, pick, progress)


def _features(strength, bnd, inner, bl, ulo, uhi, BX2, BV, BH, BL, area, comp_area, label_component, m, comp_lg,
              dth, nrm, count, targets, start, c0s):
    """(n, len(FEATURES)) the candidate pairs' features (see :data:`FEATURES`)."""
    n = strength.size
    ls = _log(np.maximum(strength, 1e-12))
    rank = np.argsort(np.argsort(strength, kind="stable"), kind="stable") / max(n - 1, 1)
    small_is_lo = area[ulo] <= area[uhi]
    sm = np.where(small_is_lo, ulo, uhi)
    lg_ = np.where(small_is_lo, uhi, ulo)
    perim = BL.sum(axis=1)
    ca = np.maximum(comp_area[label_component[ulo]], 1e-300)
    blc = np.maximum(bl, 1e-300)
    var = np.maximum(BX2[ulo, uhi] / blc - bnd * bnd, 0.0)

    def unit(v):
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-300)

    na, nb = unit(nrm[ulo]), unit(nrm[uhi])
    union = nrm[ulo] + nrm[uhi]
    spread_u = 1.0 - np.linalg.norm(union, axis=1) / np.maximum(area[ulo] + area[uhi], 1e-300)
    spread_s = 1.0 - np.linalg.norm(nrm[sm], axis=1) / np.maximum(area[sm], 1e-300)
    comp = label_component[ulo]
    nc = int(comp_area.size)
    cnt = np.array([count.get(c, 1) for c in range(nc)], dtype=np.float64)[comp]
    tgt = np.array([max(int(targets.get(c, 1)), 1) for c in range(nc)], dtype=np.float64)[comp]
    st0 = np.array([max(start.get(c, 1), 1) for c in range(nc)], dtype=np.float64)[comp]
    cols = [ls, rank, ls - ls.min(), bnd / c0s, inner / c0s, np.sqrt(var) / c0s, BV[ulo, uhi] / blc,
            BH[ulo, uhi] / blc, bl / np.maximum(perim[sm], 1e-300), bl / np.maximum(perim[lg_], 1e-300),
            area[sm] / ca, area[lg_] / ca, _log(np.maximum(area[sm], 1e-300) / np.maximum(area[lg_], 1e-300)),
            dth, m[sm] - comp_lg[comp], 1.0 - np.sum(na * nb, axis=1), spread_u, spread_s, cnt / tgt, cnt / st0,
            m[sm] - m[lg_]]
    return np.stack(cols, axis=1)
