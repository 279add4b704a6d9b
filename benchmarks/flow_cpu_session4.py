"""Issue 25, session 4: the flow's optional compiled CPU path (numba) against the NumPy path.

* ``accuracy``: the default on the ten shared pairs (FlyingChairs 0-5, Middlebury 4), both paths:
  AEE, AEE / DIS medium (mean ratio and worst pair), and the largest difference of the flows.
* ``speed``: the default at 640x480 (FlyingChairs 0 resized), CPU-seconds and wall, NumPy and
  numba (2 threads and 1), each in a fresh process after one warm-up call; and the first call's
  compile time, cold (empty cache) and warm (from the on-disk cache), in fresh processes.

    nice -n 10 python benchmarks/flow_cpu_session4.py accuracy
    nice -n 10 python benchmarks/flow_cpu_session4.py speed --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flow import _gray8, aee, load_chairs, load_middlebury_rgb, log  # noqa: E402
from flow_session4 import _root  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "flow_cpu_session4.json"


def _save(key, val):
    res = json.loads(OUT.read_text()) if OUT.exists() else {}
    res[key] = val
    OUT.write_text(json.dumps(res, indent=1, default=str))


def accuracy():
    import cv2

    from gpu_kernels.flow import _numba
    from gpu_kernels.flow.search import inverse_search_flow

    sets = load_chairs(_root()) + load_middlebury_rgb(_root())
    rows = {}
    for ds, a, b, gt, valid in sets:
        f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)
        r = {"dis_medium": aee(f[..., 0], f[..., 1], gt, valid)}
        flows = {}
        for on in (False, True):
            _numba.ENABLED = on
            t0 = time.process_time()
            res = inverse_search_flow(a, b, device="cpu")
            r[f"cpu_s_{'numba' if on else 'numpy'}"] = round(time.process_time() - t0, 3)
            r["aee_numba" if on else "aee_numpy"] = aee(res.u, res.v, gt, valid)
            flows[on] = res
        r["max_flow_diff"] = float(max(np.abs(flows[True].u - flows[False].u).max(),
                                       np.abs(flows[True].v - flows[False].v).max()))
        r["max_quality_diff"] = float(np.abs(flows[True].quality - flows[False].quality).max())
        rows[ds] = r
        log(ds, r)
    dis = np.array([r["dis_medium"] for r in rows.values()])
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "pairs": rows}
    for k in ("numpy", "numba"):
        e = np.array([r[f"aee_{k}"] for r in rows.values()])
        ratio = e / dis
        out[f"mean_ratio_{k}"] = float(e.mean() / dis.mean())
        out[f"worst_ratio_{k}"] = float(ratio.max())
        out[f"worst_pair_{k}"] = list(rows)[int(ratio.argmax())]
    out["max_flow_diff"] = max(r["max_flow_diff"] for r in rows.values())
    log({k: v for k, v in out.items() if k != "pairs"})
    _save("accuracy", out)


_CHILD = """
import json, os, sys, time
sys.path.insert(0, {bench!r}); sys.path.insert(0, {repo!r})
from flow_session4 import _pair
from gpu_kernels.flow import _numba
from gpu_kernels.flow.search import inverse_search_flow
_, a, b = _pair((640, 480))
out = {{}}
t0, c0 = time.perf_counter(), time.process_time()
inverse_search_flow(a, b, device="cpu")
out["first_wall"], out["first_cpu"] = time.perf_counter() - t0, time.process_time() - c0
walls, cpus = [], []
for _ in range({repeat}):
    t0, c0 = time.perf_counter(), time.process_time()
    inverse_search_flow(a, b, device="cpu")
    walls.append(time.perf_counter() - t0); cpus.append(time.process_time() - c0)
out.update(walls=walls, cpus=cpus, load=os.getloadavg(), numba=_numba.kernels() is not None)
print("RESULT", json.dumps(out))
"""


def _child(env_extra, repeat):
    env = dict(os.environ, OMP_NUM_THREADS="2", **env_extra)
    code = _CHILD.format(bench=str(Path(__file__).resolve().parent), repo=str(Path(__file__).resolve().parents[1]),
                         repeat=repeat)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[7:])


def speed(repeat):
    import numba

    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "numba": numba.__version__,
           "cores": os.cpu_count(), "runs": {}}
    with tempfile.TemporaryDirectory() as cache:
        for name, env in (("numba_cold_cache", {"NUMBA_CACHE_DIR": cache}),
                          ("numba_warm_cache", {"NUMBA_CACHE_DIR": cache}),
                          ("numpy", {"GPULAB_FLOW_NUMBA": "0"}),
                          ("numba_1_thread", {"NUMBA_CACHE_DIR": cache, "NUMBA_NUM_THREADS": "1"})):
            r = _child(env, repeat if name != "numba_cold_cache" else 1)
            r["wall_min"], r["wall_median"] = min(r["walls"]), float(np.median(r["walls"]))
            r["cpu_min"], r["cpu_median"] = min(r["cpus"]), float(np.median(r["cpus"]))
            res["runs"][name] = r
            log(f"{name}: first call {r['first_wall']:.2f} s wall ({r['first_cpu']:.2f} CPU-s); then wall min "
                f"{r['wall_min']:.3f} median {r['wall_median']:.3f}, CPU-s min {r['cpu_min']:.3f}; load {r['load']}")
    _save("speed", res)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("accuracy", "speed"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    if args.what == "accuracy":
        accuracy()
    else:
        speed(args.repeat)


if __name__ == "__main__":
    main()
