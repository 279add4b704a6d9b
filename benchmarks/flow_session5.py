"""Issue 25, session 5: the default method at 1080p on the GPU against DIS medium (target: 10x).

Subcommands (each writes a JSON with ``--out``):

* ``gpu``: on a CUDA device, a FlyingChairs pair resized to 1920x1080. DIS ultrafast / fast / medium
  on the host's cores, then the default end to end (one CUDA-graph plan, as a user's call runs)
  under the session's switches (:data:`SWITCHES`; "session 4" = all off, the code of defe79b,
  timed in the same run), each stage captured on its own, and the AEE of the ten shared pairs on the
  GPU with the session-4 switches and the new ones (plus the schedules of ``--variants``).
* ``tune``: the CPU path's AEE on the ten shared pairs (FlyingChairs 0-5 + the Middlebury four)
  against DIS medium for the TV-L1 schedules of :data:`VARIANTS`, all pairs at once (the
  numba path is bitwise equal to NumPy; the GPU's sums differ by rounding).

Usage::

    python benchmarks/flow_session5.py gpu --out OUT.json
    nice -n 10 python benchmarks/flow_session5.py tune --out OUT.json
"""

# ruff: noqa: B023 - the lambdas run before the loop moves on
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import device_name  # noqa: E402
from benchmarks.flow import _gray8, aee, gpu_time, load_chairs, load_middlebury_rgb, log  # noqa: E402
from benchmarks.flow_session4 import _dis, _pair, _root, _stage_graph_ms, _vs_dis  # noqa: E402

#: schedules (inverse_search_flow keywords) scored by ``tune`` and, with ``--variants``, timed by ``gpu``
VARIANTS = {
    "default": {},
    "warps (8,)": dict(warps=(8,)),
    "warps (8, 4)": dict(warps=(8, 4)),
    "warps (8, 6)": dict(warps=(8, 6)),
    "warps (8, 8, 4)": dict(warps=(8, 8, 4)),
    "warps (6, 4)": dict(warps=(6, 4)),
    "warps (8, 3)": dict(warps=(8, 3)),
    "tv_iters 15": dict(tv_iters=15),
    "warps (8, 4), fb_warps 4": dict(warps=(8, 4), fb_warps=(4,)),
    "warps (6, 3)": dict(warps=(6, 3)),
    "warps (5, 4)": dict(warps=(5, 4)),
    "warps (4, 4)": dict(warps=(4, 4)),
    "warps (6, 2)": dict(warps=(6, 2)),
    "warps (6,)": dict(warps=(6,)),
    "finest_patch_level 1": dict(finest_patch_level=1),
    "warps (6, 4), finest_patch_level 1": dict(warps=(6, 4), finest_patch_level=1),
    "iters 16": dict(iters=16),
    "warps (6, 4), iters 16": dict(warps=(6, 4), iters=16),
    "warps (6, 4), iters 24": dict(warps=(6, 4), iters=24),
    "warps (6, 4), rounds 2": dict(warps=(6, 4), rounds=2),
}


#: the session-4 default's schedule (the "session 4" runs pass it: the default is now (5, 4))
OLD_CFG = {"warps": (8,)}


def _switch_names():
    return ("CONCURRENT_BACKWARD", "RF_SEGMENTS", "FUSED_MAPS", "FILL_AT_WORK")


def _get(name):
    from gpu_kernels.flow import refine, search

    return getattr(search if hasattr(search, name) else refine, name)


def _set(name, val):
    from gpu_kernels.flow import _plan, refine, search

    setattr(search if hasattr(search, name) else refine, name, val)
    _plan.clear()


def _switches(**kw):
    """The new default's switches with ``kw`` changed."""
    d = {n: _get(n) for n in _switch_names()}
    d.update(kw)
    return d


def _apply(sw):
    for n, x in sw.items():
        _set(n, x)


