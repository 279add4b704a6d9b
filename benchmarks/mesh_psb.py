"""Quality of gpu_kernels.mesh.segment_mesh on the Princeton Segmentation Benchmark subset.

The Princeton protocol: for each mesh and each human segmentation of it, k is that
segmentation's segment count; segment_mesh runs with that k and its labels are compared
with *every* human segmentation of the mesh; the scores are averaged per mesh, then over
the meshes. Metrics (gpu_kernels.mesh.metrics, as the benchmark's own code computes them):
Rand Index error, Hamming distance (Rm, Rf), GCE, LCE, cut discrepancy.

Usage::

    python benchmarks/mesh_psb.py                       # defaults, all 19 meshes
    python benchmarks/mesh_psb.py --max-faces 4000 --delta 0.2 --eta-convex 0.1
    python benchmarks/mesh_psb.py --grid                # parameter sweep (uses a cache of APSP
                                                        # matrices per weight set; same pipeline)
    python benchmarks/mesh_psb.py --json out/psb.json --markdown out/psb.md

The data live in ../shared/data/psb relative to the repository root (or --data).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import itertools
import json
import multiprocessing
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpu_kernels.backend import get_backend  # noqa: E402
from gpu_kernels.mesh import segment as _segment  # noqa: E402
from gpu_kernels.mesh.metrics import compare_segmentations  # noqa: E402
from gpu_kernels.mesh.segment import segment_mesh  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "psb"
CATEGORIES = {1: "human", 21: "cup", 41: "glasses", 61: "airplane", 81: "ant", 101: "chair",
              121: "octopus", 141: "table", 161: "teddy", 181: "hand", 201: "plier",
              221: "fish", 241: "bird", 281: "armadillo", 301: "bust", 321: "mech",
              341: "bearing", 361: "vase", 381: "fourleg"}
METRICS = ("RI", "HD", "Rm", "Rf", "GCE", "LCE", "CD")


# --------------------------------------------------------------------------- data
def load_off(path: Path):
    tok = path.read_text().split()
    if tok[0] != "OFF":
        raise ValueError(f"{path} is not an OFF file")
    nv, nf = int(tok[1]), int(tok[2])
    v = np.asarray(tok[4:4 + 3 * nv], dtype=np.float64).reshape(nv, 3)
    rest = np.asarray(tok[4 + 3 * nv:4 + 3 * nv + 4 * nf], dtype=np.int64).reshape(nf, 4)
    if np.any(rest[:, 0] != 3):
        raise ValueError(f"{path}: only triangle meshes are supported")
    return v, rest[:, 1:]


def load_human(data: Path, mesh_id: int):
    d = data / "seg" / str(mesh_id)
    segs = []
    for p in sorted(d.glob(f"{mesh_id}_*.seg"), key=lambda q: int(q.stem.split("_")[1])):
        segs.append(np.loadtxt(p, dtype=np.int64).reshape(-1))
    return segs


def mesh_ids(data: Path):
    return sorted(int(p.stem) for p in (data / "off").glob("*.off"))


# --------------------------------------------------------------------------- APSP cache
_cache: dict = {}


def _install_apsp_cache():
    """Memoise segment._apsp by a hash of the graph: the pipeline is unchanged, but the
    several k of one mesh (and the grid's shared weight sets) reuse one distance matrix."""
    orig = _segment._apsp

    def cached(n, src, dst, w, method, backend, progress):
        h = hashlib.sha1()
        for a in (np.asarray(src), np.asarray(dst), np.asarray(w, dtype=np.float32)):
            h.update(np.ascontiguousarray(a).tobytes())
        key = (n, method, backend.label, h.hexdigest())
        D = _cache.get(key)
        if D is None:
            if len(_cache) >= 2:
                _cache.pop(next(iter(_cache)))
            D = orig(n, src, dst, w, method, backend, progress)
            _cache[key] = D
        return D

    _segment._apsp = cached


# --------------------------------------------------------------------------- evaluation
def evaluate_mesh(data: Path, mesh_id: int, params: dict, max_faces: int | None, device: str):
    v, f = load_off(data / "off" / f"{mesh_id}.off")
    humans = load_human(data, mesh_id)
    ks = sorted({int(np.unique(h).size) for h in humans})
    by_k = {}
    times = {}
    for k in ks:
        t0 = time.perf_counter()
        seg = segment_mesh(v, f, k=k, max_faces=max_faces, device=device, **params)
        times[k] = time.perf_counter() - t0
        by_k[k] = seg
    cmp = {k: compare_segmentations(v, f, by_k[k].labels, humans) for k in ks}
    rows = [cmp[int(np.unique(h).size)] for h in humans]
    res = {key: float(np.mean([r[key] for r in rows if r[key] is not None]))
           for key in METRICS}
    seg0 = by_k[ks[0]]
    res.update({"mesh": mesh_id, "category": CATEGORIES.get(mesh_id, "?"), "faces": int(f.shape[0]),
                "faces_segmented": seg0.info.get("n_faces_segmented"), "n_humans": len(humans),
                "ks": ks, "ks_returned": [int(by_k[k].k) for k in ks], "seconds_per_run": float(np.mean(list(times.values()))),
                "first_run_seconds": float(times[ks[0]]),
                "params_used": {kk: seg0.info["params"][kk] for kk in ("delta", "eta_convex", "epsilon")},
                "warnings": sorted({w for s in by_k.values() for w in s.info["warnings"]})})
    return res


def _worker(args):
    data, mesh_id, params, max_faces, device = args
    _install_apsp_cache()
    if os.environ.get("PSB_MERGE_CRITERION"):  # tuning experiments only
        from gpu_kernels.mesh import boundary

        boundary.MERGE_CRITERION = os.environ["PSB_MERGE_CRITERION"]
    return evaluate_mesh(Path(data), mesh_id, params, max_faces, device)


def run(data: Path, ids, params: dict, max_faces, device, jobs: int, verbose=True):
    tasks = [(str(data), i, params, max_faces, device) for i in ids]
    out = []
    if jobs > 1:
        # spawn: the parent may already hold a CUDA context, which a forked child cannot use
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
            for r in ex.map(_worker, tasks):
                out.append(r)
                if verbose:
                    _print_row(r)
    else:
        for t in tasks:
            r = _worker(t)
            out.append(r)
            if verbose:
                _print_row(r)
    return out


def _print_row(r):
    cd = f"{r['CD']:.3f}" if r["CD"] is not None else "  -  "
    print(f"{r['mesh']:>4} {r['category']:<10} F={r['faces']:>6} ks={r['ks']!s:<16} "
          f"RI={r['RI']:.3f} HD={r['HD']:.3f} Rm={r['Rm']:.3f} Rf={r['Rf']:.3f} "
          f"GCE={r['GCE']:.3f} LCE={r['LCE']:.3f} CD={cd} t={r['seconds_per_run']:.2f}s",
          flush=True)


def summary(rows):
    return {key: float(np.mean([r[key] for r in rows if r[key] is not None])) for key in METRICS}


def markdown(rows, avg, header: str) -> str:
    lines = [header, "",
             "| mesh | category | faces | segmented | k (human) | RI err | HD | Rm | Rf | GCE | LCE | CD "
             "| s first run | s/run |",
             "|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cd = f"{r['CD']:.3f}" if r["CD"] is not None else "-"
        lines.append(f"| {r['mesh']} | {r['category']} | {r['faces']} | {r['faces_segmented']} | "
                     f"{','.join(map(str, r['ks']))} | "
                     f"{r['RI']:.3f} | {r['HD']:.3f} | {r['Rm']:.3f} | {r['Rf']:.3f} | {r['GCE']:.3f} | "
                     f"{r['LCE']:.3f} | {cd} | {r['first_run_seconds']:.2f} | {r['seconds_per_run']:.2f} |")
    lines.append(f"| **average** | | | | | **{avg['RI']:.3f}** | {avg['HD']:.3f} | {avg['Rm']:.3f} | "
                 f"{avg['Rf']:.3f} | {avg['GCE']:.3f} | {avg['LCE']:.3f} | {avg['CD']:.3f} | | |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--meshes", type=str, default="", help="comma-separated mesh ids (default all)")
    ap.add_argument("--max-faces", type=int, default=4000,
                    help="simplify larger meshes to this many faces (labels carried back); 0: full resolution")
    ap.add_argument("--delta", type=float, default=None)
    ap.add_argument("--eta-convex", type=float, default=None)
    ap.add_argument("--epsilon", type=float, default=None)
    ap.add_argument("--max-iter", type=int, default=None)
    ap.add_argument("--update-power", type=float, default=None)
    ap.add_argument("--grid-power", default="")
    ap.add_argument("--oversegment", default=None,
                    help="factor, or comma-separated factors to choose from per mesh (label-free)")
    ap.add_argument("--apsp", default=None, help="APSP method (default: auto)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jobs", type=int, default=max(1, min(os.cpu_count() or 1, 2)))
    ap.add_argument("--grid", action="store_true", help="sweep delta x eta_convex (x epsilon)")
    ap.add_argument("--grid-delta", default="0.0,0.2,0.5,0.8")
    ap.add_argument("--grid-eta", default="0.05,0.1,0.2,0.5")
    ap.add_argument("--grid-epsilon", default="")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--markdown", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.max_faces is not None and args.max_faces <= 0:
        args.max_faces = None
    if not args.data.is_dir():
        print(f"no PSB data at {args.data}", file=sys.stderr)
        return 2
    ids = [int(x) for x in args.meshes.split(",") if x] or mesh_ids(args.data)
    be = get_backend(args.device)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    base = {}
    if args.delta is not None:
        base["delta"] = args.delta
    if args.eta_convex is not None:
        base["eta_convex"] = args.eta_convex
    if args.epsilon is not None:
        base["epsilon"] = args.epsilon
    if args.max_iter is not None:
        base["max_iter"] = args.max_iter
    if args.update_power is not None:
        base["update_power"] = args.update_power
    if args.oversegment is not None:
        fs = [float(x) for x in args.oversegment.split(",") if x]
        base["oversegment"] = fs[0] if len(fs) == 1 else tuple(fs)
    if args.apsp is not None:
        base["apsp_method"] = args.apsp
    results = {"date": stamp, "device": be.label, "host": platform.node(),
               "command": "python benchmarks/mesh_psb.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               "max_faces": args.max_faces}
    if args.grid:
        deltas = [float(x) for x in args.grid_delta.split(",")]
        etas = [float(x) for x in args.grid_eta.split(",")]
        epss = [float(x) for x in args.grid_epsilon.split(",") if x] or [base.get("epsilon")]
        pows = [float(x) for x in args.grid_power.split(",") if x] or [base.get("update_power")]
        grid = []
        for d, e, eps, pw in itertools.product(deltas, etas, epss, pows):
            p = dict(base, delta=d, eta_convex=e)
            if eps is not None:
                p["epsilon"] = eps
            if pw is not None:
                p["update_power"] = pw
            t0 = time.perf_counter()
            rows = run(args.data, ids, p, args.max_faces, args.device, args.jobs, verbose=False)
            avg = summary(rows)
            grid.append({"params": p, "avg": avg, "per_mesh": {r["mesh"]: r["RI"] for r in rows},
                         "seconds": time.perf_counter() - t0})
            print(f"delta={d:.2f} eta_convex={e:.2f} eps={eps} power={pw} -> RI={avg['RI']:.4f} "
                  f"HD={avg['HD']:.3f} GCE={avg['GCE']:.3f} CD={avg['CD']:.3f} "
                  f"({time.perf_counter() - t0:.0f}s)", flush=True)
        results["grid"] = grid
    else:
        t0 = time.perf_counter()
        rows = run(args.data, ids, base, args.max_faces, args.device, args.jobs)
        avg = summary(rows)
        results.update({"params": base or "defaults", "per_mesh": rows, "average": avg,
                        "wall_seconds": time.perf_counter() - t0})
        print(f"average over {len(rows)} meshes: RI={avg['RI']:.4f} HD={avg['HD']:.4f} "
              f"Rm={avg['Rm']:.4f} Rf={avg['Rf']:.4f} GCE={avg['GCE']:.4f} LCE={avg['LCE']:.4f} "
              f"CD={avg['CD']:.4f}")
        if args.markdown:
            args.markdown.parent.mkdir(parents=True, exist_ok=True)
            args.markdown.write_text(markdown(rows, avg, f"PSB quality, {stamp}, device {be.label}, "
                                              f"command `{results['command']}`"))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
