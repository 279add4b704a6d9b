"""Multi-view stereo end to end: seeds -> global view selection -> region-growing depth maps
-> fusion. :func:`reconstruct` is the one entry point for the tool layer, the CLI and the
benchmarks.

Seeds are the scene's sparse points (COLMAP's points3D) when it has any, otherwise SIFT
features matched between neighbouring views and triangulated (:mod:`.seeds`). Reference
views are grown ``views_together`` at a time (one shared batch per launch on the GPU).

Example
-------
>>> from gpu_kernels.mvs.synth import render_synthetic_scene
>>> from gpu_kernels.mvs.stereo import reconstruct
>>> syn = render_synthetic_scene(n_views=6, width=96, height=72)
>>> res = reconstruct(syn.scene, views=[0], device="cpu", min_views=2, fuse=False)
>>> res.maps[0].n_samples > 1000
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from gpu_kernels.backend import cache_key, get_backend, on_release
from gpu_kernels.env import flag
from gpu_kernels.errors import TooLargeError
from gpu_kernels.jobs import as_progress
from gpu_kernels.mvs import memo as _memo
from gpu_kernels.mvs.camera import MVSInputError, MVSScene
from gpu_kernels.mvs.fusion import (
    DEFAULT_FUSE_MIN_VIEWS,
    DEFAULT_FUSE_TOL,
    FusedCloud,
    consistency_counts,
    fuse_depth_maps,
)
from gpu_kernels.mvs.grow import DEFAULT_MAX_ATTEMPTS, DepthMap, grow_depth_maps, release_device_reads
from gpu_kernels.mvs.optimize import (
    DEFAULT_MAX_ITER,
    DEFAULT_MIN_VIEWS,
    DEFAULT_NCC_ACCEPT,
    DEFAULT_WINDOW,
    MAX_NEIGHBORS,
    OptimizeParams,
    ViewTextures,
    pack_views,
)
from gpu_kernels.mvs.seeds import sift_seeds
from gpu_kernels.mvs.views import (
    DEFAULT_NEIGHBORS,
    greedy_device,
    select_views,
    track_lengths,
    track_membership,
)
from gpu_kernels.pinned import free_pinned_pool

__all__ = ["DEFAULT_VIEWS_TOGETHER_GPU", "DEFAULT_VIEWS_TOGETHER_CPU", "MVSResult", "PreparedViews", "reconstruct",
           "prepare_views", "grow_views", "finish_maps", "cross_view_consistency", "scene_seeds", "parse_views", "scene_textures",
           "DEFAULT_TEXTURE_SHARE"]

from gpu_kernels.mvs import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: reference views grown in one shared batch on the GPU / CPU
DEFAULT_VIEWS_TOGETHER_GPU = _d.VIEWS_TOGETHER_GPU
DEFAULT_VIEWS_TOGETHER_CPU = 1
#: share of the free memory under which :func:`scene_textures` packs every view
DEFAULT_TEXTURE_SHARE = _d.TEXTURE_SHARE


@dataclass
class MVSResult:
    maps: list                     # DepthMap per processed view, in the order of `views`
    views: list
    fused: FusedCloud | None
    seeds: np.ndarray
    seed_views: list
    stats: dict = field(default_factory=dict)

    def by_view(self, v: int) -> DepthMap:
        return self.maps[self.views.index(v)]


def parse_views(spec, scene: MVSScene) -> list[int]:
    """``"all"``, a list/comma string of names or 0-based indices -> view indices."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "all")):
        return list(range(scene.n_views))
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out = []
    for it in items:
        if isinstance(it, str) and not it.strip():
            continue
        v = scene.view_index(it.strip() if isinstance(it, str) else it)
        if v not in out:
            out.append(v)
    if not out:
        raise MVSInputError(f"no views selected by {spec!r}")
    return out


def scene_seeds(scene: MVSScene, *, progress=None):
    """``(points, point_views)``: the scene's sparse points, or triangulated SIFT features."""
    if scene.points is not None and len(scene.points):
        pv = scene.point_views
        if pv is None:
            pv = [np.arange(scene.n_views)] * len(scene.points)
        return np.asarray(scene.points, np.float64), pv, "model"
    pts, vis, _ = sift_seeds(scene.images, scene.cameras, masks=scene.masks, progress=progress)
    return pts, vis, "sift"