def gpu(out, variants=(), quick=False):
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow import _plan, search
    from gpu_kernels.flow.search import inverse_search_flow
    from gpu_kernels.ops.color import _gray

    new = _switches()
    old = {"CONCURRENT_BACKWARD": False, "RF_SEGMENTS": 0, "FUSED_MAPS": False, "FILL_AT_WORK": False}
    runs = {"session 4 (defe79b: all switches off)": old, "session 5 default": new}
    flip = dict(old)
    for n in _switch_names():
        if flip[n] != new[n]:
            runs[f"session 5 default, {n} = {flip[n]}"] = dict(new, **{n: flip[n]})
    res = {"device": device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "host_cores": os.cpu_count(), "switches_new": new}
    ds, a, b = _pair((1920, 1080))
    res["pair"] = f"{ds} resized to 1920x1080"
    da, db = cp.asarray(a), cp.asarray(b)
    res["end_to_end_ms"] = {}
    base = None

    def timed(label, sw, cfg):
        nonlocal base
        _apply(sw)
        try:
            t = 1e3 * gpu_time(lambda: inverse_search_flow(da, db, device="cuda", **cfg), repeat=20, warmup=2)
            r = inverse_search_flow(da, db, device="cuda", **cfg).to_numpy()
            if base is None:
                base = r
            d = np.hypot(r.u - base.u, r.v - base.v)
            e = {"ms": round(t, 3), "x DIS medium": round(dis / t, 2), "mean |flow - session 4|": float(d.mean()),
                 "max |flow - session 4|": float(d.max()),
                 "mean |quality - session 4|": float(np.abs(r.quality - base.quality).mean()),
                 "fallback": _plan.LAST_FALLBACK}
            log(f"  {label}: {t:.3f} ms = {dis / t:.2f}x DIS medium; |d| mean {d.mean():.2e} max {d.max():.2e}")
        except Exception as exc:  # noqa: BLE001 - record and go on
            e = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            log(f"  {label}: FAILED {exc}")
        res["end_to_end_ms"][label] = e
        Path(out).write_text(json.dumps(res, indent=1, default=str))

    # DIS before and after ours (the host's load varies): the ratio uses their mean
    res["dis_ms_before"] = _dis(a, b)
    log(f"DIS at 1080p ({os.cpu_count()} host cores): {res['dis_ms_before']}")
    dis = res["dis_ms_before"]["DIS medium"]
    for label, sw in runs.items():
        timed(label, sw, OLD_CFG if sw is old else {})
    for name in variants:
        timed(f"session 5 default, {name}", new, VARIANTS[name])
    res["dis_ms_after"] = _dis(a, b)
    log(f"DIS again: {res['dis_ms_after']}")
    if quick:
        _apply(new)
        return res
    # -- per stage, each captured on its own
    be = get_backend("cuda")
    res["stages_ms"] = {}
    for label, sw, cfg in (("session 5 default", new, {}), ("session 4", old, OLD_CFG)):
        _apply(sw)
        prm = search.search_params(**cfg)
        kw = {k: prm[k] for k in search._SOLVE}
        with be.activate():
            g1, g2 = _gray(be, da), _gray(be, db)
            pyr = search.pyramids(be, g1, g2, None, patch=prm["patch"], blur=prm["blur"], max_pixels=prm["max_pixels"])
            u, v = search.solve(be, pyr, **kw)
            bk = search.solve(be, pyr, backward=1, **kw)
            st = {}
            st["forward solve"] = _stage_graph_ms(be, (label, "fw"), lambda: search.solve(be, pyr, **kw))
            st["backward solve"] = _stage_graph_ms(be, (label, "bw"), lambda: search.solve(be, pyr, backward=1, **kw))
            st["fill"] = _stage_graph_ms(be, (label, "fill"), lambda: search.fill_inconsistent(
                be, pyr.g1, pyr.g2, u, v, bk, threshold=search.DEFAULT_FILL))
            st["edge_aware_fill alone"] = _stage_graph_ms(be, (label, "eaf"), lambda: search.edge_aware_fill(
                be, pyr.g1, u, v, (u > 0).astype(cp.float32)))
            st["quality map"] = _stage_graph_ms(be, (label, "qm"), lambda: search.quality_map(
                be, pyr.g1, pyr.g2, u, v, None, backward=bk))
            for lev in range(pyr.work, pyr.coarsest + 1):
                I1, I2 = pyr.p1[lev], pyr.p2[lev]
                uu = cp.zeros(I1.shape, cp.float32)
                rad = prm["radius"] if lev > pyr.coarsest - prm["radius_levels"] else 0
                st[f"match+densify level {lev} (radius {rad})"] = _stage_graph_ms(
                    be, (label, "m", lev), lambda I1=I1, I2=I2, uu=uu, rad=rad: search.densify(
                        be, I1, I2, *search.coarse_match(be, I1, I2, uu, uu, radius=rad)[:2],
                        search.coarse_match(be, I1, I2, uu, uu, radius=rad)[3], uu, uu))
                st[f"TV-L1 level {lev} {I1.shape[1]}x{I1.shape[0]} (8 x 20)"] = _stage_graph_ms(
                    be, (label, "tv", lev), lambda I1=I1, I2=I2, uu=uu: search.refine_level(
                        be, I1, I2, uu.copy(), uu.copy(), warps=8, iters=20, lam=prm["lam"], median=prm["median"],
                        edge=prm["edge"], occ=prm["occ"]))
        res["stages_ms"][label] = st
        log(f"  stages [{label}]: " + "; ".join(f"{k} {x}" for k, x in st.items()))
        Path(out).write_text(json.dumps(res, indent=1, default=str))
    # -- accuracy on the shared pairs on the GPU
    import cv2

    sets = load_chairs(_root()) + load_middlebury_rgb(_root())
    res["aee"] = {"DIS medium": {}}
    for ds2, x, y, gt, valid in sets:
        f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(x), _gray8(y), None)
        res["aee"]["DIS medium"][ds2] = aee(f[..., 0], f[..., 1], gt, valid)
    dm = res["aee"]["DIS medium"]
    res["aee_summary"] = {}
    for label, sw, cfg in ([("session 4", old, OLD_CFG), ("session 5 default", new, {})]
                           + [(f"session 5 default, {n}", new, VARIANTS[n]) for n in variants]):
        _apply(sw)
        r = {}
        for ds2, x, y, gt, valid in sets:
            f = inverse_search_flow(cp.asarray(x), cp.asarray(y), device="cuda", **cfg).to_numpy()
            r[ds2] = aee(f.u, f.v, gt, valid)
        res["aee"][label] = r
        s = _vs_dis(r, dm)
        res["aee_summary"][label] = s
        log(f"  AEE [{label}]: mean/DIS {s['mean_ratio']:.4f}, worst {s['worst_ratio']:.3f} ({s['worst_pair']}); "
            + " ".join(f"{k} {x:.3f}" for k, x in r.items()))
        Path(out).write_text(json.dumps(res, indent=1, default=str))
    _apply(new)
    return res


