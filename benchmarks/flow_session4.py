"""Issue 25, session 4: the default method's speed, per stage, on the GPU at 1080p and on 2 CPU cores at 640x480.

Subcommands (each writes a JSON with ``--out``):

* ``gpu``: on a CUDA device, a FlyingChairs pair resized to 1920x1080. DIS ultrafast / fast / medium
  on the host's cores, then the default end to end (one CUDA-graph plan, as a user's call runs) under
  kernel settings (the session-3 kernels: per-iteration TV-L1 launches and the one-thread-per-row
  fill; the tiled iterations; the coalesced fill; tile sizes), then each stage of the default
  captured and replayed as a graph of its own (pyramids, forward solve, backward solve, fill,
  quality map) and the TV-L1 of each level, and the AEE of the shared pairs on the GPU with the
  old and new kernels (the same arithmetic: equal to rounding).
* ``cpu``: the default at 640x480 (a FlyingChairs pair resized) on the CPU path, CPU-seconds and wall
  time per stage (run it under ``taskset -c 0,1`` with OMP_NUM_THREADS=2 for the 2-core figure).

Usage::

    python benchmarks/flow_session4.py gpu --out OUT.json
    OMP_NUM_THREADS=2 taskset -c 0,1 python benchmarks/flow_session4.py cpu --out OUT.json
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
from benchmarks.flow import _gray8, aee, cpu_time, gpu_time, load_chairs, load_middlebury_rgb, log  # noqa: E402

#: kernel settings compared end to end at 1080p: (refine.TILE_ITERS, TILE_SIDE, TILE_ROWS,
#: refine.SMALL_LEVEL, search.RF_COALESCED, search.INIT_WARP, search.STEP_WARP)
NEW = "new default: tiles 7 it 32x32 x 16 rows, coalesced fill, warp init, warp steps"
OLD = "session 3 kernels (per-iteration launches, row-per-thread fill, thread-per-patch init and steps)"
SETTINGS = {
    OLD: (0, 64, 16, 0, False, False, False),
    NEW: (7, 32, 16, 0, True, True, True),
    "new default without warp steps (the call-3 default)": (7, 32, 16, 0, True, True, False),
    "new default without tiles": (0, 32, 16, 0, True, True, True),
    "tiles 7 it 32x32 x 32 rows (1 px a thread)": (7, 32, 32, 0, True, True, True),
    "tiles 10 it 32x32 x 16 rows": (10, 32, 16, 0, True, True, True),
    "tiles 4 it 32x32 x 16 rows": (4, 32, 16, 0, True, True, True),
    "tiles 10 it 48x48 x 16 rows": (10, 48, 16, 0, True, True, True),
}


def _apply(setting):
    from gpu_kernels.flow import _plan, refine, search

    refine.TILE_ITERS, refine.TILE_SIDE, refine.TILE_ROWS, refine.SMALL_LEVEL, search.RF_COALESCED, \
        search.INIT_WARP, search.STEP_WARP = setting
    _plan.clear()


def _vs_dis(r: dict, dis: dict) -> dict:
    """AEEs ``r`` (per pair) against DIS medium's ``dis``: the ratio of the means, the worst pair's
    ratio and that pair."""
    ratio = {k: r[k] / dis[k] for k in r}
    return {"mean_ratio": float(np.mean(list(r.values())) / np.mean(list(dis.values()))),
            "worst_ratio": float(max(ratio.values())), "worst_pair": max(ratio, key=ratio.get)}


def _root() -> Path:
    """The shared data (GPULAB_SHARED_DATA, default ../shared/data beside the repository)."""
    return Path(os.environ.get("GPULAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def _pair(size):
    import cv2

    ds, a, b, _, _ = load_chairs(_root())[0]
    return ds, cv2.resize(a, size, interpolation=cv2.INTER_LINEAR), cv2.resize(b, size, interpolation=cv2.INTER_LINEAR)


def _dis(a, b):
    import cv2

    out = {}
    for name, preset in (("DIS ultrafast", cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST),
                         ("DIS fast", cv2.DISOPTICAL_FLOW_PRESET_FAST), ("DIS medium", cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)):
        ga, gb = _gray8(a), _gray8(b)
        out[name] = round(1e3 * cpu_time(lambda p=preset: cv2.DISOpticalFlow_create(p).calc(ga, gb, None), repeat=5), 2)
    return out


def _stage_graph_ms(be, key, build, repeat=20):
    """``build()`` captured as a graph plan of its own (a dummy input) and replayed: its kernels' time."""
    from gpu_kernels.flow import _plan, search

    cp = be.xp
    dummy = cp.zeros(1, cp.float32)
    def b(_d):
        r = build()
        if isinstance(r, search.Pyramids):
            return (r.p1[0],)
        return tuple(r) if isinstance(r, tuple | list) else (r,)

    fn = lambda: _plan.run(be, ("s4-stage",) + key, [dummy], b)  # noqa: E731
    return round(1e3 * gpu_time(fn, repeat=repeat, warmup=2), 3)


