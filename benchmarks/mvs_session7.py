"""MVS host share, session 7 (issue 24): :mod:`mvs_session6`'s rows (scene fused, scene without
fusion, view 0 alone: whole ``reconstruct`` calls; the tool's live edit and fusion stage) and one
more, **an edit through reconstruct**: view 0 alone, the NCC threshold a new value on every call
(0.5, 0.502, 0.504, ...: the set-up kept by the memo is used, the grower is made again, since its
captured batch holds the threshold). Session 6's live-edit row alternates between two values, so
since session 7 both of its growers are kept (a user going back to an earlier value).

Since session 7 ``reconstruct`` keeps its set-up for the next call with the same inputs
(:mod:`gpu_kernels.mvs.memo`), so session 6's rows, which repeat the same call, time the re-run
with the set-up kept. ``--no-reuse`` times the same code with nothing kept (every call a first
call: ``reuse_setup=False`` and no grower cache), which is what a call after a change of the
cameras, the images or the views costs.

Usage (GPU host, ``python3`` with PyTorch for CUPTI; as mvs_session6.py)::

    MVS5_CODE_ROOT=.carry-mvs7/base python3 benchmarks/mvs_session7.py --label base --no-annotate --json base.json
    python3 benchmarks/mvs_session7.py --label new --json new.json
    python3 benchmarks/mvs_session7.py --label noreuse --no-reuse --no-annotate --json noreuse.json
    python3 benchmarks/mvs_session7.py --compare base.json new.json
"""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mvs_session5 as s5  # noqa: E402 - sets the code root (MVS5_CODE_ROOT) before the kernels load
import mvs_session6 as s6  # noqa: E402
import numpy as np  # noqa: E402


def edit_row(scene, dev, label, repeat=9) -> dict:
    """View 0 alone through ``reconstruct``, ``ncc_accept`` a value not used before on every call:
    wall (median), GPU idle share (CUPTI), samples."""
    from gpu_kernels.mvs import stereo

    kw = {"views": [0], "device": dev, "fuse": False, "views_together": 1}

    def once(i):
        return stereo.reconstruct(scene, ncc_accept=0.5 + 0.002 * i, **kw)

    once(0)
    walls = []
    res = None
    for i in range(1, repeat + 1):
        s5._sync()
        t = time.perf_counter()
        res = once(i)
        walls.append(time.perf_counter() - t)
    out = {"label": label, "wall_s": float(np.median(walls)), "walls": walls,
           "samples": int(res.maps[0].n_samples)}
    return s6._profiled(out, lambda: once(repeat + 1))


def _watch_calls() -> dict:
    """Every ``reconstruct`` call's set-up figures, by (views, fuse): whether the set-up was kept,
    and how long the end of the call waited for the content check."""
    from gpu_kernels.mvs import stereo

    seen: dict = {}
    real = stereo.reconstruct

    def watched(scene, **kw):
        res = real(scene, **kw)
        key = f"views={kw.get('views')!r} fuse={kw.get('fuse', True)}"
        seen.setdefault(key, []).append((res.stats.get("setup_reused"), res.stats.get("setup_check_wait_s")))
        return res

    stereo.reconstruct = watched
    return seen


def _summary(calls) -> dict:
    out = {}
    for k, v in (calls or {}).items():
        waits = [w for _, w in v if w is not None]
        out[k] = {"calls": len(v), "reused": sum(bool(r) for r, _ in v),
                  "check_wait_ms_median": float(np.median(waits)) * 1e3 if waits else None,
                  "check_wait_ms_max": float(np.max(waits)) * 1e3 if waits else None}
    return out


def _hash_speed(scene) -> float | None:
    """Seconds of :func:`gpu_kernels.mvs.memo.digest` over view 0 and 8 other images (median of 5)."""
    try:
        from gpu_kernels.mvs.memo import digest
    except ImportError:
        return None
    ims = [scene.images[i] for i in range(9)]
    walls = []
    for _ in range(5):
        t = time.perf_counter()
        digest(ims)
        walls.append(time.perf_counter() - t)
    return float(np.median(walls))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    no_reuse = "--no-reuse" in argv
    argv = [a for a in argv if a != "--no-reuse"]
    if no_reuse:  # the same code with nothing kept between calls
        from gpu_kernels.mvs import grow, stereo

        stereo.reconstruct = functools.partial(stereo.reconstruct, reuse_setup=False)
        grow.GROWER_CACHE = False
    calls = _watch_calls() if "--compare" not in argv else None
    rc = s6.main(argv)
    if rc or "--compare" in argv or "--json" not in argv:
        return rc
    path, scene, label, out = s6.seeded_temple_and_json(argv)
    out["no_reuse"] = no_reuse
    out["rows"].append(edit_row(scene, "cuda", f"{label} view 0 alone, NCC edited every call"))
    try:
        from gpu_kernels.mvs import grow, memo

        out["memo"] = {"hits": memo.SETUP.hits, "misses": memo.SETUP.misses, "stale": memo.SETUP.stale,
                       "growers": len(grow._GROWERS)}
        from gpu_kernels import pinned

        out["pinned_held_bytes"] = pinned.held_bytes()
    except Exception as exc:  # noqa: BLE001 - the starting code has none of it
        out["memo"] = repr(exc)
    out["calls"] = _summary(calls)
    out["hash_9_images_s"] = _hash_speed(scene)
    s5.log("memo", json.dumps(out["memo"]), "pinned held", out.get("pinned_held_bytes"))
    s5.log("calls", json.dumps(out["calls"]), "hash of 9 images", out["hash_9_images_s"])
    path.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    from mvs_cli import run
    from mvs_session4 import temple_dir

    sys.exit(run(main, scene=temple_dir))
