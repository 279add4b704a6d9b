"""Issue 22 (session 11): this session's changed pieces timed alone, old against new, on the arguments a
real run passes them (captured from one ``segment_mesh`` run from the file), so that the host's
noise in pymeshlab's step does not hide them:

- ``merge``: every ``boundary.merge_weakest_boundaries`` call of the run (``COMPILED_MERGE``);
- ``memberships``: ``boundary.part_memberships`` (``COMPILED_DIJKSTRA``);
- ``nearest``: ``segment._nearest_centroids`` (``COMPILED_NEAREST``).

Per piece, the sum over the run's calls, best and median of ``--reps`` repeats, new and old alternated;
the outputs of new and old compared (equal bit for bit).

Example::

    python benchmarks/mesh_speed11_pieces.py 101.off 281.off --device cuda --reps 15
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import boundary, segment  # noqa: E402

PIECES = {
    "merge": (boundary, "merge_weakest_boundaries", boundary, "COMPILED_MERGE"),
    "memberships": (boundary, "part_memberships", boundary, "COMPILED_DIJKSTRA"),
    "nearest": (segment, "_nearest_centroids", segment, "COMPILED_NEAREST"),
}


def _copy(x):
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, dict):
        return dict(x)
    if isinstance(x, list):
        return list(x)
    return x


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b


def capture(path: str, device: str) -> dict:
    calls: dict = {k: [] for k in PIECES}
    saved = []
    for name, (mod, attr, _, _) in PIECES.items():
        real = getattr(mod, attr)

        def spy(*a, _real=real, _name=name, **kw):
            calls[_name].append((tuple(_copy(x) for x in a), {k: _copy(v) for k, v in kw.items()}))
            return _real(*a, **kw)

        saved.append((mod, attr, real))
        setattr(mod, attr, spy)
    try:
        v, f = read_mesh(path)
        segment.segment_mesh(v, f, device=device)
    finally:
        for mod, attr, real in saved:
            setattr(mod, attr, real)
    return calls


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=11)
    args = ap.parse_args(argv)
    for path in args.meshes:
        v, f = read_mesh(path)
        segment.segment_mesh(v, f, device=args.device)       # warm-up: compiles, loads
        calls = capture(path, args.device)
        name = Path(path).name
        for piece, (mod, attr, smod, switch) in PIECES.items():
            fn = getattr(mod, attr)
            got = {True: [], False: []}
            outs = {}
            for r in range(args.reps):
                for on in ((True, False) if r % 2 == 0 else (False, True)):
                    setattr(smod, switch, on)
                    t = time.perf_counter()
                    res = [fn(*[_copy(x) for x in a], **{k: _copy(x) for k, x in kw.items()}) for a, kw in calls[piece]]
                    got[on].append(time.perf_counter() - t)
                    outs[on] = res
            setattr(smod, switch, True)
            same = len(outs[True]) == len(outs[False]) and all(_same(a, b) for a, b in zip(outs[True], outs[False], strict=True))
            new, old = got[True], got[False]
            print(f"pieces11 {name} {piece:12s} calls {len(calls[piece]):3d}  old {1e3 * min(old):7.2f} / "
                  f"{1e3 * statistics.median(old):7.2f}  new {1e3 * min(new):7.2f} / {1e3 * statistics.median(new):7.2f} ms"
                  f" (best / median of {args.reps}; copies of the arguments included)  same: {same}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