def gpu(out, only=None):
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow import _plan, search
    from gpu_kernels.flow.search import inverse_search_flow
    from gpu_kernels.ops.color import _gray

    res = {"device": device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "host_cores": os.cpu_count()}
    ds, a, b = _pair((1920, 1080))
    res["pair"] = f"{ds} resized to 1920x1080"
    res["dis_ms"] = _dis(a, b)
    log(f"DIS at 1080p ({os.cpu_count()} host cores): {res['dis_ms']}")
    dis = res["dis_ms"]["DIS medium"]
    da, db = cp.asarray(a), cp.asarray(b)
    res["end_to_end_ms"] = {}
    base = None
    for name, st in SETTINGS.items():
        if only and name not in only:
            continue
        _apply(st)
        try:
            t = 1e3 * gpu_time(lambda: inverse_search_flow(da, db, device="cuda"), repeat=15, warmup=2)
            r = inverse_search_flow(da, db, device="cuda").to_numpy()
            if base is None:
                base = r
            d = np.hypot(r.u - base.u, r.v - base.v)
            res["end_to_end_ms"][name] = {"ms": round(t, 2), "x DIS medium": round(dis / t, 2),
                                          "max |flow - session 3|": float(d.max()),
                                          "mean |flow - session 3|": float(d.mean()),
                                          "fallback": _plan.LAST_FALLBACK}
            log(f"  {name}: {t:.2f} ms = {dis / t:.1f}x DIS medium; |d| mean {d.mean():.2e} max {d.max():.2e}")
        except Exception as exc:  # noqa: BLE001 - record and go on
            res["end_to_end_ms"][name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            log(f"  {name}: FAILED {exc}")
        Path(out).write_text(json.dumps(res, indent=1, default=str))
    for name, cfg in (("fill 0", {"fill": 0}), ("quality ncc, fill 0", {"quality": "ncc", "fill": 0}),
                      ("plans off (plain launches)", None)):
        _apply(SETTINGS[NEW])
        if cfg is None:
            _plan.ENABLED = False
            t = 1e3 * gpu_time(lambda: inverse_search_flow(da, db, device="cuda"), repeat=5)
            _plan.ENABLED = True
        else:
            t = 1e3 * gpu_time(lambda c=cfg: inverse_search_flow(da, db, device="cuda", **c), repeat=15, warmup=2)
        res["end_to_end_ms"][f"new default, {name}"] = {"ms": round(t, 2), "x DIS medium": round(dis / t, 2)}
        log(f"  new default, {name}: {t:.2f} ms")
    # -- per stage, each captured on its own (new default and session 3 kernels)
    be = get_backend("cuda")
    res["stages_ms"] = {}
    for label, st in (("new default", SETTINGS[NEW]),
                      ("session 3 kernels", SETTINGS[OLD])):
        _apply(st)
        prm = search.search_params()
        kw = {k: prm[k] for k in search._SOLVE}
        with be.activate():
            g1, g2 = _gray(be, da), _gray(be, db)
            pyr = search.pyramids(be, g1, g2, None, patch=prm["patch"], blur=prm["blur"], max_pixels=prm["max_pixels"])
            u, v = search.solve(be, pyr, **kw)
            bk = search.solve(be, pyr, backward=1, **kw)
            st_ms = {}
            st_ms["grey + pyramids"] = _stage_graph_ms(be, (label, "pyr"), lambda: search.pyramids(
                be, _gray(be, da), _gray(be, db), None, patch=prm["patch"], blur=prm["blur"], max_pixels=prm["max_pixels"]))
            st_ms["forward solve"] = _stage_graph_ms(be, (label, "fw"), lambda: search.solve(be, pyr, **kw))
            st_ms["backward solve (one level coarser)"] = _stage_graph_ms(
                be, (label, "bw"), lambda: search.solve(be, pyr, backward=1, **kw))
            st_ms["fill"] = _stage_graph_ms(be, (label, "fill"), lambda: search.fill_inconsistent(
                be, pyr.g1, pyr.g2, u, v, bk, threshold=search.DEFAULT_FILL))
            st_ms["quality map"] = _stage_graph_ms(be, (label, "qm"), lambda: search.quality_map(
                be, pyr.g1, pyr.g2, u, v, None, backward=bk))
            st_ms["edge_aware_fill alone"] = _stage_graph_ms(be, (label, "eaf"), lambda: search.edge_aware_fill(
                be, pyr.g1, u, v, (u > 0).astype(cp.float32)))
            for lev in range(pyr.work, pyr.coarsest + 1):
                I1, I2 = pyr.p1[lev], pyr.p2[lev]
                uu = cp.zeros(I1.shape, cp.float32)
                st_ms[f"TV-L1 level {lev} {I1.shape[1]}x{I1.shape[0]} (8 warps x 20)"] = _stage_graph_ms(
                    be, (label, "tv", lev), lambda I1=I1, I2=I2, uu=uu: search.refine_level(
                        be, I1, I2, uu.copy(), uu.copy(), warps=8, iters=20, lam=prm["lam"], median=prm["median"],
                        edge=prm["edge"], occ=prm["occ"]))
                pu = cp.zeros(I1.shape, cp.float32)
                rad = prm["radius"] if lev > pyr.coarsest - prm["radius_levels"] else 0
                st_ms[f"match level {lev} (radius {rad})"] = _stage_graph_ms(
                    be, (label, "mr", lev), lambda I1=I1, I2=I2, pu=pu, rad=rad: search.coarse_match(
                        be, I1, I2, pu, pu, radius=rad))
                st_ms[f"match+densify level {lev}"] = _stage_graph_ms(
                    be, (label, "m", lev), lambda I1=I1, I2=I2, pu=pu: search.densify(
                        be, I1, I2, *search.coarse_match(be, I1, I2, pu, pu, radius=0)[:2],
                        search.coarse_match(be, I1, I2, pu, pu, radius=0)[3], pu, pu))
        res["stages_ms"][label] = st_ms
        log(f"  stages [{label}]: " + "; ".join(f"{k} {x}" for k, x in st_ms.items()))
        Path(out).write_text(json.dumps(res, indent=1, default=str))
    # -- accuracy on the shared pairs on the GPU, old and new kernels (the same arithmetic)
    sets = load_chairs(_root()) + load_middlebury_rgb(_root())
    import cv2

    res["aee"] = {}
    for label, st in (("new default", SETTINGS[NEW]),
                      ("session 3 kernels", SETTINGS[OLD])):
        _apply(st)
        res["aee"][label] = {}
        for ds2, x, y, gt, valid in sets:
            r = inverse_search_flow(cp.asarray(x), cp.asarray(y), device="cuda").to_numpy()
            res["aee"][label][ds2] = aee(r.u, r.v, gt, valid)
    res["aee"]["DIS medium"] = {}
    for ds2, x, y, gt, valid in sets:
        f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(x), _gray8(y), None)
        res["aee"]["DIS medium"][ds2] = aee(f[..., 0], f[..., 1], gt, valid)
    for label, d in res["aee"].items():
        log(f"  AEE [{label}]: mean {np.mean(list(d.values())):.4f} " + " ".join(f"{k} {x:.3f}" for k, x in d.items()))
    _apply(SETTINGS[NEW])
    Path(out).write_text(json.dumps(res, indent=1, default=str))
    return res


