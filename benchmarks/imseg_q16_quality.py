"""Issue 21, session 16 (imseg-q7): the hybrid merge's quality on the 20 BSDS500 test images by
``benchmarks/imseg.py --quality``'s protocol (``bench_quality``: ours on the CPU at the defaults, felzenszwalb at its
own operating points and matched to our count per image), with ``merge="hybrid"``; run once, after the choice of M
(rule: ``benchmarks/results/imseg_q7_session16.md``).

Where ``contours.stage_merge`` does not route ``merge="hybrid"`` yet (the hook is contours.py's owner's), this
script routes it to ``hybrid.stage_merge`` in its own process (the same CPU labels).

    python benchmarks/imseg_q16_quality.py [--workers 2] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def route_hybrid() -> bool:
    """Route merge="hybrid" in this process where contours.py does not (True: it had to)."""
    import inspect

    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import hybrid as HY

    if "hybrid" in inspect.getsource(C.stage_merge) and "hybrid" in C.MERGES:
        return False
    orig = C.stage_merge

    def stage_merge(col, sp, *, coarseness=C.DEFAULT_COARSENESS, n_segments=0, merge=C.DEFAULT_MERGE, device=None,
                    progress=None):
        if merge == "hybrid":
            return HY.stage_merge(col, sp, coarseness=coarseness, n_segments=n_segments, device=device,
                                  progress=progress)
        return orig(col, sp, coarseness=coarseness, n_segments=n_segments, merge=merge, device=device,
                    progress=progress)

    C.stage_merge = stage_merge
    C.MERGES = tuple(sorted(set(C.MERGES) | {"hybrid"}))
    return True


def main(argv=None) -> int:
    import imseg as B

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--merges", default="hybrid,contour,learned")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    routed = route_hybrid()
    items = list(B.bsds_items(ROOT.parent / "shared" / "data" / "bsds500"))
    out = {"routed_here": routed, "images": len(items)}
    for k, merge in enumerate(a.merges.split(",")):
        res = B.bench_quality(items, {"merge": merge}, ("felzenszwalb",) if k == 0 else (), matched=k == 0,
                              workers=a.workers)
        out[merge] = res
        for name, m in res.items():
            print(merge, name, {c: round(m[c], 4) for c in ("covering", "pri", "voi", "segments") if c in m},
                  flush=True)
    h, f = out["hybrid"]["ours"], out["hybrid"]["felzenszwalb (scale 500)"]
    out["verdict"] = {"covering >= 0.56": h["covering"] >= 0.56, "covering > felzenszwalb 500": h["covering"] > f["covering"],
                      "PRI > felzenszwalb 500": h["pri"] > f["pri"], "VI < felzenszwalb 500": h["voi"] < f["voi"]}
    out["quality_passes"] = all(out["verdict"].values())
    print("verdict", json.dumps(out["verdict"]), "quality passes:", out["quality_passes"], flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
