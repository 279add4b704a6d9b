"""The mesh tool's checks and its k = "auto" layout step (split from :mod:`app.tools.mesh_seg`, which
re-exports them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpu_kernels.errors import InputError
from gpu_kernels.lazy import lazy_module

if TYPE_CHECKING:
    from gpu_kernels.mesh import autok as _autok
    from gpu_kernels.mesh import segment as _seg
else:
    _autok = lazy_module("gpu_kernels.mesh.autok")
    _seg = lazy_module("gpu_kernels.mesh.segment")

#: a part needs at least this many faces of the clustered mesh on average
MIN_FACES_PER_PART = 10


def check_k(params: dict, n_faces: int) -> None:
    """k must leave the parts a few faces each (of the mesh actually clustered)."""
    k = params.get("k", "auto")
    if k == "auto":
        return
    mf = params.get("max_faces")
    n = min(n_faces, mf) if isinstance(mf, int) and not isinstance(mf, bool) else n_faces
    if k * MIN_FACES_PER_PART > n:
        raise InputError(f"k = {k} asks for more parts than make sense for {n:,} faces (at most "
                         f"{max(1, n // MIN_FACES_PER_PART):,}, {MIN_FACES_PER_PART} faces per part)")


def needs_relayout(ctx, cm) -> bool:
    """Whether the cut stage lays k = "auto"'s result out again (``auto_layout`` other than "auto")."""
    return isinstance(cm.kw["k"], str) and ctx.p.get("auto_layout", "auto") != "auto"


def relayout(ctx, cm, seg, progress):
    """The cut stage's k = "auto" result laid out again at its k (``auto_layout``,
    :func:`gpu_kernels.mesh.autok.relayout`): the integer k's run on the stage-1 prepared mesh with the
    clustered result's parameters, as ``segment_mesh(..., auto_layout=...)`` runs it, so a staged (live) run
    equals a full one. ``progress``: the extra run's own range (it can be cancelled like the rest).
    Unchanged with an integer k or ``auto_layout="auto"``."""
    if not needs_relayout(ctx, cm):
        return seg
    prep, kw = ctx["graph"], cm.kw
    return _autok.relayout(prep, seg, lambda kk: _seg.segment_prepared(
        prep, k=kk, epsilon=kw["epsilon"], apsp_method=cm.apsp_method, max_iter=kw["max_iter"],
        update_power=kw["update_power"], oversegment=kw["oversegment"], shading=kw["shading"], device=ctx.device,
        progress=progress, refine_boundaries=ctx.p["refine_boundaries"]), ctx.p["auto_layout"])
