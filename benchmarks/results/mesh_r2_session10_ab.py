"""Session 10 (mesh-r2, issue 22): a one-process A/B of k = "auto" end to end from the file (read + segment_mesh,
the defaults otherwise), configurations interleaved round by round (the order rotates each round):

- ``auto``: ``auto_layout="auto"`` (today's default);
- ``s9``: session 9's R2 (``autok.relayout`` after ``segment_prepared``: both results cut and finished in full,
  the starts' cuts not re-used);
- ``full``: R2 as now shipped (``auto_layout="concave"``, decided on the full mesh, the same labels as ``s9``);
- ``full_serial``: ``full`` without the overlapped cut (``segment.LAYOUT_OVERLAP = False``);
- ``working``: the candidate R2W (``autok.LAYOUT_DECIDE = "working"``).

    python benchmarks/results/mesh_r2_session10_ab.py A.off B.off --device cuda --rounds 7 --json OUT.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import autok  # noqa: E402
from gpu_kernels.mesh import segment as sg  # noqa: E402

CONFIGS = ("auto", "s9", "full", "full_serial", "working")


def once(path: str, cfg: str, device: str):
    t0 = time.perf_counter()
    v, f = read_mesh(path)
    if cfg == "s9":
        key = sg._row_cut_key
        sg._row_cut_key = lambda *a, **k: None  # (no cut cache: session 9's code cut the starts again)
        try:
            prep = sg.prepare_mesh(v, f, device=device)
            seg = sg.segment_prepared(prep, k="auto", device=device, auto_layout="auto")
            seg = autok.relayout(prep, seg, lambda kk: sg.segment_prepared(prep, k=kk, device=device), "concave")
        finally:
            sg._row_cut_key = key
    else:
        old = (autok.LAYOUT_DECIDE, sg.LAYOUT_OVERLAP)
        autok.LAYOUT_DECIDE = "working" if cfg == "working" else "full"
        sg.LAYOUT_OVERLAP = cfg != "full_serial"
        try:
            seg = sg.segment_mesh(v, f, k="auto", device=device, auto_layout="auto" if cfg == "auto" else "concave")
        finally:
            autok.LAYOUT_DECIDE, sg.LAYOUT_OVERLAP = old
    return time.perf_counter() - t0, seg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    cfgs = a.configs.split(",")
    out = {}
    for path in a.files:
        name = Path(path).stem
        kept = {}
        for c in cfgs:
            once(path, c, a.device)  # warm-up
        times = {c: [] for c in cfgs}
        for r in range(a.rounds):
            order = cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]
            for c in order:
                t, seg = once(path, c, a.device)
                times[c].append(t)
                kept[c] = (int(seg.k), (seg.info.get("auto_layout") or {}).get("kept", "-"),
                           seg.labels.tobytes().__hash__())
        out[name] = {c: {"best_ms": 1000 * min(ts), "median_ms": 1000 * statistics.median(ts),
                         "all_ms": [1000 * t for t in ts], "k": kept[c][0], "kept": kept[c][1]} for c, ts in times.items()}
        same = {c: kept[c][2] == kept["full"][2] for c in cfgs if "full" in kept}
        for c in cfgs:
            x = out[name][c]
            print(f"{name} {c:12s} best {x['best_ms']:6.1f} ms  median {x['median_ms']:6.1f} ms  k {x['k']} "
                  f"kept {x['kept']}  labels as full: {same.get(c)}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
