"""Session 12 (mesh-auto, issue 22): the SHA-1 of the final labels of ``segment_mesh`` (read from the file, the
default pipeline) per mesh, k and switch, to compare the code of one tree against another's (the compiled learned
merge loop against the judged NumPy one of e44a05b): run once per tree, ``--root`` first on the path.

    python benchmarks/mesh_session12_auto_sha.py A.off B.off --device cuda --k auto,6,12 --json OUT.json
    python benchmarks/mesh_session12_auto_sha.py A.off --root /tmp/old ...   # the old tree's gpu_kernels
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--k", default="auto,6,12")
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, args.root)
    import numpy as np

    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh import defaults
    from gpu_kernels.mesh import segment as sg

    rows = []
    for path in args.files:
        v, f = read_mesh(path)
        for kk in args.k.split(","):
            k = kk if kk == "auto" else int(kk)
            for sw in (("hand", "learned") if k == "auto" else ("learned",)):
                old = defaults.DEFAULT_AUTO_MERGE
                defaults.DEFAULT_AUTO_MERGE = sw
                try:
                    t = time.perf_counter()
                    seg = sg.segment_mesh(v, f, k=k, device=args.device)
                    t = time.perf_counter() - t
                finally:
                    defaults.DEFAULT_AUTO_MERGE = old
                row = {"file": Path(path).name, "k": kk, "auto_merge": sw, "parts": int(seg.k),
                       "sha1": hashlib.sha1(np.ascontiguousarray(seg.labels).tobytes()).hexdigest(),
                       "seconds": round(t, 3), "tree": sg.__file__}
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
