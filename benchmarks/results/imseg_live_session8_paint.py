"""What the image segmentation tab's drawing of a new result costs on the host, old drawing against
new, interleaved in one process (session 8, imseg live; see imseg_live_session8.md).

The results of four coarseness values on the 1080p sample (as benchmarks/live.py makes it) are
computed once; then each is shown by ``ImsegTab.show_result`` (live.py's paint_s), the posted
events run (events_s) and the tab repainted (repaint_s minus events_s), as live.py measures an
edit, alternating between two tabs: "old" draws the boundaries with ``vis.boundaries`` (a new
8-bit conversion of the input, a boolean-mask paint) and resets the region table's model, as
before this session's change; "new" is the tab as it is. Both tabs' grabs are compared after
every edit (pixel for pixel).

    QT_QPA_PLATFORM=offscreen python benchmarks/results/imseg_live_session8_paint.py [--device cuda] [--rounds 8]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--json", type=pathlib.Path, default=None)
    a = ap.parse_args(argv)
    import numpy as np
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    import live

    from app.tools import imseg
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import vis

    data, base = live.load_input(imseg.TOOL, False)
    be = get_backend(a.device)
    res = []
    for c in (3.0, 3.1, 3.2, 3.4):
        p = imseg.TOOL.params.defaults()
        p.update(base)
        p["coarseness"] = c
        res.append(imseg.TOOL.run(data, p, device=be, progress=None))


    tabs = {}
    for kind in ("old", "new"):
        tab = imseg.TOOL.tab_class()()
        tab.resize(1300, 800)
        tab.show()
        tab.cache = StageCache()
        tab.set_input(data, pathlib.Path("imseg"))
        if kind == "old":
            tab._painter.boundaries = lambda image, labels: vis.boundaries(image, labels)
            tab.table.model_.INCREMENTAL = False
        tabs[kind] = tab
        app.processEvents()

    def one(tab, r):
        tab.result = r
        t0 = time.perf_counter()
        tab.show_result(r)
        t1 = time.perf_counter()
        app.processEvents()
        t2 = time.perf_counter()
        tab.repaint()
        t3 = time.perf_counter()
        return t1 - t0, t2 - t1, t3 - t1

    for kind in tabs:   # warm-up: the first result of each
        one(tabs[kind], res[0])
    rows = {"old": [], "new": []}
    same = True
    for rnd in range(a.rounds):
        for r in res[1:]:
            for kind in (("old", "new") if rnd % 2 == 0 else ("new", "old")):
                rows[kind].append(one(tabs[kind], r))
            if rnd == 0:
                same &= tabs["old"].grab().toImage() == tabs["new"].grab().toImage()
    out = {"device": a.device, "rounds": a.rounds, "edits_per_kind": len(rows["new"]), "same_pixels": bool(same)}
    for kind, rr in rows.items():
        x = np.array(rr) * 1e3
        out[kind] = {n: {"median_ms": float(np.median(x[:, j])), "min_ms": float(x[:, j].min()),
                         "max_ms": float(x[:, j].max())}
                     for j, n in enumerate(("paint", "events", "repaint"))}
        tot = x.sum(axis=1) - x[:, 1]   # repaint includes events
        out[kind]["paint+repaint"] = {"median_ms": float(np.median(tot)), "min_ms": float(tot.min()),
                                      "max_ms": float(tot.max())}
        print(f"{kind}: " + ", ".join(f"{n} {v['median_ms']:.2f} ms ({v['min_ms']:.2f}-{v['max_ms']:.2f})"
                                      for n, v in out[kind].items()))
    print(f"same pixels (tab grabs, old vs new drawing, every edit of round 1): {same}")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    for t in tabs.values():
        t.close()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