def _texture_bytes(scene, views) -> int:
    # three float4 per pixel, and the 8-bit image kept for the fusion's colours
    return int(sum(scene.cameras[v].width * scene.cameras[v].height * 51 for v in views))


def scene_textures(scene: MVSScene, *, device=None, share: float | None = None,
                   progress=None) -> ViewTextures | None:
    """Every view's textures on ``device``, or ``None`` where they take more than ``share`` of
    its free memory (of the host's available memory on the CPU; default
    :data:`DEFAULT_TEXTURE_SHARE`) or a view has no image.

    The optimiser looks a view's texture up by its index, so textures packed for views that a
    run does not read change nothing: :func:`prepare_views` with ``pack=False`` and these
    textures grow the same depth maps as :func:`prepare_views` packing its own views."""
    be = get_backend(device)
    progress = as_progress(progress)
    share = DEFAULT_TEXTURE_SHARE if share is None else share
    if scene.n_views == 0 or any(im is None for im in scene.images):
        return None
    views = list(range(scene.n_views))
    free, _total = be.mem_info()
    if _texture_bytes(scene, views) > share * free:
        return None
    progress.update(0.0, "textures")
    tex = pack_views(scene.images, device=be, views=views)
    progress.update(1.0, "textures")
    return tex


@dataclass
class PreparedViews:
    """What growing needs before it starts (:func:`prepare_views`): the reference views, their
    neighbour views (Goesele's global view selection), each one's seed points, and the views'
    textures on the device (``None`` where they did not fit together: each group of views
    grown together then packs its own)."""

    views: list
    neighbors: dict
    view_seeds: dict
    points: np.ndarray
    point_views: list | None
    seed_source: str
    textures: ViewTextures | None
    device: str
    seeds_s: float = 0.0
    prepare_s: float = 0.0


def prepare_views(scene: MVSScene, *, views="all", neighbors: int = DEFAULT_NEIGHBORS,
                  min_views: int = DEFAULT_MIN_VIEWS, device=None, progress=None, seeds: tuple | None = None,
                  pack: bool = True) -> PreparedViews:
    """Seeds (unless given), view selection and the views' textures on ``device``: the part of
    :func:`reconstruct` that no growing parameter changes."""
    be = get_backend(device)
    progress = as_progress(progress)
    vs = parse_views(views, scene)
    if not 1 <= neighbors <= MAX_NEIGHBORS:
        raise MVSInputError(f"neighbors must be 1..{MAX_NEIGHBORS}, got {neighbors}")
    if scene.n_views < 2:
        raise MVSInputError("multi-view stereo needs at least 2 views")
    if min_views > neighbors:
        raise MVSInputError(f"min_views ({min_views}) cannot exceed neighbors ({neighbors})")
    for v in vs:
        if scene.images[v] is None:
            raise MVSInputError(f"view {scene.names[v]} has no image")
    t0 = time.perf_counter()
    # the bar: SIFT seeding costs about 2 % of growing one view per view it reads
    sift_views = 0 if (seeds is not None or (scene.points is not None and len(scene.points))) else scene.n_views
    seed_end = min(0.6, 0.02 * sift_views / (0.02 * sift_views + 0.1))
    pts, pvis, seed_src = seeds if seeds is not None else scene_seeds(scene, progress=progress.sub(0.0, seed_end,
                                                                                                     "seeds"))
    if len(pts) == 0:
        raise MVSInputError("the scene has no seeds: no sparse points and no SIFT feature could be matched "
                            "and triangulated between neighbouring views")
    t_seeds = time.perf_counter() - t0
    progress.update(seed_end, "view selection")
    # the tracks as a (points, views) table, once for every reference view
    member = track_membership(pvis, len(pts), scene.n_views) if pvis is not None else None
    # on the GPU the greedy steps of every reference view are one launch (cuda/mvs_views.cu)
    greedy = greedy_device(be, scene.cameras, pts, member, vs, neighbors) \
        if be.is_gpu and member is not None else None
    centers = np.array([c.center for c in scene.cameras], np.float64)
    nbrs = {v: select_views(scene.cameras, pts, pvis, v, max_neighbors=neighbors, min_views=neighbors,
                            member=member, _greedy=None if greedy is None else greedy[v], _centers=centers)
            for v in vs}
    view_seeds = {}
    if pvis is not None:
        # a point without a track counts as seen by every view (the grower keeps only those
        # in front of the camera and inside the image)
        untracked = track_lengths(pvis) == 0
    for v in vs:
        if pvis is not None:
            view_seeds[v] = pts[member[:, v] | untracked]
        else:
            view_seeds[v] = pts
    tex = None
    if pack:
        need = sorted(set(vs) | {n for v in vs for n in nbrs[v]})
        fits = True
        if be.is_gpu and be.xp is not np:
            free, _total = be.mem_info()
            fits = _texture_bytes(scene, need) <= 0.5 * free
        if fits:
            progress.update(seed_end + 0.5 * (1 - seed_end), "textures")
            # no wait for the device here: the growing's set-up on the host runs while the views
            # go up and are packed (the grower waits for the device before its first batch)
            tex = pack_views(scene.images, device=be, views=need, sync=False)
    progress.update(1.0, "view selection")
    return PreparedViews(vs, nbrs, view_seeds, pts, pvis, seed_src, tex, be.label, t_seeds,
                         time.perf_counter() - t0)


