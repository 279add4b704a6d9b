"""Live tuning of the mesh tool, compute share: how long a k or epsilon edit takes through the
stage cache (issue 20), with the dual graph and the distances re-used.

For each mesh file: a full run through ``TOOL.run_staged`` (the window's path, without Qt),
then edits of k and epsilon; for each edit the stages that ran, their times, the wall time
and whether the labels equal a fresh full run's (``same_as_full_run``). ``--sub`` adds the
time of the main library functions inside each edit (after a device synchronisation, so
the GPU work is counted where it is queued); ``--root DIR`` imports ``app`` and
``gpu_kernels`` from another checkout (a before/after comparison in one process call).

    python benchmarks/mesh_stages.py 101.off --device cuda --full-res --sub --json out.json
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import platform
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if "--root" in sys.argv:  # before the imports below: the code measured comes from there
    ROOT = pathlib.Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
sys.path.insert(0, str(ROOT))

from app.tools import mesh_seg  # noqa: E402
from app.tools.stages import StageCache  # noqa: E402
from gpu_kernels.backend import get_backend  # noqa: E402

#: the edits, in order, each from the previous one's parameters
EDITS = (("k", 5), ("k", 6), ("k", 4), ("epsilon", 0.08), ("k", "auto"), ("k", 7))
#: ``--k-only``: the issue's target edits (benchmarks/live.py: k 3 -> 5, 6, 7), then changes
#: of refine_boundaries and epsilon (issue 20: neither may re-run the clusterings)
K_EDITS = (("k", 5), ("k", 6), ("k", 7), ("refine_boundaries", False), ("epsilon", 0.08))
#: (module, function) pairs timed by ``--sub`` (those missing in a checkout are skipped)
SUB_FUNCS = (("gpu_kernels.mesh.cluster", "fuzzy_cluster"), ("gpu_kernels.mesh.cluster", "fuzzy_cluster_many"),
             ("gpu_kernels.mesh.cluster", "farthest_representatives"),
             ("gpu_kernels.mesh.boundary", "resolve_fuzzy_regions"), ("gpu_kernels.mesh.boundary", "merge_islands"),
             ("gpu_kernels.mesh.boundary", "merge_weakest_boundaries"),
             ("gpu_kernels.mesh.boundary", "part_memberships"), ("gpu_kernels.mesh.segment", "boundary_concavity"),
             ("gpu_kernels.mesh.segment", "_assemble_and_cut"), ("gpu_kernels.mesh.segment", "_recut_full"),
             ("gpu_kernels.mesh.segment", "blend_face_colors"))
SUB: dict = {}


def install_sub_timers(be) -> None:
    """Wrap SUB_FUNCS (in their module and where segment.py imported them) with timers."""
    import importlib

    seg = importlib.import_module("gpu_kernels.mesh.segment")
    bd = importlib.import_module("gpu_kernels.mesh.boundary")
    for modname, name in SUB_FUNCS:
        mod = importlib.import_module(modname)
        fn = getattr(mod, name, None)
        if fn is None:
            continue

        @functools.wraps(fn)
        def timed(*a, _fn=fn, _name=name, **k):
            if be.is_gpu:
                be.synchronize()
            t0 = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                if be.is_gpu:
                    be.synchronize()
                SUB[_name] = SUB.get(_name, 0.0) + time.perf_counter() - t0
        for m in (mod, seg, bd):
            if getattr(m, name, None) is fn:
                setattr(m, name, timed)


def measure(path: str, device: str, repeat: int = 1, *, full_res: bool = False, edits=EDITS, sub=False) -> dict:
    be = get_backend(device)
    if sub:
        install_sub_timers(be)
    data = mesh_seg.load(path)
    params = {"k": 3, "max_faces": None} if full_res else {"k": "auto"}
    rows = []
    for r in range(repeat):
        # every repeat starts from a fresh cache and a first run (the edits would be cache hits)
        cache = StageCache(cap_bytes=8 << 30)
        t0 = time.perf_counter()
        _, rep = mesh_seg.TOOL.run_staged(data, params, device=be, cache=cache, scope="bench")
        if r == 0:
            first = {"wall_s": time.perf_counter() - t0, "ran": rep.ran, "seconds": rep.seconds}
        p = dict(params)
        for name, val in edits:
            p = {**p, name: val}
            SUB.clear()
            t0 = time.perf_counter()
            res, rep = mesh_seg.TOOL.run_staged(data, p, device=be, cache=cache, scope="bench")
            wall = time.perf_counter() - t0
            subs = {k: round(v, 5) for k, v in SUB.items()}
            full = mesh_seg.run(data, p, device=be)
            rows.append({"edit": f"{name}={val}", "wall_s": wall, "ran": rep.ran, "reused": rep.reused,
                         "seconds": rep.seconds, "k": int(res.seg.k), "sub_s": subs,
                         "iterations": res.seg.info.get("iterations"),
                         "same_as_full_run": bool(np.array_equal(res.seg.labels, full.seg.labels))})
    k_edits = [e["wall_s"] for e in rows if e["edit"].startswith("k=") and e["edit"] != "k=auto"]
    return {"file": pathlib.Path(path).name, "faces": len(data.faces), "device": be.label, "root": str(ROOT),
            "full_res": full_res, "first_run": first, "edits": rows,
            "k_edit_median_s": float(np.median(k_edits)), "k_edit_max_s": float(np.max(k_edits))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--full-res", action="store_true", help="cluster every face (max_faces off: the issue's figure)")
    ap.add_argument("--k-only", action="store_true", help="the k edits 5, 6, 7 and a refine_boundaries edit")
    ap.add_argument("--sub", action="store_true", help="time the main library functions inside each edit")
    ap.add_argument("--root", default=None, help="import app and gpu_kernels from this checkout")
    ap.add_argument("--json", type=pathlib.Path, default=None)
    a = ap.parse_args(argv)
    rows = []
    for f in a.files:
        r = measure(f, a.device, a.repeat, full_res=a.full_res, edits=K_EDITS if a.k_only else EDITS, sub=a.sub)
        rows.append(r)
        print(f"{r['file']} ({r['faces']:,} faces, {r['device']}, {'full resolution' if a.full_res else 'default'}, "
              f"code {r['root']}): first run {r['first_run']['wall_s']:.3f} s; "
              f"k edit median {r['k_edit_median_s'] * 1e3:.1f} ms, max {r['k_edit_max_s'] * 1e3:.1f} ms", flush=True)
        for e in r["edits"]:
            print(f"  {e['edit']:24s} {e['wall_s'] * 1e3:7.1f} ms  ran {e['ran']}  k={e['k']}  "
                  f"same as a full run: {e['same_as_full_run']}"
                  + ("  sub " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in e["sub_s"].items()) if e["sub_s"] else ""),
                  flush=True)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"rows": rows, "host": f"{platform.machine()}, Python {platform.python_version()}",
                                      "command": "python benchmarks/mesh_stages.py " + " ".join(argv or sys.argv[1:])},
                                     indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