def _upscaled(sets, f=2):
    """Pairs resized by ``f`` (and their flow scaled by it): frames over max_pixels, solved at a
    coarser working level."""
    import cv2

    out = []
    for ds, a, b, gt, valid in sets:
        H, W = a.shape[:2]
        size = (W * f, H * f)
        g = cv2.resize(gt, size, interpolation=cv2.INTER_NEAREST) * f
        m = cv2.resize(valid.astype(np.uint8), size, interpolation=cv2.INTER_NEAREST) > 0
        out.append((f"{ds}x{f}", cv2.resize(a, size, interpolation=cv2.INTER_LINEAR),
                    cv2.resize(b, size, interpolation=cv2.INTER_LINEAR), g, m))
    return out


def fillcheck(out, device="cpu"):
    """FILL_AT_WORK on and off on frames over max_pixels: the shared pairs resized 2x (chairs
    1024x768, motions to ~200 px; Middlebury ~1170x770) and our large set's two 720p pairs: AEE and
    the quality map's AUSE (against the ground truth's error, as benchmarks/flow.py)."""
    import cv2

    from benchmarks.flow import load_large
    from gpu_kernels.flow import search
    from gpu_kernels.flow.metrics import sparsification
    from gpu_kernels.flow.search import inverse_search_flow

    sets = _upscaled(load_chairs(_root()) + load_middlebury_rgb(_root()))
    sets += [x for x in load_large(_root()) if "720p" in x[0]]
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": device, "pairs": {}}
    for ds, a, b, gt, valid in sets:
        f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)
        r = {"shape": list(a.shape[:2]), "DIS medium": aee(f[..., 0], f[..., 1], gt, valid)}
        for on in (False, True):
            search.FILL_AT_WORK = on
            if device != "cpu":
                from gpu_kernels.flow import _plan

                _plan.clear()               # (a plan's key does not hold the switch)
            x, y = (a, b) if device == "cpu" else (__import__("cupy").asarray(a), __import__("cupy").asarray(b))
            fl = inverse_search_flow(x, y, device=device).to_numpy()
            e = np.hypot(fl.u - gt[..., 0], fl.v - gt[..., 1])
            r[f"fill at work {on}"] = {"aee": aee(fl.u, fl.v, gt, valid),
                                       "ause": float(sparsification(e, fl.quality, valid=valid)["ause"])}
        search.FILL_AT_WORK = True
        res["pairs"][ds] = r
        log(ds, r)
        Path(out).write_text(json.dumps(res, indent=1, default=str))
    for on in (False, True):
        k = f"fill at work {on}"
        res[k] = {"mean_aee": float(np.mean([r[k]["aee"] for r in res["pairs"].values()])),
                  "mean_ause": float(np.mean([r[k]["ause"] for r in res["pairs"].values()]))}
        log(k, res[k])
    Path(out).write_text(json.dumps(res, indent=1, default=str))
    return res