def grow_views(scene: MVSScene, prep: PreparedViews, *, window: int = DEFAULT_WINDOW,
               min_views: int = DEFAULT_MIN_VIEWS, ncc_accept: float = DEFAULT_NCC_ACCEPT,
               max_iter: int = DEFAULT_MAX_ITER, batch_size: int | None = None, views_together: int | None = None,
               max_attempts: int = DEFAULT_MAX_ATTEMPTS, optimize_params: OptimizeParams | None = None,
               overlap: bool | None = None, device=None, progress=None, callback=None,
               keep_device: bool = False) -> tuple[list, dict]:
    """Grow the depth maps of ``prep.views``, ``views_together`` at a time: ``(maps, stats)``.
    ``keep_device``: see :func:`~gpu_kernels.mvs.grow.grow_depth_maps` (the maps still come down
    on return; ``stats["samples"]`` is None until :func:`finish_maps`)."""
    be = get_backend(device)
    progress = as_progress(progress)
    prm = optimize_params or OptimizeParams(window=window, min_views=min_views, ncc_accept=ncc_accept,
                                            max_iter=max_iter)
    prm.check()
    vs, nbrs = prep.views, prep.neighbors
    for v in vs:
        if len(nbrs[v]) < prm.min_views:
            raise MVSInputError(f"view {scene.names[v]} has only {len(nbrs[v])} usable neighbour views, fewer "
                                f"than min_views = {prm.min_views}")
    if prep.textures is not None and prep.textures.backend.is_gpu != be.is_gpu:
        raise MVSInputError("the prepared view textures belong to another device")
    vt = views_together or (DEFAULT_VIEWS_TOGETHER_GPU if be.is_gpu else DEFAULT_VIEWS_TOGETHER_CPU)
    vt = max(1, min(int(vt), len(vs)))
    maps_all: list[DepthMap] = []
    call_stats: list[dict] = []
    peak_mem = 0
    t_grow = 0.0
    groups = [vs[i:i + vt] for i in range(0, len(vs), vt)]
    tried_free = [0, 0]  # pixels tried and pixels free so far: how much of a view the growing visits
    pool = be.xp.get_default_memory_pool() if be.is_gpu and be.xp is not np else None
    try:
        with be.activate():
            for gi, grp in enumerate(groups):
                sub = progress.sub(gi / len(groups), (gi + 1) / len(groups),
                                   f"views {', '.join(scene.names[v] for v in grp[:3])}{'...' if len(grp) > 3 else ''}")
                tex = prep.textures
                if tex is None:
                    need = sorted(set(grp) | {n for v in grp for n in nbrs[v]})
                    if pool is not None:
                        free, _total = be.mem_info()
                        nbytes = _texture_bytes(scene, need)
                        if nbytes > 0.8 * free:
                            raise TooLargeError(nbytes, int(0.8 * free), unit="bytes of view textures",
                                                remedy="process fewer views together", parameter="views_together")
                    sub.update(0.0, "textures")
                    tex = pack_views(scene.images, device=be, views=need)
                sub.update(0.05, "growing")
                tg = time.perf_counter()
                hint = tried_free[0] / tried_free[1] if tried_free[1] else None
                maps = grow_depth_maps(tex, None, scene.cameras, grp, [nbrs[v] for v in grp],
                                       [prep.view_seeds[v] for v in grp], masks=scene.masks, params=prm,
                                       batch_size=batch_size, max_attempts=max_attempts, overlap=overlap, device=be,
                                       progress=sub.sub(0.05, 1.0), callback=callback, work_hint=hint,
                                       keep_device=keep_device)
                tried_free[0] += maps[0].stats.get("tried", 0)
                tried_free[1] += maps[0].stats.get("free", 0)
                t_grow += time.perf_counter() - tg
                call_stats.append(maps[0].stats)
                if pool is not None:
                    peak_mem = max(peak_mem, int(pool.total_bytes()))
                maps_all.extend(maps)
                del tex
    except BaseException:
        # stopped in a later group (a cancel, an error): the maps of the groups before are
        # still coming down from device arrays into page-locked ones; let them land before
        # both go back to their pools
        for m in maps_all:
            try:
                m.wait()
            except Exception:  # noqa: BLE001 - the error on its way out is the one to report
                pass
        release_device_reads(maps_all)  # nothing read them: their growers go back
        raise
    # each map's count from the growing's stats (counted there once), not counted again
    samples = None if keep_device else _count_samples(maps_all)
    stats = {"device": be.label, "views": len(vs), "samples": samples, "seed_points": len(prep.points),
             "seed_source": prep.seed_source, "seeds_s": prep.seeds_s, "prepare_s": prep.prepare_s,
             "grow_s": t_grow, "peak_device_bytes": peak_mem,
             "queue_s": float(sum(c["queue_s"] for c in call_stats)),
             "wait_s": float(sum(c["wait_s"] for c in call_stats)),
             "setup_s": float(sum(c.get("setup_s", 0.0) for c in call_stats)),
             "optimize_s": float(sum(c["optimize_s"] for c in call_stats)),
             "batches": int(sum(c["batches"] for c in call_stats)),
             "views_together": vt, "neighbors": {scene.names[v]: [scene.names[n] for n in nbrs[v]] for v in vs}}
    return maps_all, stats


