"""Lead, session 22 (live tuning of the mesh tool): the first integer-k edit after a k = "auto" run, through the tool's
live path (``TOOL.run_staged`` with a stage cache, as the tab runs it), with the extra starts' prefetch
(``segment.prefetch_k_starts``, started by ``Stage.prefetch``) on and off, alternating arms; the user's pause between
the run and the edit is a 1 s sleep. Prints, per arm: the k = "auto" run, then the edits k = 6, 7, 12, in ms.

    python benchmarks/results/lead_session22/kedit.py MESH.off cpu|cuda [--pairs 2]
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

from app.tools import mesh_seg  # noqa: E402
from app.tools.stages import StageCache  # noqa: E402
from gpu_kernels.backend import get_backend  # noqa: E402
from gpu_kernels.mesh import segment as sg  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mesh")
    ap.add_argument("device")
    ap.add_argument("--pairs", type=int, default=2)
    a = ap.parse_args()
    dev = get_backend(a.device)
    data = mesh_seg.load(a.mesh)
    real = sg.prefetch_k_starts
    for arm in ("off", "on") * a.pairs:
        sg.prefetch_k_starts = real if arm == "on" else (lambda *_a, **_k: None)
        cache = StageCache(cap_bytes=2 << 30)
        base = {"k": "auto"}
        t = time.perf_counter()
        mesh_seg.TOOL.run_staged(data, base, device=dev, cache=cache, scope="x")
        ta = time.perf_counter() - t
        time.sleep(1.0)
        out = []
        for k in (6, 7, 12):
            t = time.perf_counter()
            mesh_seg.TOOL.run_staged(data, {**base, "k": k}, device=dev, cache=cache, scope="x")
            out.append(f"k{k} {1e3 * (time.perf_counter() - t):.0f}")
        print(Path(a.mesh).name, a.device, arm, f"auto {1e3 * ta:.0f}", " ".join(out), "ms", flush=True)
    sg.prefetch_k_starts = real
    return 0


if __name__ == "__main__":
    sys.exit(main())