def d2(out, old_src="flow_search_old.cu"):
    """Review item D2 (is_template and is_step_warp share is_sample): the patch kernels of the
    current flow_search.cu against ``old_src`` (the file before, copied beside it for the run) on
    the GPU, at the 1080p pair's working level and a coarse level, both kernels per step: bit for bit."""
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow import search
    from gpu_kernels.ops.color import _gray

    be = get_backend("cuda")
    _, a, b = _pair((1920, 1080))
    res = {"device": device_name(), "cases": {}}
    with be.activate():
        pyr = search.pyramids(be, _gray(be, cp.asarray(a)), _gray(be, cp.asarray(b)), None)
        for lev in (pyr.work, pyr.coarsest - 1):
            I1, I2 = pyr.p1[lev], pyr.p2[lev]
            u0 = cp.full(I1.shape, 1.5, cp.float32)
            for warp in (False, True):
                outs = []
                for src in ("flow_search.cu", old_src):
                    search._SRC, search.STEP_WARP = src, warp
                    outs.append([x.get() for x in search.coarse_match(be, I1, I2, u0, -u0, radius=2)])
                search._SRC, search.STEP_WARP = "flow_search.cu", True
                same = all(np.array_equal(x, y) for x, y in zip(*outs, strict=True))
                res["cases"][f"level {lev} {I1.shape}, warp steps {warp}"] = same
                log(f"  D2 level {lev} {I1.shape} warp steps {warp}: bitwise equal {same}")
    Path(out).write_text(json.dumps(res, indent=1, default=str))
    return res


def cpu640(out, reps=5, root=None):
    """The default on the CPU at 640x480 (FlyingChairs 0 resized): one warm-up, then ``reps`` runs,
    wall and CPU seconds (min, median). ``root``: the ``gpu_kernels`` of another tree instead
    (``git archive defe79b gpu_kernels | tar -x -C OLD``, then ``cpu640 --root OLD``)."""
    import importlib

    import cv2

    if root:
        for m in [m for m in sys.modules if m == "gpu_kernels" or m.startswith("gpu_kernels.")]:
            del sys.modules[m]
        sys.path.insert(0, str(Path(root).resolve()))
    S = importlib.import_module("gpu_kernels.flow.search")
    if root and not S.__file__.startswith(str(Path(root).resolve())):
        raise SystemExit(f"gpu_kernels came from {S.__file__}, not {root}")

    _, a, b, _, _ = load_chairs(_root())[0]
    a, b = (cv2.resize(x, (640, 480), interpolation=cv2.INTER_LINEAR) for x in (a, b))
    S.inverse_search_flow(a, b, device="cpu")
    w, c = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        S.inverse_search_flow(a, b, device="cpu")
        w.append(time.perf_counter() - t0)
        c.append(time.process_time() - c0)
    res = {"code": S.__file__, "wall_min": min(w), "wall_median": float(np.median(w)), "cpu_min": min(c),
           "cpu_median": float(np.median(c)), "load": os.getloadavg()[0],
           "threads": os.environ.get("NUMBA_NUM_THREADS", "default")}
    log(res)
    Path(out).write_text(json.dumps(res, indent=1))
    return res