def _keep_device() -> bool:
    """The fusion reads the grown maps on the device while they come down
    (``GPULAB_MVS_KEEP_DEVICE=0``: it waits for them and uploads them again, as before)."""
    return flag("GPULAB_MVS_KEEP_DEVICE", True)


def finish_maps(maps, stats: dict) -> None:
    """Wait for the maps still coming down (``grow_views(keep_device=True)``), count the samples
    into ``stats`` and let go of the device's maps: call it after the last read of
    ``DepthMap.device`` (the fusion); their grower goes back to its cache then
    (:func:`~gpu_kernels.mvs.grow.release_device_reads`)."""
    t = time.perf_counter()
    for m in maps:
        m.wait()
    release_device_reads(maps)
    stats["download_wait_s"] = time.perf_counter() - t
    stats["samples"] = _count_samples(maps)


def _count_samples(maps) -> int:
    """The maps' samples, each from its growing's stats where counted there (else counted now)."""
    return int(sum(m.stats["samples"] if m.stats.get("samples") is not None else m.n_samples for m in maps))


def reconstruct(scene: MVSScene, *, views="all", window: int = DEFAULT_WINDOW, neighbors: int = DEFAULT_NEIGHBORS,
                min_views: int = DEFAULT_MIN_VIEWS, ncc_accept: float = DEFAULT_NCC_ACCEPT,
                max_iter: int = DEFAULT_MAX_ITER, batch_size: int | None = None,
                views_together: int | None = None, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                fuse: bool = True, fuse_tol: float = DEFAULT_FUSE_TOL,
                fuse_min_views: int = DEFAULT_FUSE_MIN_VIEWS, optimize_params: OptimizeParams | None = None,
                overlap: bool | None = None, device=None, progress=None, callback=None,
                seeds: tuple | None = None, reuse_setup: bool | None = None) -> MVSResult:
    """Depth, normal and confidence maps of ``views`` (default all) and their fused cloud.

    Parameters
    ----------
    scene : MVSScene
    views : "all", list of names/indices, optional
    window, neighbors, min_views, ncc_accept, max_iter
        See :class:`~gpu_kernels.mvs.optimize.OptimizeParams`; ``neighbors`` is the global
        view selection's limit.
    batch_size : int, optional
        Pixels per optimiser launch (default 65536 on the GPU, 2048 on the CPU).
    views_together : int, optional
        Reference views grown in one shared batch (default 16 on the GPU, 1 on the CPU).
    fuse : bool
        Fuse the processed views' depth maps into a point cloud (needs >= 2 views).
    overlap : bool, optional
        Ignored (kept for callers; the growing's queue lives on the device).
    device, progress, callback
        ``callback(maps, info)`` after every batch (see :func:`grow_depth_maps`).
    seeds : tuple, optional
        ``scene_seeds(scene)``'s ``(points, point_views, source)``, computed once for the scene
        (they depend on nothing else; the window keeps them between runs).
    reuse_setup : bool, optional
        Keep the set-up (:func:`prepare_views`: view selection, seeds, textures) for the next call
        with the same cameras, images, points, views and ``neighbors``, and use the one kept
        (:mod:`gpu_kernels.mvs.memo`: checked against the inputs' content while the device grows,
        made again where they changed in place). Default: on the GPU only. A kept set-up's
        growing reports (``progress``, ``callback``) only once the check has said the inputs are
        the same; where they changed, the call starts again from a new set-up, on the same
        progress (the bar does not go back) and saying so, and the callback never sees the
        discarded maps.

    Returns
    -------
    MVSResult
    """
    args = {k: v for k, v in locals().items() if k != "scene"}  # the same call again (a stale set-up)
    be = get_backend(device)
    progress = as_progress(progress)
    t0 = time.perf_counter()
    # the bar is shared by measured cost: SIFT seeding about 2 % of growing one view per view it
    # reads (nothing with the scene's own sparse points), growing alike per view, fusion a few %
    vs = parse_views(views, scene)
    sift_views = 0 if (seeds is not None or (scene.points is not None and len(scene.points))) else scene.n_views
    prep_end = min(0.3, 0.02 * sift_views / (0.02 * sift_views + len(vs)) + 0.01)
    grow_end = 0.97 if fuse and len(vs) >= 2 else 1.0
    if optimize_params is not None:
        min_views = optimize_params.min_views
    reuse = be.is_gpu if reuse_setup is None else bool(reuse_setup)
    key = check = prep = kept = token = None
    if reuse:
        key = _setup_key(scene, vs, neighbors, min_views, seeds, be)
        prep, check = _memo.SETUP.get(key)
        kept = prep  # the memo's own object (prep is a copy with this call's times)
        if prep is not None:
            prep = replace(prep, seeds_s=0.0, prepare_s=time.perf_counter() - t0)
            _memo.drop_deferred()
            _memo.defer(check.start)  # once the device grows (the grower runs it after its first batches)
    if prep is None:
        prep = prepare_views(scene, views=vs, neighbors=neighbors, min_views=min_views, device=be,
                             progress=progress.sub(0.0, prep_end), seeds=seeds)
        if reuse:
            token = _keep_setup(key, scene, prep, seeds)
    # on the GPU the fusion reads the maps where they are, while they come down behind it
    fusing = fuse and len(vs) >= 2
    grow_progress, grow_callback = progress.sub(prep_end, grow_end), callback
    if check is not None and (callback is not None or args["progress"] is not None):
        # a kept set-up: nothing of its growing is shown before its check says 'the same' (with
        # no progress and no callback asked for, nothing is shown: no reports to hold)
        held = _memo.HeldReports(check, grow_progress, callback, start=not be.is_gpu)
        grow_progress, grow_callback = held.progress, held.callback
    try:
        maps_all, stats = grow_views(scene, prep, window=window, min_views=min_views, ncc_accept=ncc_accept,
                                     max_iter=max_iter, batch_size=batch_size, views_together=views_together,
                                     max_attempts=max_attempts, optimize_params=optimize_params, overlap=overlap,
                                     device=be, progress=grow_progress, callback=grow_callback,
                                     keep_device=fusing and be.is_gpu and _keep_device())
    except _memo.StaleSetup:  # its check said 'changed' while it grew: stopped there, made again
        _memo.drop_deferred()
        return _redo(scene, key, kept, progress, args)
    except BaseException:  # a cancel, say: the kept set-up's hash is still of the inputs it was made from
        _memo.drop_deferred()  # a hit's content check, if the grower never started it: not the next call's work
        _settled(token, key, prep)
        raise
    _memo.drop_deferred()
    # a kept set-up's check, answered (the growing gave it the time) before the fusion and before
    # anything more is shown
    tc = time.perf_counter()
    same = check is None or check.result()
    stats["setup_check_wait_s"] = time.perf_counter() - tc  # the content check not done by the end
    if not same:
        # an image, the points or their tracks changed in place since the set-up was kept: these
        # maps came from the old ones; make the set-up again and the result with it
        finish_maps(maps_all, stats)
        return _redo(scene, key, kept, progress, args)
    fused = None
    t_fuse = 0.0
    try:
        if fusing:
            tf = time.perf_counter()
            dev8 = prep.textures.images8 if prep.textures is not None and prep.textures.images8 else {}
            images = [dev8.get(v, scene.images[v]) if np.asarray(scene.images[v]).dtype == np.uint8 else None
                      for v in vs]
            on = [m.device if m.device is not None else (m.depth, m.normal, m.conf) for m in maps_all]
            fused = fuse_depth_maps(scene.cameras, [o[0] for o in on], views=vs, normals=[o[1] for o in on],
                                    confidences=[o[2] for o in on], images=images, rel_tol=fuse_tol,
                                    min_views=fuse_min_views, device=be, progress=progress.sub(grow_end, 1.0, "fusion"))
            t_fuse = time.perf_counter() - tf
    finally:
        finish_maps(maps_all, stats)
        # the kept set-up's hash taken (the background had the growing for it) before the caller
        # can change an input in place: else the next call's check compares the changed input with
        # a hash of the changed input and uses a stale set-up
        th = time.perf_counter()
        _settled(token, key, prep)
        stats["setup_hash_wait_s"] = time.perf_counter() - th  # a new set-up's hash not done by the end
    if be.is_gpu and be.xp is not np:
        release_pool(be)
    stats.update(fuse_s=t_fuse, total_s=time.perf_counter() - t0, setup_reused=check is not None)
    progress.update(1.0, f"{stats['samples']:,} samples in {len(vs)} view(s)")
    return MVSResult(maps_all, vs, fused, prep.points, prep.point_views, stats)