def cpu(out, size=(640, 480), cfgs=None):
    """The CPU path at 640x480: wall and CPU seconds of the default and of ``cfgs``, and per stage."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow import search
    from gpu_kernels.flow.search import inverse_search_flow
    from gpu_kernels.ops.color import _gray

    ds, a, b = _pair(size)
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "pair": f"{ds} resized to {size}",
           "omp": os.environ.get("OMP_NUM_THREADS"), "affinity": sorted(os.sched_getaffinity(0)), "runs": {}}
    import cv2

    ga, gb = _gray8(a), _gray8(b)
    res["dis_medium_s"] = cpu_time(lambda: cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(
        ga, gb, None), repeat=5)
    for name, cfg in ({"default": {}} | (cfgs or {})).items():
        inverse_search_flow(a, b, device="cpu", **cfg)
        w, c = [], []
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            inverse_search_flow(a, b, device="cpu", **cfg)
            w.append(time.perf_counter() - t0)
            c.append(time.process_time() - c0)
        res["runs"][name] = {"wall_s": round(float(np.median(w)), 3), "cpu_s": round(float(np.median(c)), 3)}
        log(f"  CPU {name}: wall {np.median(w):.3f} s, CPU {np.median(c):.3f} s")
    be = get_backend("cpu")
    prm = search.search_params()
    kw = {k: prm[k] for k in search._SOLVE}
    st = {}

    def tm(name, fn):
        t0, c0 = time.perf_counter(), time.process_time()
        r = fn()
        st[name] = {"wall_s": round(time.perf_counter() - t0, 3), "cpu_s": round(time.process_time() - c0, 3)}
        return r

    pyr = tm("grey + pyramids", lambda: search.pyramids(be, _gray(be, a), _gray(be, b), None, patch=prm["patch"],
                                                         blur=prm["blur"], max_pixels=prm["max_pixels"]))
    u, v = tm("forward solve", lambda: search.solve(be, pyr, **kw))
    bk = tm("backward solve", lambda: search.solve(be, pyr, backward=1, **kw))
    uf, vf = tm("fill", lambda: search.fill_inconsistent(be, pyr.g1, pyr.g2, u, v, bk, threshold=prm["fill"]))
    tm("quality map", lambda: search.quality_map(be, pyr.g1, pyr.g2, uf, vf, None, backward=bk))
    for lev in range(pyr.work, pyr.coarsest + 1):
        I1, I2 = pyr.p1[lev], pyr.p2[lev]
        z = np.zeros(I1.shape, np.float32)
        tm(f"TV-L1 level {lev} {I1.shape[1]}x{I1.shape[0]}", lambda I1=I1, I2=I2, z=z: search.refine_level(
            be, I1, I2, z.copy(), z.copy(), warps=8, iters=20, lam=prm["lam"], median=prm["median"], edge=prm["edge"],
            occ=prm["occ"]))
        tm(f"match level {lev}", lambda I1=I1, I2=I2, z=z: search.coarse_match(be, I1, I2, z, z, radius=0))
    res["stages"] = st
    log("  stages: " + "; ".join(f"{k} {x['cpu_s']}" for k, x in st.items()))
    Path(out).write_text(json.dumps(res, indent=1, default=str))
    return res


#: CPU schedules scored by ``cpu-tune`` (inverse_search_flow keywords)
CPU_CFGS = {
    "default": {},
    "A: fpl1, warps (2,4), it 10, fb l2 w2 i10": dict(finest_patch_level=1, warps=(2, 4), tv_iters=10, fb_level=2,
                                                     fb_warps=(2,), fb_iters=10),
    "B: fpl1, warps (3,6), it 10, fb l2 w2 i10": dict(finest_patch_level=1, warps=(3, 6), tv_iters=10, fb_level=2,
                                                     fb_warps=(2,), fb_iters=10),
    "C: fpl0, warps (2,4), it 10, fb l2 w2 i10": dict(warps=(2, 4), tv_iters=10, fb_level=2, fb_warps=(2,),
                                                     fb_iters=10),
    "D: fpl1, warps (2,8), it 10, fb l2 w2 i10": dict(finest_patch_level=1, warps=(2, 8), tv_iters=10, fb_level=2,
                                                     fb_warps=(2,), fb_iters=10),
    "E: fpl1, warps (4,4), it 10, fb l1 w2 i10": dict(finest_patch_level=1, warps=(4, 4), tv_iters=10, fb_level=1,
                                                     fb_warps=(2,), fb_iters=10),
    "G: the CLI's --search-level 1 --warps 4 --iters 10": dict(finest_patch_level=1, warps=(4,), tv_iters=10),
    "H: fpl1, warps 2, it 10": dict(finest_patch_level=1, warps=(2,), tv_iters=10),
    "I: fpl1, warps (2,4), it 10": dict(finest_patch_level=1, warps=(2, 4), tv_iters=10),
    "K: fpl1, warps 3, it 10": dict(finest_patch_level=1, warps=(3,), tv_iters=10),
    "L: fpl2, warps 4, it 10": dict(finest_patch_level=2, warps=(4,), tv_iters=10),
    "F: fpl1, warps (2,4), it 20, fb l2 w2 i10": dict(finest_patch_level=1, warps=(2, 4), tv_iters=20, fb_level=2,
                                                     fb_warps=(2,), fb_iters=10),
}


def cpu_tune(out, names=None):
    """Each CPU schedule: CPU-seconds at 640x480 (one run after a warm-up) and AEE on the ten shared
    pairs against DIS medium (mean ratio, worst pair), and the leave-one-pair-out choice among the
    schedules that fit ``CPU_BUDGET_S`` (the one with the best mean ratio on the other nine,
    scored on the held-out pair)."""
    import cv2

    from gpu_kernels.flow.search import inverse_search_flow

    sets = load_chairs(_root()) + load_middlebury_rgb(_root())
    dis = {}
    for ds, a, b, gt, valid in sets:
        f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)
        dis[ds] = aee(f[..., 0], f[..., 1], gt, valid)
    _, a, b = _pair((640, 480))
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "dis": dis, "cfgs": {}}
    if Path(out).exists():
        res["cfgs"] = json.loads(Path(out).read_text()).get("cfgs", {})
    for name, cfg in CPU_CFGS.items():
        if (names and name.split(":")[0] not in names) or name in res["cfgs"]:
            continue
        inverse_search_flow(a[:96, :128], b[:96, :128], device="cpu", **cfg)
        c0 = time.process_time()
        inverse_search_flow(a, b, device="cpu", **cfg)
        cs = time.process_time() - c0
        r = {}
        for ds, x, y, gt, valid in sets:
            f = inverse_search_flow(x, y, device="cpu", **cfg)
            r[ds] = aee(f.u, f.v, gt, valid)
        res["cfgs"][name] = {"cfg": {k: list(x) if isinstance(x, tuple) else x for k, x in cfg.items()},
                             "cpu_s_640x480": round(cs, 3), "aee": r, **_vs_dis(r, dis)}
        e = res["cfgs"][name]
        log(f"  {name}: {cs:.2f} CPU-s, mean/DIS {e['mean_ratio']:.3f}, worst {e['worst_ratio']:.2f} ({e['worst_pair']})")
        Path(out).write_text(json.dumps(res, indent=1, default=str))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("gpu", "cpu", "cpu-tune"))
    ap.add_argument("--names", default=None, help="cpu-tune: comma-separated schedule letters")
    ap.add_argument("--out", default="flow_session4.json")
    ap.add_argument("--quick", action="store_true", help="gpu: only the session-3 and the new default settings")
    ap.add_argument("--cfgs", default=None, help="cpu: JSON dict name -> inverse_search_flow keywords")
    args = ap.parse_args(argv)
    if args.what == "gpu":
        gpu(args.out, only=[NEW, OLD] if args.quick else None)
    elif args.what == "cpu-tune":
        cpu_tune(args.out, names=args.names.split(",") if args.names else None)
    else:
        cpu(args.out, cfgs=json.loads(args.cfgs) if args.cfgs else None)


if __name__ == "__main__":
    main()
