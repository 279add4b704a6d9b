"""Live tuning of the mesh tool, compute share: how long a k or epsilon edit takes through the
stage cache (issue 20), with the dual graph and the distances re-used.

For each mesh file: a full run through ``TOOL.run_staged`` (the window's path, without Qt),
then edits of k and epsilon; for each edit the stages that ran, their times, the wall time
and whether the labels equal a fresh full run's (``same_as_full_run``).

    python benchmarks/mesh_stages.py 101.off --device cuda --json out.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.tools import mesh_seg  # noqa: E402
from app.tools.stages import StageCache  # noqa: E402
from gpu_kernels.backend import get_backend  # noqa: E402

#: the edits, in order, each from the previous one's parameters
EDITS = (("k", 5), ("k", 6), ("k", 4), ("epsilon", 0.08), ("k", "auto"), ("k", 7))


def measure(path: str, device: str, repeat: int = 1) -> dict:
    be = get_backend(device)
    data = mesh_seg.load(path)
    cache = StageCache(cap_bytes=2 << 30)
    params = {"k": "auto"}
    t0 = time.perf_counter()
    _, rep = mesh_seg.TOOL.run_staged(data, params, device=be, cache=cache, scope="bench")
    first = {"wall_s": time.perf_counter() - t0, "ran": rep.ran, "seconds": rep.seconds}
    edits = []
    for _ in range(repeat):
        for name, val in EDITS:
            params = {**params, name: val}
            t0 = time.perf_counter()
            res, rep = mesh_seg.TOOL.run_staged(data, params, device=be, cache=cache, scope="bench")
            wall = time.perf_counter() - t0
            full = mesh_seg.run(data, params, device=be)
            edits.append({"edit": f"{name}={val}", "wall_s": wall, "ran": rep.ran, "reused": rep.reused,
                          "seconds": rep.seconds, "k": int(res.seg.k),
                          "same_as_full_run": bool(np.array_equal(res.seg.labels, full.seg.labels))})
    k_edits = [e["wall_s"] for e in edits if e["edit"].startswith("k=") and e["edit"] != "k=auto"]
    return {"file": pathlib.Path(path).name, "faces": len(data.faces), "device": be.label, "first_run": first,
            "edits": edits, "k_edit_median_s": float(np.median(k_edits)), "k_edit_max_s": float(np.max(k_edits))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=pathlib.Path, default=None)
    a = ap.parse_args(argv)
    rows = []
    for f in a.files:
        r = measure(f, a.device, a.repeat)
        rows.append(r)
        print(f"{r['file']} ({r['faces']:,} faces, {r['device']}): first run {r['first_run']['wall_s']:.3f} s; "
              f"k edit median {r['k_edit_median_s'] * 1e3:.0f} ms, max {r['k_edit_max_s'] * 1e3:.0f} ms", flush=True)
        for e in r["edits"]:
            print(f"  {e['edit']:14s} {e['wall_s'] * 1e3:7.1f} ms  ran {e['ran']}  k={e['k']}  "
                  f"same as a full run: {e['same_as_full_run']}", flush=True)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"rows": rows, "host": f"{platform.machine()}, Python {platform.python_version()}",
                                      "command": "python benchmarks/mesh_stages.py " + " ".join(argv or sys.argv[1:])},
                                     indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