def _redo(scene, key, kept, progress, args) -> MVSResult:
    """:func:`reconstruct` again with its set-up made anew (the kept one, ``kept``, had inputs
    changed in place: forgotten, with the growers made from it), reporting to the same progress:
    the bar goes on from where it is (the discarded growing's reports were held back,
    :class:`~gpu_kernels.mvs.memo.HeldReports`), and says why."""
    _memo.SETUP.forget(key, kept)
    progress.update(0.0, "the inputs changed in place since the last run: setting up again")
    return reconstruct(scene, **{**args, "progress": progress})


def _setup_key(scene, vs, neighbors, min_views, seeds, be) -> tuple:
    """What :func:`prepare_views` reads, for :data:`gpu_kernels.mvs.memo.SETUP`: the cameras by
    value, the images and sparse points by identity (their content is checked in the background)."""
    pts, pvis = (seeds[0], seeds[1]) if seeds is not None else (scene.points, scene.point_views)
    return (be.label, tuple(int(v) for v in vs), int(neighbors), int(min_views),
            b"".join(_memo.camera_sig(c) for c in scene.cameras), tuple(_memo.ident(im) for im in scene.images),
            _memo.ident(pts), _memo.ident(pvis), None if seeds is None else seeds[2])


def _settled(token, key=None, prep=None) -> None:
    """Wait for a kept set-up's content hash; where it could not be taken (an input hashlib cannot
    read), the set-up ``prep`` is not kept: every later check would say 'changed' and each call
    would run twice."""
    if token is not None and token.exception() is not None and key is not None:
        _memo.SETUP.forget(key, prep)


