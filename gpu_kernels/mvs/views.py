"""Global view selection (Goesele et al. 2007, Section 4.1): up to ``max_neighbors`` views per
reference view, chosen greedily by a score over the sparse points both views see.

For a candidate view ``V`` of reference ``R`` and the set ``N`` already chosen (``R`` first),

``g_R(V) = sum over shared points f of  w_N(f) * w_s(f)``

* ``w_N(f) = prod over V' in N of min((alpha(f, V, V') / alpha_max)^2, 1)``: the parallax
  between the rays from ``V`` and every chosen view to ``f`` (``alpha_max`` = 10 degrees), so
  views that add triangulation angle are preferred and near-duplicates are not;
* ``w_s(f)``: the scale ratio ``r = s_R(f) / s_V(f)``, with ``s`` the footprint of a pixel at
  ``f`` (depth / focal length): ``2 / r`` for ``r >= 2``, ``1`` for ``1 <= r < 2``, ``r`` for
  ``r < 1`` (views of equal or finer resolution are preferred).

On the GPU the greedy steps of every reference view run in one launch (:func:`greedy_device`,
``cuda/mvs_views.cu``: the same terms, summed in another order, so the same choices up to exact ties).

Views that share no point with ``R`` score 0 and are not chosen by the score; when fewer
than ``min_views`` views were found, the rest are filled in by viewing-direction angle to
the centre of the reference view's points (the closest angle above ``alpha_min`` first).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.mvs.camera import look_at
>>> from gpu_kernels.mvs.views import select_views
>>> cams = [look_at([3 * np.cos(a), 3 * np.sin(a), 1], [0, 0, 0], [0, 0, 1], focal=100, width=64,
...                 height=48) for a in np.radians([0, 15, 30, 180])]
>>> pts = np.random.default_rng(0).normal(scale=0.3, size=(200, 3))
>>> vis = [np.array([0, 1, 2])] * 200
>>> sorted(select_views(cams, pts, vis, 0, max_neighbors=2))  # both add full parallax: a near tie
[1, 2]
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.mvs.camera import MVSInputError

__all__ = ["DEFAULT_NEIGHBORS", "DEFAULT_ALPHA_MAX_DEG", "select_views", "select_all_views", "view_scores",
           "track_membership", "track_lengths", "greedy_device"]

from gpu_kernels.mvs import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: neighbour views per reference view (Goesele: 10 for community photos; the CUDA paper: 8)
DEFAULT_NEIGHBORS = _d.NEIGHBORS
#: parallax that counts as full (Goesele: 10 degrees)
DEFAULT_ALPHA_MAX_DEG = 10.0


def _scale_weight(r):
    return np.where(r >= 2, 2.0 / np.maximum(r, 1e-12), np.where(r >= 1, 1.0, r))


def track_lengths(point_views) -> np.ndarray:
    """The number of views in each point's track (int64)."""
    try:  # sequences of view indices (the common case): no conversion per track
        return np.fromiter(map(len, point_views), np.int64, len(point_views))
    except TypeError:  # a bare index somewhere
        return np.fromiter(map(np.size, point_views), np.int64, len(point_views))


def track_membership(point_views, n_points: int, n: int) -> np.ndarray:
    """(n_points, n) bool: point k is seen by view v (indices outside 0..n-1 ignored). Compute
    it once and pass it as ``member`` to :func:`select_views` for several reference views."""
    member = np.zeros((n_points, n), bool)
    if not len(point_views):
        return member
    lengths = track_lengths(point_views)
    if lengths.sum():
        rows = np.repeat(np.arange(n_points), lengths)
        cols = np.concatenate(point_views, axis=None).astype(np.int64)
        ok = (cols >= 0) & (cols < n)
        member[rows[ok], cols[ok]] = True
    return member


