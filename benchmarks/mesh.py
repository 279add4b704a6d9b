"""APSP benchmark: every method of gpu_kernels.graph.apsp on mesh dual graphs.

Prints and saves a table of method, N, time, relaxations/s (N^3 / time), memory and the
speed-up over the CPU methods (a) ``cpu`` and (b) ``cpu-mt``.

Graphs: synthetic dual graphs of triangulated tori (N faces, three neighbours each,
weights from centroid distances with noise), or real meshes from ``--mesh-dir`` (OFF
files, read by a tiny parser here, so the GPU host needs only numpy/scipy/cupy).

``cpu-mt`` keeps its worker processes between calls; their one-time start-up (about a
second: imports) is done before timing. CPU times at large N are *extrapolated*: Dijkstra is run from two subsets of sources
(m and 2m), a line t(m) = a + b*m is fitted (a = start-up, e.g. worker processes) and
evaluated at m = N. Rows marked ``cpu_full`` were measured in full.

Usage::

    python benchmarks/mesh.py --sizes 2048,4096,8192,16384,32768 --out out/apsp
    python benchmarks/mesh.py --methods gpu-sym,gpu --sizes 16384 --tune
    python benchmarks/mesh.py --mesh-dir .bench_data/psb --e2e .bench_data/psb
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    device_name,
    fmt_bytes,
    fmt_seconds,
    format_table,
    host_description,
    save_results,
    time_cpu,
    time_gpu,
)

from gpu_kernels.graph import apsp  # noqa: E402
from gpu_kernels.jobs import Progress  # noqa: E402


# --------------------------------------------------------------------------- graphs
def torus_mesh(n_faces: int, seed: int = 0):
    """A triangulated torus with ``n_faces`` (rounded down to even) faces, bumpy."""
    rng = np.random.default_rng(seed)
    q = max(1, n_faces // 2)
    a = int(np.sqrt(q / 2)) or 1
    while q % a:
        a -= 1
    b = q // a
    i, j = np.meshgrid(np.arange(a), np.arange(b), indexing="ij")
    u, v = 2 * np.pi * i / a, 2 * np.pi * j / b
    rr = 1.0 + 0.05 * rng.standard_normal(u.shape)
    big = 3.0
    verts = np.stack([(big + rr * np.cos(u)) * np.cos(v), (big + rr * np.cos(u)) * np.sin(v), rr * np.sin(u)], -1)
    verts = verts.reshape(-1, 3)

    def vid(ii, jj):
        return (ii % a) * b + (jj % b)

    v00, v10, v01, v11 = vid(i, j), vid(i + 1, j), vid(i, j + 1), vid(i + 1, j + 1)
    f0 = np.stack([v00, v10, v11], -1).reshape(-1, 3)
    f1 = np.stack([v00, v11, v01], -1).reshape(-1, 3)
    faces = np.empty((2 * a * b, 3), dtype=np.int64)
    faces[0::2], faces[1::2] = f0, f1
    return verts, faces


def read_off(path):
    """Vertices and triangles of an OFF file (polygons fanned into triangles)."""
    tokens = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                tokens.extend(line.split())
    if tokens[0].upper() == "OFF":
        tokens = tokens[1:]
    elif tokens[0].upper().startswith("OFF"):
        tokens[0] = tokens[0][3:]
        tokens = [t for t in tokens if t]
    nv, nf = int(tokens[0]), int(tokens[1])
    pos = 3
    verts = np.array(tokens[pos:pos + 3 * nv], dtype=np.float64).reshape(nv, 3)
    pos += 3 * nv
    faces = []
    for _ in range(nf):
        k = int(tokens[pos])
        idx = [int(t) for t in tokens[pos + 1:pos + 1 + k]]
        pos += 1 + k
        for t in range(1, k - 1):
            faces.append((idx[0], idx[t], idx[t + 1]))
    return verts, np.array(faces, dtype=np.int64)


def dual_graph(verts, faces, seed=0):
    """Face adjacency over shared edges; weight = centroid distance x (1 + angular term).

    A stand-in for gpu_kernels.mesh.dualgraph (which the GPU host may lack the deps
    for): APSP cost depends only on N and the sparsity, not on the exact weights.
    """
    f = np.asarray(faces)
    e = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    fid = np.tile(np.arange(len(f)), 3)
    e.sort(axis=1)
    key = e[:, 0] * (len(verts) + 1) + e[:, 1]
    order = np.argsort(key, kind="stable")
    key, fid = key[order], fid[order]
    same = key[1:] == key[:-1]
    s, d = fid[:-1][same], fid[1:][same]
    c = verts[f].mean(axis=1)
    nrm = np.cross(verts[f[:, 1]] - verts[f[:, 0]], verts[f[:, 2]] - verts[f[:, 0]])
    nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-30)
    geod = np.linalg.norm(c[s] - c[d], axis=1)
    ang = 1.0 - np.clip((nrm[s] * nrm[d]).sum(1), -1, 1)
    w = 0.8 * geod / max(geod.mean(), 1e-30) + 0.2 * ang / max(ang.mean(), 1e-30)
    return len(f), s, d, w


# --------------------------------------------------------------------------- timing
def extrapolate_cpu(method, n, s, d, w, m, workers):
    """Seconds for all n sources, from runs over m and 2m sources (linear fit)."""
    _, s2, d2, w2 = apsp._prepare_edges(n, s, d, w, False)
    g = apsp._csr(n, s2, d2, w2, False)
    rng = np.random.default_rng(0)
    m = min(m, n // 2) or 1
    rows1 = rng.choice(n, m, replace=False)
    rows2 = rng.choice(n, 2 * m, replace=False) if 2 * m <= n else np.arange(n)
    prog = Progress()

    def run(rows):
        if method == "cpu":
            return apsp._apsp_cpu(n, g, prog, rows=rows)
        return apsp._apsp_cpu_mt(n, g, prog, workers, rows=rows)

    t1 = time_cpu(lambda: run(rows1))["min"]
    t2 = time_cpu(lambda: run(rows2))["min"]
    b = max((t2 - t1) / (len(rows2) - len(rows1)), 1e-12)
    a = max(t1 - b * len(rows1), 0.0)
    return a + b * n, {"m": [len(rows1), len(rows2)], "t": [t1, t2], "startup": a, "per_source": b}


def gpu_run(method, n, s, d, w, *, out="dense", dtype=None, tile=None, config=None):
    """One GPU APSP run. ``*-raw`` methods: no all-+inf tile skipping and (gpu-sym) no
    reordering, i.e. every tile of every round is computed (the kernel's raw rate)."""
    prep = apsp._prepare_edges(n, s, d, w, False)
    raw = method.endswith("-raw")
    if raw:
        config = dict(config or {}, skip=0)
    if method.startswith("gpu-sym"):
        p = apsp.floyd_warshall_sym_packed(n, device="cuda", tile=tile, dtype=dtype, config=config,
                                           reorder=not raw, _prepared=prep,
                                           _out="packed" if out == "packed" else "dense")
        return p if out == "packed" else p.to_dense()
    from gpu_kernels.backend import get_backend

    return apsp.floyd_warshall_dense(*prep, directed=False, be=get_backend("cuda"), progress=Progress(),
                                     tile=tile, dtype=dtype, config=config)


def peak_gpu_bytes(fn):
    import cupy as cp

    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    r = fn()
    peak = pool.total_bytes()
    del r
    pool.free_all_blocks()
    return peak


def bench_graph(label, n, s, d, w, methods, args, ref=None):
    rows = []
    res = {}
    for method in methods:
        row = {"graph": label, "method": method, "N": n}
        if method in ("cpu", "cpu-mt"):
            workers = args.workers or apsp.default_workers()
            if method == "cpu-mt":   # start the (persistent) worker pool outside the timing
                _, s0, d0, w0 = apsp._prepare_edges(n, s, d, w, False)
                apsp._apsp_cpu_mt(n, apsp._csr(n, s0, d0, w0, False), Progress(), workers,
                                  rows=np.arange(min(n, max(256, 4 * workers))))
            if n <= (args.cpu_full_max if method == "cpu" else args.cpu_mt_full_max):
                t = time_cpu(lambda m=method, wk=workers: apsp.all_pairs_shortest_paths(
                    n, s, d, w, method=m, workers=wk))["min"]
                row.update(time_s=t, how="measured")
            else:
                t, info = extrapolate_cpu(method, n, s, d, w, args.cpu_sources if method == "cpu"
                                          else args.cpu_sources * workers, workers)
                row.update(time_s=t, how=f"extrapolated from {info['m'][0]}/{info['m'][1]} sources "
                                         f"(start-up {info['startup']:.2f} s)")
            row["workers"] = 1 if method == "cpu" else workers
            row["memory"] = apsp.apsp_memory_bytes(n, method)
        else:
            def fn(m=method, out="dense"):
                return gpu_run(m, n, s, d, w, out=out, dtype=args.dtype, tile=args.tile)

            tm = time_gpu(fn, warmup=1 if n <= 8192 else 0, repeat=args.repeat, max_seconds=10)
            row.update(time_s=tm["min"], how=f"min of {len(tm['times'])} (median {fmt_seconds(tm['median'])})")
            row["memory"] = peak_gpu_bytes(fn)
            if method.startswith("gpu-sym"):
                tp = time_gpu(lambda m=method: fn(m, "packed"), warmup=0, repeat=args.repeat, max_seconds=10)
                row["fw_time_s"] = tp["min"]
                row["fw_memory"] = peak_gpu_bytes(lambda m=method: fn(m, "packed"))
            else:
                row["fw_time_s"] = row["time_s"]
                row["fw_memory"] = row["memory"]
            row["fw_relax_per_s"] = float(n) ** 3 / row["fw_time_s"]
        row["relax_per_s"] = float(n) ** 3 / row["time_s"]
        res[method] = row
        rows.append(row)
        print(f"  {label:>18} {method:>8} N={n:>6} {fmt_seconds(row['time_s']):>9} "
              f"{row['relax_per_s']:.3e} relax/s  {row.get('how', '')}", flush=True)
    for row in rows:
        for base in ("cpu", "cpu-mt"):
            if base in res and row["method"].startswith("gpu"):
                row[f"speedup_{base}"] = res[base]["time_s"] / row["time_s"]
        dense = row["method"].replace("gpu-sym", "gpu")
        if row["method"].startswith("gpu-sym") and dense in res:
            row["speedup_gpu"] = res[dense]["fw_time_s"] / row["fw_time_s"]
    return rows


def tune(args):
    """Sweep the stage-2/3 kernel parameters and the distance type for gpu-sym (and gpu)."""
    import cupy as cp

    from gpu_kernels.backend import get_backend

    n = args.tune_n
    nv, s, d, w = dual_graph(*torus_mesh(n))
    n = nv
    nchk = 1000
    _, sc, dc, wc = dual_graph(*torus_mesh(nchk))
    from scipy.sparse.csgraph import dijkstra

    ref = dijkstra(apsp._csr(nchk, *apsp._prepare_edges(nchk, sc, dc, wc, False)[1:], False), directed=True)
    configs = args.tune_configs or [
        (64, {"tm": 4, "tn": 4, "kc": 64}), (64, {"tm": 8, "tn": 4, "kc": 64}), (64, {"tm": 4, "tn": 8, "kc": 64}),
        (64, {"tm": 8, "tn": 8, "kc": 64}), (64, {"tm": 8, "tn": 4, "kc": 32}), (64, {"tm": 8, "tn": 8, "kc": 32}),
        (128, {"tm": 8, "tn": 8, "kc": 32}), (128, {"tm": 8, "tn": 8, "kc": 16}), (32, {"tm": 4, "tn": 4, "kc": 32}),
    ]
    dtypes = args.tune_dtypes.split(",")
    rows = []

    def one(method, tile, cfg, dtype):
        def run(nn, ss, dd, ww):
            prep = apsp._prepare_edges(nn, ss, dd, ww, False)
            if method == "gpu-sym":
                return apsp.floyd_warshall_sym_packed(nn, device="cuda", tile=tile, dtype=dtype, config=cfg,
                                                      _prepared=prep)
            return apsp.floyd_warshall_dense(*prep, directed=False, be=get_backend("cuda"), progress=Progress(),
                                             tile=tile, dtype=dtype, config=cfg)

        t0 = time.perf_counter()
        r = run(nchk, sc, dc, wc)
        got = cp.asnumpy(r.to_dense() if method == "gpu-sym" else r)
        fin = np.isfinite(ref)
        err = float(np.max(np.abs(got[fin] - ref[fin]) / np.maximum(ref[fin], 1e-6)))
        ok = bool(np.array_equal(np.isinf(got), np.isinf(ref)) and err < 2e-5)
        compile_s = time.perf_counter() - t0
        tm = time_gpu(lambda: run(n, s, d, w), warmup=0, repeat=2)
        row = {"method": method, "tile": tile, **cfg, "dtype": dtype, "N": n, "time_s": tm["min"],
               "relax_per_s": n**3 / tm["min"], "max_rel_err_vs_scipy": f"{err:.1e}", "ok": ok,
               "first_call_s": round(compile_s, 2)}
        print(f"  tune {method:>7} B={tile:<3} {cfg} {dtype:>11}: {fmt_seconds(tm['min']):>9} "
              f"{row['relax_per_s']:.3e} relax/s  ok={ok} err={err:.1e}", flush=True)
        rows.append(row)
        return row

    best = None
    for tile, cfg in configs:
        for dtype in dtypes:
            r = one("gpu-sym", tile, cfg, dtype)
            if r["ok"] and (best is None or r["time_s"] < best["time_s"]):
                best = r
    bt = best["tile"]
    bcfg = {k: best[k] for k in ("tm", "tn", "kc", "pipe", "bm", "bn") if k in best}
    for dtype in ("float32", "int32", "int32-nodpx"):
        if dtype not in dtypes:
            one("gpu-sym", bt, bcfg, dtype)
    for dtype in ("float32", "int32"):
        one("gpu", bt, bcfg, dtype)
    return rows


def _segment_mesh_or_none(flag):
    """``gpu_kernels.mesh.segment.segment_mesh``, or None (said once) when it won't import."""
    try:
        from gpu_kernels.mesh.segment import segment_mesh
    except Exception as exc:  # noqa: BLE001 - report any import failure and go on
        print(f"{flag}: gpu_kernels.mesh.segment.segment_mesh is not importable ({exc}); skipped")
        return None
    return segment_mesh


def check_dtype(args):
    """Labels of segment_mesh with float32 vs int32 APSP distances, per mesh in DIR."""
    import cupy as cp

    segment_mesh = _segment_mesh_or_none("--check-dtype")
    if segment_mesh is None:
        return []
    rows = []
    saved = apsp.DEFAULT_DTYPE
    try:
        for p in sorted(Path(args.check_dtype).glob("*.off")):
            v, f = read_off(p)
            n, s, d, w = dual_graph(v, f)
            res, dist = {}, {}
            try:
                for dt in ("float32", "int32"):
                    apsp.DEFAULT_DTYPE = dt
                    res[dt] = segment_mesh(v, f, device="cuda")
                    dist[dt] = apsp.all_pairs_shortest_paths(n, s, d, w, method="gpu-sym", device="cuda")
            except Exception as exc:  # noqa: BLE001 - segment_mesh belongs to another module
                print(f"  dtype check {p.name}: segment_mesh failed: {type(exc).__name__}: {exc}", flush=True)
                continue
            a, b = res["float32"].labels, res["int32"].labels
            fin = cp.isfinite(dist["float32"])
            rel = float(cp.max(cp.abs(dist["int32"][fin] - dist["float32"][fin])
                               / cp.maximum(dist["float32"][fin], 1e-6)))
            row = {"mesh": p.name, "faces": len(f), "k": int(res["float32"].k),
                   "labels_equal": bool(np.array_equal(a, b)), "faces_differing": int((a != b).sum()),
                   "max_rel_dist_diff": f"{rel:.1e}"}
            print(f"  dtype check {row}", flush=True)
            rows.append(row)
            del dist
    finally:
        apsp.DEFAULT_DTYPE = saved
    return rows


def e2e(args):
    segment_mesh = _segment_mesh_or_none("--e2e")
    if segment_mesh is None:
        return []
    rows = []
    paths = sorted(Path(args.e2e).glob("*.off"))
    for i, p in enumerate(paths):
        v, f = read_off(p)
        try:
            if i == 0:
                segment_mesh(v, f, device="cuda")     # warm-up: kernel compilation, cuBLAS
            t = time_cpu(lambda v=v, f=f: segment_mesh(v, f, device="cuda"), repeat=1)["min"]
        except Exception as exc:  # noqa: BLE001 - segment_mesh belongs to another module
            print(f"  e2e {p.name}: segment_mesh failed: {type(exc).__name__}: {exc}", flush=True)
            continue
        rows.append({"mesh": p.name, "faces": len(f), "time_s": t})
        print(f"  e2e {p.name}: {len(f)} faces, {fmt_seconds(t)}", flush=True)
    return rows


def speed(files, devices, repeat: int = 3, simplifiers=("auto",)):
    """End to end with the defaults, from the file to the coloured result: read the mesh
    (``app.io.mesh_io.read_mesh``), ``segment_mesh`` (the face colours are part of its
    result). One warm-up run per device and simplifier, then the best of ``repeat``; every
    stage's time (``info["timings"]``) of that best run."""
    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh import simplify as simp
    from gpu_kernels.mesh.segment import segment_mesh

    rows = []
    for dev in devices:
        for sname in simplifiers:
            if sname != "auto" and sname not in simp.available_simplifiers():
                print(f"  speed: simplifier {sname} is not installed here; skipped", flush=True)
                continue
            saved = simp.SIMPLIFIER
            simp.SIMPLIFIER = sname
            try:
                for path in files:
                    def once(path=path, dev=dev):
                        t0 = time.perf_counter()
                        v, f = read_mesh(path)
                        t1 = time.perf_counter()
                        seg = segment_mesh(v, f, device=dev)
                        assert seg.face_colors.shape == (len(f), 3)
                        return t1 - t0, time.perf_counter() - t0, seg, len(f)

                    once()  # warm-up: kernels compiled, worker pools started
                    best = min((once() for _ in range(max(1, repeat))), key=lambda r: r[1])
                    read_s, total_s, seg, nf = best
                    row = {"file": Path(path).name, "faces": nf, "device": dev, "simplifier": sname,
                           "resolved_simplifier": simp._resolve(sname) if seg.info["simplified"] else "-",
                           "read_s": read_s, "total_s": total_s, "k": int(seg.k),
                           **{f"t_{k}": float(x) for k, x in seg.info["timings"].items()}}
                    rows.append(row)
                    print(f"  speed {row['file']} ({nf} faces) {dev} simplifier={row['resolved_simplifier']}: "
                          f"{total_s:.3f} s end to end (read {read_s:.3f} s) k={seg.k}; stages "
                          + ", ".join(f"{k} {x:.3f}" for k, x in seg.info["timings"].items()), flush=True)
            finally:
                simp.SIMPLIFIER = saved
    return rows


def render(payload) -> str:
    rows = []
    for r in payload["rows"]:
        rows.append({
            "graph": r["graph"], "method": r["method"], "N": r["N"], "time": fmt_seconds(r["time_s"]),
            "relax": f"{r['relax_per_s']:.2e}",
            "fw": fmt_seconds(r.get("fw_time_s")) if "fw_time_s" in r else None,
            "fw_relax": f"{r['fw_relax_per_s']:.2e}" if "fw_relax_per_s" in r else None,
            "mem": fmt_bytes(r.get("memory")), "fw_mem": fmt_bytes(r.get("fw_memory")) if "fw_memory" in r else None,
            "sa": f"{r['speedup_cpu']:.0f}x" if "speedup_cpu" in r else None,
            "sb": f"{r['speedup_cpu-mt']:.1f}x" if "speedup_cpu-mt" in r else None,
            "sc": f"{r['speedup_gpu']:.2f}x" if "speedup_gpu" in r else None,
            "how": r.get("how"),
        })
    cols = [("graph", "graph"), ("method", "method"), ("N", "N"), ("time", "time (dense result)"),
            ("relax", "N^3/time"), ("fw", "FW time (packed)"), ("fw_relax", "N^3/FW time"), ("mem", "peak memory"),
            ("fw_mem", "FW memory"), ("sa", "vs (a) cpu"), ("sb", "vs (b) cpu-mt"), ("sc", "sym vs (c)"),
            ("how", "timing")]
    table = format_table(rows, cols)
    if payload.get("applied"):
        table = f"Kernel used below: {payload['applied']}\n\n" + table
    if payload["tune"]:
        tcols = [(k, k) for k in ("method", "tile", "bm", "bn", "tm", "tn", "kc", "pipe", "minb", "dtype", "N")] + [
            ("t", "time"), ("r", "N^3/time"), ("max_rel_err_vs_scipy", "max rel err (N=1000)"), ("ok", "ok")]
        trows = [dict(r, t=fmt_seconds(r["time_s"]), r=f"{r['relax_per_s']:.2e}") for r in payload["tune"]]
        table = "Kernel sweep (gpu-sym = packed FW only, no unpack):\n\n" + format_table(trows, tcols) + "\n\n" + table
    if payload["dtype_check"]:
        dc = payload["dtype_check"]
        table += "\n\nsegment_mesh labels, float32 vs int32 APSP:\n\n" + format_table(
            dc, [(k, k) for k in ("mesh", "faces", "k", "labels_equal", "faces_differing", "max_rel_dist_diff")])
    if payload["e2e"]:
        erows = [dict(r, t=fmt_seconds(r["time_s"])) for r in payload["e2e"]]
        table += "\n\nEnd-to-end segment_mesh:\n\n" + format_table(erows, [("mesh", "mesh"), ("faces", "faces"),
                                                                            ("t", "time")])
    return table


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2048,4096,8192,16384,32768")
    ap.add_argument("--methods", default="gpu-sym,gpu,cpu,cpu-mt")
    ap.add_argument("--out", default=None, help="results file (.json, .md, or a stem for both)")
    ap.add_argument("--mesh-dir", default=None, help="also benchmark the OFF meshes in this folder")
    ap.add_argument("--e2e", default=None, metavar="DIR", help="end-to-end segment_mesh timing of DIR/*.off")
    ap.add_argument("--tile", type=int, default=None)
    ap.add_argument("--dtype", default=None, choices=apsp.DTYPES)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--cpu-sources", type=int, default=128,
                    help="sources per worker in the smaller CPU timing subset")
    ap.add_argument("--cpu-full-max", type=int, default=4096, help="measure CPU methods in full up to this N")
    ap.add_argument("--tune", action="store_true", help="kernel parameter / dtype sweep first")
    ap.add_argument("--tune-n", type=int, default=16384)
    ap.add_argument("--configs", default=None, help="kernel configs to tune, e.g. 64:8x4:32,128:8x8:16")
    ap.add_argument("--tune-dtypes", default="float32", help="dtypes swept over every config")
    ap.add_argument("--check-dtype", default=None, metavar="DIR",
                    help="compare segment_mesh labels with float32 and int32 distances on DIR/*.off")
    ap.add_argument("--cpu-mt-full-max", type=int, default=16384, help="measure cpu-mt in full up to this N")
    ap.add_argument("--apply-best", action="store_true",
                    help="after --tune (and --check-dtype) run the rest with the fastest gpu-sym kernel config, "
                         "and int32 if it was faster and left every label unchanged")
    ap.add_argument("--no-sizes", action="store_true", help="skip the synthetic size sweep")
    ap.add_argument("--speed", default=None, metavar="FILE[,FILE]",
                    help="end-to-end time of the defaults from each file to the coloured result, then exit")
    ap.add_argument("--speed-devices", default="cuda", help="devices for --speed (comma-separated)")
    ap.add_argument("--speed-simplifiers", default="auto", help="simplifiers for --speed: auto,fast,pymeshlab")
    args = ap.parse_args(argv)
    if args.speed:
        print(f"device: {device_name()}\nhost: {host_description()}", flush=True)
        rows = speed(args.speed.split(","), args.speed_devices.split(","), args.repeat,
                     args.speed_simplifiers.split(","))
        if args.out:
            save_results(args.out, {"speed": rows}, "\n".join(
                f"| {r['file']} | {r['faces']} | {r['device']} | {r['resolved_simplifier']} | {r['total_s']:.3f} | "
                f"{r['read_s']:.3f} | {r.get('t_simplify', 0):.3f} | {r.get('t_apsp', 0):.3f} | "
                f"{r.get('t_clustering', 0):.3f} | {r.get('t_cut', 0):.3f} | {r['k']} |" for r in rows))
        return 0
    args.tune_configs = None
    if args.configs:   # "64:8x4:32,128:8x4:32:p:64x64" = tile:TMxTN:KC[:p pipelined][:BMxBN sub-block]
        args.tune_configs = []
        for item in args.configs.split(","):
            b, tmn, kc, *rest = item.split(":")
            tm, tn = tmn.lower().split("x")
            cfg = {"tm": int(tm), "tn": int(tn), "kc": int(kc), "pipe": int("p" in rest)}
            for x in rest:
                if "x" in x:
                    cfg["bm"], cfg["bn"] = (int(v) for v in x.lower().split("x"))
            args.tune_configs.append((int(b), cfg))

    print(f"device: {device_name()}\nhost: {host_description()}", flush=True)
    payload = {"rows": [], "tune": [], "e2e": [], "dtype_check": []}
    def checkpoint():
        if args.out:
            save_results(args.out, payload, render(payload))

    if args.tune:
        payload["tune"] = tune(args)
        checkpoint()
    best = {}
    for r in payload["tune"]:
        if r["method"] == "gpu-sym" and r["ok"] and (r["dtype"] not in best or r["time_s"] < best[r["dtype"]]["time_s"]):
            best[r["dtype"]] = r
    def apply(r):
        apsp._KERNEL_CONFIGS[r["tile"]] = {"tm": r["tm"], "tn": r["tn"], "kc": r["kc"], "minb": r.get("minb") or 0,
                                           "pipe": r.get("pipe", 0), "bm": r.get("bm"), "bn": r.get("bn")}
        apsp.DEFAULT_TILE = r["tile"]

    if args.apply_best and best:
        for dt, r in best.items():
            print(f"fastest gpu-sym {dt}: B={r['tile']} {r.get('bm')}x{r.get('bn')} {r['tm']}x{r['tn']} kc={r['kc']} "
                  f"pipe={r.get('pipe', 0)} {r['relax_per_s']:.3e}")
        dt = args.dtype if args.dtype in best else ("float32" if "float32" in best else next(iter(best)))
        apply(best[dt])
    if args.check_dtype:
        payload["dtype_check"] = check_dtype(args)
        checkpoint()
    if args.apply_best and best:
        same = payload["dtype_check"] and all(r["labels_equal"] for r in payload["dtype_check"])
        if (not args.dtype and "int32" in best and "float32" in best
                and best["int32"]["time_s"] < best["float32"]["time_s"] and same):
            apply(best["int32"])
            apsp.DEFAULT_DTYPE = "int32"
        if args.dtype:
            apsp.DEFAULT_DTYPE = args.dtype
        payload["applied"] = {"dtype": apsp.DEFAULT_DTYPE, "tile": apsp.DEFAULT_TILE,
                              "config": apsp._KERNEL_CONFIGS.get(apsp.DEFAULT_TILE)}
        print(f"applied: {payload['applied']}", flush=True)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not args.no_sizes:
        for n in (int(x) for x in args.sizes.split(",") if x.strip()):
            nv, s, d, w = dual_graph(*torus_mesh(n))
            payload["rows"] += bench_graph("torus dual", nv, s, d, w, methods, args)
            checkpoint()
    if args.mesh_dir:
        for p in sorted(Path(args.mesh_dir).glob("*.off")):
            nv, s, d, w = dual_graph(*read_off(p))
            payload["rows"] += bench_graph(p.name, nv, s, d, w, methods, args)
            checkpoint()
    if args.e2e:
        payload["e2e"] = e2e(args)

    table = render(payload)
    print()
    print(table)
    if args.out:
        save_results(args.out, payload, table)


if __name__ == "__main__":
    main()