def _keep_setup(key, scene, prep: PreparedViews, seeds):
    """Keep ``prep`` for ``key``, holding what the key names by identity; its content check hashes
    the images it packed (every image where the seeds came from SIFT), the points and tracks.
    Returns the future of the hash taken now (in the background)."""
    images = list(scene.images)
    pts, pvis = (seeds[0], seeds[1]) if seeds is not None else (scene.points, scene.point_views)
    if prep.seed_source == "sift" and seeds is None:
        used = range(len(images))
    else:
        used = sorted(set(prep.views) | {n for v in prep.views for n in prep.neighbors[v]})

    def content():
        return [images[i] for i in used] + [pts, None if pvis is None else list(pvis)]

    return _memo.SETUP.put(key, prep, (images, pts, pvis), content)


#: after a call, CuPy's pool keeps its blocks for the next call while it holds at most this
#: share of the device's memory (CuPy frees them itself before an allocation would fail, and the
#: app frees the pool after an out-of-memory error)
POOL_KEEP_SHARE = 0.25
_device_bytes: dict = {}


def pool_to_free(pool_bytes: int, device_bytes: int) -> bool:
    """Whether :func:`reconstruct` gives CuPy's pool back at its end: above
    :data:`POOL_KEEP_SHARE` of the device's memory, or always with ``GPULAB_MVS_POOL_KEEP=0``
    (as before session 6b: every block freed, about 17 ``cudaFree`` for the scene, each one
    synchronising the device, and every ``cudaMalloc`` again in the next call)."""
    if not flag("GPULAB_MVS_POOL_KEEP", True):
        return True
    return pool_bytes > POOL_KEEP_SHARE * device_bytes


