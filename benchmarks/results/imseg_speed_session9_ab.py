"""Record (session 9; moved here in session 10 from benchmarks/): it toggles the old-kernel switches
that session 10 removed, so it runs only in a checkout of 75fe3a8, as benchmarks/imseg_speed9.py.

Session 9 speed A/B of the k-means pipeline (issue 21), one process, variants taking turns.

Variants are module switches (the same code otherwise): ``old`` = the kernels before session 9,
``new`` = every session-9 switch on, ``no_<switch>`` = all but that one. Each switch of variant clears
the CUDA graphs (they hold the kernels they were captured with) and warms up again. Every
variant's outputs (labels, clusters, centres, every feature) are checked equal to ``old``'s
before any timing. Then:

* ``--profile``: the GPU time of every kernel of one 512^2 library call (CUPTI through
  torch.profiler where PyTorch is installed), per variant;
* rounds: library call (``gpu_kernels.imseg.api.segment``) and the tool's run
  (``app.tools.imseg.run``: what the CLI, batch and the demo call) at 512^2, the library call
  at 4K, median of ``--rep`` calls each, variants taking turns;
* ``--features``: region features at 4K on the k-means labels (min_size 64 and 0) against
  cuCIM's ``regionprops_table`` (when installed), SMEM on and off.

    python benchmarks/imseg_speed9.py --rounds 5 --rep 30 --profile --features --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import median

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.imseg_profile import _timed, kernel_profile, natural_image  # noqa: E402

#: the session's switches: variant "old" sets every one off, "new" every one on, "no_<name>" every
#: one but <name> on
SWITCHES = {
    "features": ("gpu_kernels.imseg.features", "SMEM"),
    "codes": ("gpu_kernels.imseg.color", "CODES_SMEM"),
    "kmeans32": ("gpu_kernels.imseg.kmeans", "FUSED32"),
    "init": ("gpu_kernels.imseg.kmeans", "INIT_FAST"),
}


def _set(variant: str) -> None:
    import importlib

    for name, (mod, attr) in SWITCHES.items():
        on = variant != "old" and variant != f"no_{name}"
        setattr(importlib.import_module(mod), attr, on)
    from gpu_kernels.imseg import graphs as G

    G.clear()


def _outputs(seg) -> dict:
    out = {"labels": seg.labels, "clusters": seg.clusters, "centres": seg.centres}
    out.update({f"f_{k}": v for k, v in seg.features.items()})
    return out


def _same(a: dict, b: dict) -> list:
    return [k for k in a if not np.array_equal(a[k], b[k])] + sorted(set(a) ^ set(b))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="old,new," + ",".join(f"no_{k}" for k in SWITCHES))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--round-variants", default="", help="variants of the timed rounds (default: --variants)")
    ap.add_argument("--rep", type=int, default=30)
    ap.add_argument("--rep4k", type=int, default=10)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--profile-calls", default="lib512", help="calls to profile (lib512, lib4k)")
    ap.add_argument("--no-checks", action="store_true", help="skip the output checks (a profile-only run)")
    ap.add_argument("--features", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    import cupy as cp

    from app.tools import imseg
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg.api import segment

    be = get_backend("cuda")
    print(f"== device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}", flush=True)
    variants = a.variants.split(",")
    img512 = natural_image(512, 512)
    img4k = natural_image(2160, 3840)
    data = imseg.ImageData(None, img512)
    p = imseg.PARAMS.validate({"method": "kmeans"})
    res: dict = {"rows": [], "profile": {}, "features": [], "mismatch": {}}

    def pyloop():
        x = 0
        for i in range(20000):
            x += i * i
        return x

    res["pyloop_us"] = 1e6 * median(_timed(pyloop, 30))
    print(f"== host: 20,000-step loop {res['pyloop_us']:.0f} us", flush=True)
    calls = {
        "lib512": lambda: segment(img512, method="kmeans", device=be),
        "tool512": lambda: imseg.run(data, p, device=be),
        "lib4k": lambda: segment(img4k, method="kmeans", device=be),
        "contours512": lambda: segment(img512, method="contours", device=be),
    }
    ref = {}
    for v in ([] if a.no_checks else variants):
        _set(v)
        for name in ("lib512", "lib4k", "contours512"):
            outs = [_outputs(calls[name]()) for _ in range(3)]   # the ordinary path, the capture, a replay
            if v == variants[0]:
                ref[name] = outs[0]
            bad = [x for o in outs for x in _same(ref[name], o)]
            res["mismatch"][f"{v}/{name}"] = sorted(set(bad))
            print(f"== check {v} {name}: {'same as ' + variants[0] if not bad else 'DIFFERS ' + str(set(bad))}",
                  flush=True)
        for _ in range(3):
            seg = calls["tool512"]().seg
            bad = _same(ref["lib512"], _outputs(seg))
            if bad:
                res["mismatch"][f"{v}/tool512"] = bad
                print(f"== check {v} tool512 DIFFERS {bad}", flush=True)
    s = segment(img512, method="kmeans", device=be)
    print(f"== k-means 512^2: {s.n_regions} regions, k {s.n_clusters}, {s.info['n_colours']} colours, "
          f"rounds {s.info['merge_rounds']}, syncs {s.syncs}", flush=True)
    if a.profile:
        for call in a.profile_calls.split(","):
            for v in variants:
                _set(v)
                for _ in range(3):
                    calls[call]()
                prof = kernel_profile(calls[call], rep=5)
                if prof:
                    res["profile"][f"{v}/{call}"] = prof
                    busy = sum(t for _, t in prof.values())
                    print(f"== kernels {v} {call}: busy {busy:.1f} us, launches {sum(c for c, _ in prof.values()):.0f}",
                          flush=True)
                    for k, (c, t) in prof.items():
                        if t >= 1.0:
                            print(f"     {t:7.1f} us x{c:.0f} {k}", flush=True)
    timed = a.round_variants.split(",") if a.round_variants else variants
    for rnd in range(a.rounds):
        for v in timed:
            _set(v)
            for name in ("lib512", "tool512", "lib4k"):
                for _ in range(3):
                    calls[name]()
                ts = _timed(calls[name], a.rep4k if name == "lib4k" else a.rep)
                row = {"round": rnd, "variant": v, "call": name, "ms": 1e3 * median(ts),
                       "p10": 1e3 * sorted(ts)[len(ts) // 10], "p90": 1e3 * sorted(ts)[(9 * len(ts)) // 10]}
                res["rows"].append(row)
                print(f"== round {rnd} {v:9s} {name:8s} {row['ms']:.3f} ms (p10 {row['p10']:.3f}, "
                      f"p90 {row['p90']:.3f})", flush=True)
    print("== summary (min / median / max of the round medians, ms)", flush=True)
    for name in ("lib512", "tool512", "lib4k"):
        for v in timed:
            ms = [r["ms"] for r in res["rows"] if r["call"] == name and r["variant"] == v]
            if ms:
                print(f"   {name:8s} {v:9s} {min(ms):.3f} / {median(ms):.3f} / {max(ms):.3f}", flush=True)
    if a.features:
        from benchmarks import imseg as B
        from gpu_kernels.imseg import features as F

        for smem in (False, True):
            F.SMEM = smem
            for r in B.bench_features(None):
                r["smem"] = smem
                res["features"].append(r)
                print(f"== features smem={smem} {r}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
