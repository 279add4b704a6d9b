"""Issue 22 (session 7): end to end from the file with the defaults (read + segment_mesh), best
of N after a warm-up, with the simplifier the host resolves ``auto`` to (``--simplifier`` to
force one). Prints the stages' timings and writes them as JSON.

    python benchmarks/mesh_simplify_session7_speed.py 101.off,281.off --device cuda --repeat 3
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402
from gpu_kernels.mesh.segment import segment_mesh  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--simplifier", default=None)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.simplifier:
        simp.SIMPLIFIER = a.simplifier
    out = []
    for path in a.files.split(","):
        def once(path=path):
            t0 = time.perf_counter()
            v, f = read_mesh(path)
            seg = segment_mesh(v, f, device=a.device)
            return time.perf_counter() - t0, seg, len(f)
        once()
        runs = [once() for _ in range(a.repeat)]
        t, seg, nf = min(runs, key=lambda r: r[0])
        row = {"file": path, "faces": nf, "device": a.device, "total_s": t, "all_s": [r[0] for r in runs],
               "k": int(seg.k), "simplifier": simp._resolve(None), "timings": seg.info["timings"]}
        out.append(row)
        print(f"speed {Path(path).name} {nf} faces {a.device} ({row['simplifier']}): {t:.3f} s (runs "
              f"{', '.join(f'{r[0]:.3f}' for r in runs)}) k={seg.k} "
              + ", ".join(f"{k} {x:.3f}" for k, x in seg.info["timings"].items()), flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
