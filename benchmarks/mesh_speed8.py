"""Issue 22 (session 8): the 17k / 50k end-to-end path, stage by stage.

Runs ``read_mesh`` + ``segment_mesh`` with the defaults (the same as ``benchmarks/mesh.py
--speed``: one warm-up, then the best of ``--repeat``) with timers wrapped around the
functions of the path (inclusive wall times; a function called several times is summed per
run). The breakdown of the best run is printed and written as JSON, with the labels' SHA-1
(bit-identity across code versions).

``--root DIR`` imports gpulab from another tree (the session's starting code, for a
before/after in the same process family).

Example::

    python benchmarks/mesh_speed8.py ../shared/data/psb/off/101.off --device cpu --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cli import BadInput, check_input_file, check_output, run, write_json  # noqa: E402

# (module, attribute): wrapped where the path looks it up
WRAP = [
    ("app.io.mesh_io", "read_mesh"),
    ("gpu_kernels.mesh.segment", "prepare_mesh"),
    ("gpu_kernels.mesh.segment", "clean_mesh"),
    ("gpu_kernels.mesh.segment", "dual_graph"),
    ("gpu_kernels.mesh.segment", "working_graph"),
    ("gpu_kernels.mesh.segment", "simplify_mesh"),
    ("gpu_kernels.mesh.simplify", "_simplify_fast"),
    ("gpu_kernels.mesh.simplify", "_simplify_pymeshlab"),
    ("gpu_kernels.mesh.segment", "with_thickness"),
    ("gpu_kernels.mesh.segment", "graph_distances"),
    ("gpu_kernels.mesh.segment", "distance_orders"),
    ("gpu_kernels.mesh.segment", "kd_nearest"),
    ("gpu_kernels.mesh.segment", "clusterings_prepared"),
    ("gpu_kernels.mesh.segment", "settle_prepared"),
    ("gpu_kernels.mesh.segment", "cut_clustered"),
    ("gpu_kernels.mesh.segment", "_recut_full"),
    ("gpu_kernels.mesh.segment", "_finish_labels"),
    ("gpu_kernels.mesh.boundary", "resolve_fuzzy_regions"),
    ("gpu_kernels.mesh.boundary", "part_memberships"),
    ("gpu_kernels.mesh.boundary", "dilate"),
    ("gpu_kernels.mesh.segment", "blend_face_colors"),
]


def install(acc: dict) -> None:
    import importlib

    for mod, name in WRAP:
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        fn = getattr(m, name, None)
        if fn is None or getattr(fn, "_speed8", False):
            continue

        def wrapped(*a, _fn=fn, _key=f"{mod.rsplit('.', 1)[-1]}.{name}", **kw):
            t0 = time.perf_counter()
            try:
                return _fn(*a, **kw)
            finally:
                acc[_key] += time.perf_counter() - t0

        wrapped._speed8 = True
        setattr(m, name, wrapped)


def check_args(args) -> None:
    """Before any timing (one line and status 2 otherwise, ``bench_cli``): ``--root`` is a gpulab
    tree (put first on the path, so the checks and the run use its code), every mesh file exists,
    ``--json`` may be written."""
    if args.root:
        root = Path(args.root).resolve()
        if not ((root / "gpu_kernels").is_dir() and (root / "app").is_dir()):
            raise BadInput(f"--root {args.root}: no gpulab tree there (gpu_kernels/ and app/)")
        sys.path.insert(0, str(root))
    for f in args.files.split(","):
        check_input_file("mesh", f)
    if args.json:
        check_output("--json", args.json)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", help="mesh files, comma-separated")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--root", default=None, help="import gpulab from this tree")
    ap.add_argument("--simplifier", default="auto")
    ap.add_argument("--no-wrap", action="store_true", help="plain timing (no per-stage timers)")
    ap.add_argument("--tool", action="store_true",
                    help="the tool's path instead (app.tools.mesh_seg.load + run, as the CLI and the window)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    check_args(args)
    from app.io import mesh_io
    from gpu_kernels.mesh import segment
    from gpu_kernels.mesh import simplify as simp

    simp.SIMPLIFIER = args.simplifier
    from gpu_kernels.backend import get_backend

    backend = get_backend(args.device)   # no such device: one line before any timing
    if args.tool:
        from app.tools import mesh_seg
    acc: dict = defaultdict(float)
    if not args.no_wrap:
        install(acc)
    rows = []
    for path in args.files.split(","):
        def once(path=path):
            acc.clear()
            t0 = time.perf_counter()
            if args.tool:
                data = mesh_seg.load(path)
                seg, f = mesh_seg.run(data, {}, device=backend).seg, data.faces
            else:
                v, f = mesh_io.read_mesh(path)
                seg = segment.segment_mesh(v, f, device=args.device)
            total = time.perf_counter() - t0
            assert seg.face_colors.shape == (len(f), 3)
            return total, dict(acc), seg, len(f)

        once()
        runs = [once() for _ in range(max(1, args.repeat))]
        total, stages, seg, nf = min(runs, key=lambda r: r[0])
        sha = hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes()).hexdigest()[:12]
        row = {"file": Path(path).name, "faces": nf, "device": args.device, "root": args.root or ".",
               "path": "tool" if args.tool else "segment_mesh",
               "simplifier": simp._resolve(args.simplifier) if seg.info["simplified"] else "-",
               "total_s": total, "all_s": sorted(r[0] for r in runs), "k": int(seg.k), "sha": sha,
               "stages": stages, "timings": {k: float(x) for k, x in seg.info["timings"].items()}}
        rows.append(row)
        print(f"speed8 {row['file']} {nf} faces {args.device} {row['simplifier']} {row['path']} root={row['root']}: "
              f"{total:.3f} s (runs {', '.join(f'{x:.3f}' for x in row['all_s'])}) k={seg.k} sha={sha}", flush=True)
        for k, x in sorted(stages.items(), key=lambda kv: -kv[1]):
            print(f"    {k:38s} {1000 * x:8.1f} ms", flush=True)
    if args.json:
        write_json(args.json, rows, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(run(main))