def release_pool(be) -> None:
    """Free CuPy's pool at the end of :func:`reconstruct` where :func:`pool_to_free` says so."""
    key = cache_key(be)  # an emulator's 16 GiB must not stand for the real device 0's memory
    total = _device_bytes.get(key)
    if total is None:
        total = _device_bytes[key] = be.mem_info()[1]
    with be.activate():  # CuPy's default pool answers for the current device: make it be's
        pool_bytes = int(be.xp.get_default_memory_pool().total_bytes())
    if pool_to_free(pool_bytes, total):
        release_device(be)


def release_device(be) -> None:
    """Drop the set-ups kept for the next call (:mod:`gpu_kernels.mvs.memo`), free CuPy's device pool
    and give the pinned pool's free blocks back (:func:`gpu_kernels.pinned.free_pinned_pool`)."""
    _memo.release(be)
    be.free_memory_pool()
    _free_pinned()


def _free_pinned() -> None:
    try:
        free_pinned_pool()
    except Exception:  # noqa: BLE001 - CuPy without a device: nothing is page-locked
        pass


def _released(_be) -> None:
    """After running out of device memory (:meth:`gpu_kernels.backend.Backend.release_caches`):
    the kept set-ups and the pinned pool's free blocks go too."""
    _memo.release()
    _free_pinned()


on_release(_released)


def cross_view_consistency(result: MVSResult, cameras, *, rel_tol: float = DEFAULT_FUSE_TOL, device=None):
    """Per view: the share of its depth samples that at least one other view confirms."""
    counts = consistency_counts(cameras, [m.depth for m in result.maps], views=result.views, rel_tol=rel_tol,
                                device=device)
    out = []
    for c in counts:
        valid = c >= 0
        out.append(float((c[valid] >= 1).mean()) if valid.any() else 0.0)
    return out, counts
