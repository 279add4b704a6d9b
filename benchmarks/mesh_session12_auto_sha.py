"""Session 12 (mesh-auto, issue 22): the SHA-1 of the final labels of ``segment_mesh`` (read from the file, the
default pipeline) per mesh, k and switch, with this tree's merge loops and, in the same process, with the judged
code's (session 11, e44a05b: its ``boundary.py`` and ``learned.py`` from ``--old``, the NumPy loops, put in place of
this tree's for ``segment``'s merges); everything else is this tree's, so only the merge loops differ.

    python benchmarks/mesh_session12_auto_sha.py A.off B.off --device cuda --k auto,6,12 --old DIR --json OUT.json
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _old_modules(old: Path):
    """The judged ``boundary`` and ``learned`` as modules of their own (the old learned loop on the old boundary)."""
    import gpu_kernels.mesh as pkg

    mods = {}
    keep = pkg.boundary
    try:
        for name in ("boundary", "learned"):
            m = types.ModuleType(f"gpu_kernels.mesh.{name}")
            m.__file__ = str(old / f"{name}.py")
            exec(compile((old / f"{name}.py").read_text(), m.__file__, "exec"), m.__dict__)
            mods[name] = m
            if name == "boundary":
                pkg.boundary = m  # (the old learned imports this one)
    finally:
        pkg.boundary = keep
    mods["boundary"].COMPILED_MERGE = False  # (the NumPy loop: the old compiled one is bit-identical, a test shows)

    def no_progress(fn):
        def call(*a, progress=None, **kw):  # (the judged code has no cancel keyword)
            return fn(*a, **kw)
        return call

    for name, fns in (("boundary", ("merge_weakest_boundaries",)), ("learned", ("k_merge", "auto_merge", "learned_merge"))):
        for fn in fns:
            setattr(mods[name], fn, no_progress(getattr(mods[name], fn)))
    return mods


@contextlib.contextmanager
def _using(mods):
    import gpu_kernels.mesh as pkg
    from gpu_kernels.mesh import segment as sg

    saved = (sg._bd, pkg.learned, sys.modules["gpu_kernels.mesh.learned"])
    sg._bd = mods["boundary"]
    pkg.learned = sys.modules["gpu_kernels.mesh.learned"] = mods["learned"]
    try:
        yield
    finally:
        sg._bd, pkg.learned, sys.modules["gpu_kernels.mesh.learned"] = saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--k", default="auto,6,12")
    ap.add_argument("--old", type=Path, required=True, help="a folder with the judged boundary.py and learned.py")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import numpy as np

    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh import defaults
    from gpu_kernels.mesh import learned as _ln  # noqa: F401  (imported before the swap)
    from gpu_kernels.mesh import segment as sg

    mods = _old_modules(args.old)
    rows = []
    for path in args.files:
        v, f = read_mesh(path)
        for kk in args.k.split(","):
            k = kk if kk == "auto" else int(kk)
            for sw in (("hand", "learned") if k == "auto" else ("learned",)):
                old = defaults.DEFAULT_AUTO_MERGE
                defaults.DEFAULT_AUTO_MERGE = sw
                row = {"file": Path(path).name, "k": kk, "auto_merge": sw}
                try:
                    for code in ("new", "judged"):
                        with _using(mods) if code == "judged" else contextlib.nullcontext():
                            t = time.perf_counter()
                            seg = sg.segment_mesh(v, f, k=k, device=args.device)
                            row[f"{code}_s"] = round(time.perf_counter() - t, 3)
                        row[f"{code}_sha1"] = hashlib.sha1(np.ascontiguousarray(seg.labels).tobytes()).hexdigest()
                        row[f"{code}_parts"] = int(seg.k)
                finally:
                    defaults.DEFAULT_AUTO_MERGE = old
                row["same"] = row["new_sha1"] == row["judged_sha1"]
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(f"{sum(r['same'] for r in rows)} of {len(rows)} segmentations: the same SHA-1 with the judged merge code")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