def tune(out, names=None, which="shared", device="cpu"):
    """The AEE of each schedule of :data:`VARIANTS` on the ten shared pairs (``which = "shared"``), on
    our own large-motion set (``"large"``, benchmarks/flow.py's ``load_large``) or on the held-out set
    (``"held"``, ``load_heldout``: never tuned on), as ratios to DIS medium (mean of the AEEs over the mean of DIS's, and the worst
    pair's ratio)."""
    import cv2

    from benchmarks.flow import load_heldout, load_large
    from gpu_kernels.flow.search import inverse_search_flow

    sets = {"shared": lambda: load_chairs(_root()) + load_middlebury_rgb(_root()), "large": lambda: load_large(_root()),
            "held": load_heldout}[which]()
    dis = {}
    for ds, a, b, gt, valid in sets:
        f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)
        dis[ds] = aee(f[..., 0], f[..., 1], gt, valid)
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "dis": dis, "cfgs": {}}
    if Path(out).exists():
        res["cfgs"] = json.loads(Path(out).read_text()).get("cfgs", {})
    for name, cfg in VARIANTS.items():
        if (names and name not in names) or name in res["cfgs"]:
            continue
        r = {}
        c0 = time.process_time()
        for ds, x, y, gt, valid in sets:
            if device != "cpu":
                import cupy as cp

                x, y = cp.asarray(x), cp.asarray(y)
            f = inverse_search_flow(x, y, device=device, **cfg).to_numpy()
            r[ds] = aee(f.u, f.v, gt, valid)
        res["cfgs"][name] = {"cfg": {k: list(x) if isinstance(x, tuple) else x for k, x in cfg.items()},
                             "cpu_s_10_pairs": round(time.process_time() - c0, 2), "aee": r, **_vs_dis(r, dis)}
        e = res["cfgs"][name]
        log(f"  {name}: mean/DIS {e['mean_ratio']:.4f}, worst {e['worst_ratio']:.3f} ({e['worst_pair']})")
        Path(out).write_text(json.dumps(res, indent=1, default=str))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("gpu", "tune", "fillcheck", "d2", "cpu640"))
    ap.add_argument("--out", default="flow_session5.json")
    ap.add_argument("--variants", default="", help="gpu: ';'-separated names of VARIANTS also timed and scored")
    ap.add_argument("--names", default="", help="tune: ';'-separated names of VARIANTS (default: all)")
    ap.add_argument("--root", default=None, help="cpu640: time the gpu_kernels of this tree")
    ap.add_argument("--quick", action="store_true", help="gpu: the end-to-end times only")
    ap.add_argument("--device", default="cpu", help="fillcheck, tune: cpu or cuda")
    ap.add_argument("--set", default="shared", choices=("shared", "large", "held"),
                    help="tune: the pairs scored (held: benchmarks/flow.py's held-out set, never tuned on)")
    args = ap.parse_args(argv)
    if args.what == "gpu":
        gpu(args.out, variants=[n for n in args.variants.split(";") if n], quick=args.quick)
    elif args.what == "fillcheck":
        fillcheck(args.out, device=args.device)
    elif args.what == "d2":
        d2(args.out)
    elif args.what == "cpu640":
        cpu640(args.out, root=args.root)
    else:
        tune(args.out, names=[n for n in args.names.split(";") if n] or None, which=args.set, device=args.device)


if __name__ == "__main__":
    main()