class _Scorer:
    """What :func:`view_scores` needs of one reference view, computed once and kept over the
    greedy steps of :func:`select_views` (the points it sees, their rays, footprints and
    track membership): each step then only scores."""

    def __init__(self, cameras, points, point_views, ref: int, alpha_max_deg=DEFAULT_ALPHA_MAX_DEG, member=None):
        self.cameras, self.n = cameras, len(cameras)
        pts = np.asarray(points, np.float64)
        if member is None:
            member = track_membership(point_views, len(pts), self.n) if len(pts) else np.zeros((0, self.n), bool)
        seen_by_ref = member[:, ref] if len(pts) else np.zeros(0, bool)
        self.any = bool(seen_by_ref.any())
        self.P = pts[seen_by_ref]
        self.member = member[seen_by_ref]
        self.am = np.radians(alpha_max_deg)
        self.centers = np.array([c.center for c in cameras])
        self.ref = ref
        self._dirs: dict = {}
        self._foot: dict = {}
        self._shared: dict = {}   # v -> the points v shares with ref, and their scale weights
        self._parallax: dict = {}  # (v, c) -> the parallax factor of chosen view c on v's shared points

    def ray_dirs(self, v):
        if v not in self._dirs:
            d = self.P - self.centers[v]
            self._dirs[v] = d / np.linalg.norm(d, axis=1, keepdims=True)
        return self._dirs[v]

    def footprint(self, v):
        if v not in self._foot:
            z = (self.P - self.centers[v]) @ self.cameras[v].R[2]
            self._foot[v] = np.abs(z) / self.cameras[v].focal
        return self._foot[v]

    def _shared_of(self, v):
        """The points ``v`` shares with the reference (``None`` where none) and their scale
        weights ``w_s``: the same for every greedy step."""
        if v not in self._shared:
            shared = self.member[:, v]
            if not shared.any():
                self._shared[v] = None
            else:
                r = self.footprint(self.ref)[shared] / np.maximum(self.footprint(v)[shared], 1e-30)
                self._shared[v] = (shared, _scale_weight(r))
        return self._shared[v]

    def _factor(self, v, c, shared):
        """``min((alpha(f, v, c) / alpha_max)^2, 1)`` over ``v``'s shared points."""
        key = (v, c)
        if key not in self._parallax:
            dv = self.ray_dirs(v)[shared]
            dc = self.ray_dirs(c)[shared]
            ang = np.arccos(np.clip(np.sum(dv * dc, axis=1), -1, 1))
            self._parallax[key] = np.minimum((ang / self.am) ** 2, 1.0)
        return self._parallax[key]

    def scores(self, chosen) -> np.ndarray:
        scores = np.zeros(self.n)
        if not self.any:
            return scores
        ref = self.ref
        for v in range(self.n):
            if v in chosen or v == ref:
                continue
            sh = self._shared_of(v)
            if sh is None:
                continue
            shared, ws = sh
            wn = np.ones(len(ws))
            for c in chosen:
                wn *= self._factor(v, c, shared)
            scores[v] = float(np.sum(wn * ws))
        return scores


def view_scores(cameras, points, point_views, ref: int, chosen, *, alpha_max_deg=DEFAULT_ALPHA_MAX_DEG):
    """Goesele's score ``g_R(V)`` of every view given the chosen set (``ref`` included)."""
    return _Scorer(cameras, points, point_views, ref, alpha_max_deg).scores(chosen)


