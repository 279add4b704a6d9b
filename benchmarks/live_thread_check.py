"""Does a job on a new thread pay for itself on the GPU? (issue 20: the mesh k edit's compute is
20-45 ms slower through the tab, whose runner starts a new QThread per job, than through the stage
cache on the main thread.) Runs the k edits 5, 6, 7 of the 17k-face mesh through the stage cache:
on the main thread, each on a new thread, and all on one long-lived thread; prints the stage
report's totals (ms).

    python benchmarks/live_thread_check.py --device cuda --data .carry-live/data --full-res
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--data", type=pathlib.Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--full-res", action="store_true", help="cluster all 16,998 faces (the live benchmark's case)")
    args = ap.parse_args(argv)
    from app.tools import mesh_seg
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    f = args.data / "psb" / "off" / "101.off"
    data = mesh_seg.load(f)
    be = get_backend(args.device)
    tool = mesh_seg.TOOL
    base = tool.params.validate({"k": 3, "max_faces": None if args.full_res else 3000})
    caches = {}

    def fresh(k):
        # a cache holding the k = 3 run (the graph stage and the rest), made on the main thread
        cache = StageCache()
        tool.run_staged(data, base, device=be, cache=cache)
        caches[k] = cache

    def edit(k, out):
        t0 = time.perf_counter()
        with be.activate():
            _r, rep = tool.run_staged(data, {**base, "k": k}, device=be, cache=caches.pop(k))
        out.append((k, 1000 * rep.total, 1000 * (time.perf_counter() - t0), list(rep.ran)))

    ks = (5, 6, 7)
    for rnd in range(args.rounds):
        main_t, new_t, one_t = [], [], []
        for k in ks:
            fresh(k)
            edit(k, main_t)
        for k in ks:
            fresh(k)
            th = threading.Thread(target=edit, args=(k, new_t))
            th.start()
            th.join()
        for k in ks:
            fresh(k)
        th = threading.Thread(target=lambda out=one_t: [edit(k, out) for k in ks])
        th.start()
        th.join()
        for name, xs in (("main thread", main_t), ("a new thread each", new_t), ("one long-lived thread", one_t)):
            print(f"round {rnd}: {name:22s} " + ", ".join(f"k {k}: {c:.1f} ({w:.1f})" for k, c, w, _ in xs)
                  + f"  ran {xs[0][3]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