def select_views(cameras, points, point_views, ref: int, *, max_neighbors: int = DEFAULT_NEIGHBORS,
                 min_views: int = 0, alpha_max_deg: float = DEFAULT_ALPHA_MAX_DEG,
                 alpha_min_deg: float = 3.0, max_angle_deg: float = 75.0, member=None,
                 _greedy: list | None = None, _centers: np.ndarray | None = None) -> list[int]:
    """The neighbour views of ``ref``, best first (greedy, see the module docstring).
    ``member``: :func:`track_membership` of ``point_views`` where the caller already has it."""
    n = len(cameras)
    if not 0 <= ref < n:
        raise MVSInputError(f"reference view {ref} is out of range 0..{n - 1}")
    if max_neighbors < 1:
        raise MVSInputError(f"max_neighbors must be at least 1, got {max_neighbors}")
    chosen = [ref]
    out: list[int] = []
    if _greedy is not None:  # the greedy steps done already (greedy_device)
        out = list(_greedy)
    elif points is not None and point_views is not None and len(points):
        if member is None:
            member = track_membership(point_views, len(points), n)
        scorer = _Scorer(cameras, points, point_views, ref, alpha_max_deg, member)  # once for every greedy step
        while len(out) < max_neighbors:
            sc = scorer.scores(chosen)
            sc[chosen] = 0
            best = int(np.argmax(sc))
            if sc[best] <= 0:
                break
            chosen.append(best)
            out.append(best)
    if len(out) < min(max(min_views, 1), max_neighbors, n - 1):
        # fill by the angle between viewing directions at the scene centre
        cref = cameras[ref]
        if points is not None and len(points):
            if point_views is not None:
                if member is None:
                    member = track_membership(point_views, len(points), n)
                seen = np.flatnonzero(member[:, ref])
            else:
                seen = np.zeros(0, np.int64)
            P = np.asarray(points)[seen] if len(seen) else np.asarray(points)
            centre = np.median(P, axis=0)
        else:
            centre = cref.center + cref.axis * 1.0
            # the point the optical axes pass closest to, on average
            others = [c for i, c in enumerate(cameras) if i != ref]
            if others:
                A = np.zeros((3, 3))
                b = np.zeros(3)
                for c in [cref] + others:
                    M = np.eye(3) - np.outer(c.axis, c.axis)
                    A += M
                    b += M @ c.center
                try:
                    centre = np.linalg.solve(A, b)
                except np.linalg.LinAlgError:
                    pass
        dr = centre - cref.center
        dr /= np.linalg.norm(dr)
        # every view's direction to the centre at once
        d = centre[None, :] - (np.array([c.center for c in cameras], np.float64) if _centers is None else _centers)
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        angs = np.degrees(np.arccos(np.clip(d @ dr, -1, 1)))
        taken = set(out) | {ref}
        cand = [(float(angs[v]), v) for v in range(n)
                if v not in taken and alpha_min_deg <= angs[v] <= max_angle_deg]
        for _, v in sorted(cand):
            if len(out) >= max_neighbors:
                break
            out.append(v)
    return out


#: scratch bytes above which the device selection leaves the work to NumPy
_DEVICE_SCRATCH = 256 << 20


def greedy_device(be, cameras, points, member, refs, max_neighbors: int,
                  alpha_max_deg: float = DEFAULT_ALPHA_MAX_DEG) -> dict | None:
    """The greedy steps of every reference view in ``refs`` in one launch on the device
    (``cuda/mvs_views.cu``): ``{ref: chosen views}``, for :func:`select_views`' ``_greedy``.
    None where the scratch would take more than :data:`_DEVICE_SCRATCH` (NumPy then)."""
    from gpu_kernels.backend import kernel

    refs = [int(r) for r in refs]
    n, N = len(cameras), len(points)
    if not refs or N == 0 or len(refs) * n * N * 8 > _DEVICE_SCRATCH:
        return None
    xp = be.xp
    k = kernel(be, "mvs_views.cu", "mvs_select_views", options=("--fmad=false",))
    a = xp.asarray
    # the kernel's three camera tables, each from a host array of its own (no device slicing)
    centers = np.array([c.center for c in cameras], np.float64).reshape(n, 3)
    axes = np.array([c.R[2] for c in cameras], np.float64).reshape(n, 3)
    focal = np.array([c.focal for c in cameras], np.float64)
    with be.activate():
        out = xp.empty((len(refs), max_neighbors), xp.int32)
        wn = xp.empty(len(refs) * n * N, xp.float64)
        k((len(refs),), (256,), (np.int32(n), np.int32(N), a(np.ascontiguousarray(points, np.float64)),
                                 a(np.ascontiguousarray(member, np.uint8)), a(centers), a(axes), a(focal),
                                 a(np.array(refs, np.int32)), np.int32(max_neighbors),
                                 np.float64(np.radians(alpha_max_deg)), wn, out), shared_mem=8 * n)
        o = be.asnumpy(out)
    return {r: [int(v) for v in o[i] if v >= 0] for i, r in enumerate(refs)}


def select_all_views(cameras, points, point_views, refs=None, **kw) -> list[list[int]]:
    """:func:`select_views` for each view in ``refs`` (default: all)."""
    refs = range(len(cameras)) if refs is None else refs
    return [select_views(cameras, points, point_views, r, **kw) for r in refs]
