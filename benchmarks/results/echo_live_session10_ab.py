"""Session 10, echo live α edit: the compute of the edit through the tool's stage cache, for one
code tree (``--root``: this checkout, or the session's starting code unpacked beside it), and a
host-memory micro-benchmark (``--micro``). One JSON line per measurement on stdout.

    python benchmarks/results/echo_live_session10_ab.py --root . --host-alloc populate
    python benchmarks/results/echo_live_session10_ab.py --micro
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
import threading
import time

import numpy as np

ALPHAS = (0.025, 0.03, 0.035, 0.04, 0.045, 0.05, 0.055, 0.06)


def emit(**kw):
    print(json.dumps(kw), flush=True)


def micro(n=128, rounds=5):
    """25 MB (one 128^3 field) down from the device into: a fresh np.empty, a fresh mapping with
    MAP_POPULATE, a fresh pinned block, a reused pinned block; and host copies."""
    import mmap

    import cupy as cp

    shape = (3, n, n, n)
    nbytes = 4 * int(np.prod(shape))
    u = cp.random.random(shape, dtype=cp.float32)
    cp.cuda.runtime.deviceSynchronize()
    keep = []  # keep every fresh buffer alive, as the stage cache keeps its results

    def t(name, fn):
        ts = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            fn()
            ts.append(1e3 * (time.perf_counter() - t0))
        emit(micro=name, ms_min=round(min(ts), 3), ms_med=round(sorted(ts)[len(ts) // 2], 3))

    def fresh_np():
        a = np.empty(shape, np.float32)
        u.get(out=a)
        keep.append(a)

    def fresh_np_asnumpy_copy():  # the old pairs stage: asnumpy, then a copy into the result array
        a = np.empty((1,) + shape, np.float32)
        a[0] = cp.asnumpy(u)
        keep.append(a)

    def fresh_populate():
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
        a = np.frombuffer(m, np.float32).reshape(shape)
        u.get(out=a)
        keep.append(a)

    def populate_only():
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
        keep.append(m)

    def madvise_populate():
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        m.madvise(getattr(mmap, "MADV_POPULATE_WRITE", 23), 0, nbytes)
        a = np.frombuffer(m, np.float32).reshape(shape)
        u.get(out=a)
        keep.append(a)

    def fresh_pinned():
        mem = cp.cuda.alloc_pinned_memory(nbytes)
        a = np.frombuffer(mem, np.float32, int(np.prod(shape))).reshape(shape)
        u.get(out=a)
        keep.append(a)

    pinned = np.frombuffer(cp.cuda.alloc_pinned_memory(nbytes), np.float32, int(np.prod(shape))).reshape(shape)

    def reused_pinned():
        u.get(out=pinned)

    resident = np.empty(shape, np.float32)
    resident[...] = 1

    def reused_pageable():
        u.get(out=resident)

    def zeros2_copy():  # the old trajectory stage for two frames
        t_ = np.zeros((2,) + shape, np.float32)
        t_[1] = resident
        keep.append(t_)

    def upload_pageable():
        cp.asarray(resident)
        cp.cuda.runtime.deviceSynchronize()

    for name, fn in (("fresh_np_get", fresh_np), ("fresh_np_asnumpy_copy", fresh_np_asnumpy_copy),
                     ("fresh_populate_get", fresh_populate), ("populate_only", populate_only),
                     ("madvise_populate_get", madvise_populate), ("fresh_pinned_get", fresh_pinned),
                     ("reused_pinned_get", reused_pinned), ("reused_pageable_get", reused_pageable),
                     ("zeros2_copy", zeros2_copy), ("upload_pageable", upload_pageable)):
        try:
            t(name, fn)
        except Exception as exc:  # noqa: BLE001 - a figure too
            emit(micro=name, error=f"{type(exc).__name__}: {exc}")
        keep.clear()
    try:
        thp = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
    except OSError as exc:
        thp = str(exc)
    emit(micro="thp", value=thp)


def digest(res) -> str:
    h = hashlib.sha1()
    for a in (res.pairwise, res.trajectory):
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(json.dumps(res.stats, sort_keys=True).encode())
    h.update(json.dumps(res.metrics, sort_keys=True).encode())
    return h.hexdigest()


def compute(root: pathlib.Path, host_alloc: str | None, label: str, device: str = "cuda", n: int = 128,
            thread: bool = False, idle: float = 0.0):
    sys.path.insert(0, str(root.resolve()))
    from app.tools import echo
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend
    from gpu_kernels.echo.synthetic import make_pair

    if host_alloc:
        from gpu_kernels.echo import sequence

        sequence.HOST_ALLOC = host_alloc
    be = get_backend(device)
    f, m, gt = make_pair(n, shift=(0.5, -0.5, 1.0), seed=2)   # benchmarks/live.py's echo input
    data = echo.EchoData(np.stack([f, m]).astype(np.float32), (1.0, 1.0, 1.0), ["f", "m"], truth={(0, 1): gt})
    cache = StageCache()
    p = echo.PARAMS.validate({"levels": 3})
    echo.TOOL.run_staged(data, p, device=be, cache=cache)
    p = echo.PARAMS.validate({**p, "rho": 2.5})      # as live.py: the targets follow a full-run edit
    echo.TOOL.run_staged(data, p, device=be, cache=cache)
    for a in ALPHAS:
        p = echo.PARAMS.validate({**p, "alpha": a})
        time.sleep(idle)   # as the tab: the debounce's idle time before each edit
        box = []

        def edit(p=p, box=box):
            with be.activate():
                t0 = time.perf_counter()
                box.extend(echo.TOOL.run_staged(data, p, device=be, cache=cache))
                box.append(time.perf_counter() - t0)

        if thread:  # as the tab: each job in a new thread
            t = threading.Thread(target=edit)
            t.start()
            t.join()
        else:
            edit()
        res, rep, dt = box
        emit(label=label, edit=f"alpha={a}", ms=round(1e3 * dt, 2), ran=list(rep.ran),
             stages_ms={k: round(1e3 * v, 2) for k, v in rep.seconds.items()})
    full = echo.run(data, p, device=be)
    emit(label=label, edit="last alpha vs a full run", same=digest(res) == digest(full), digest=digest(res))
    for ref in (1, 0):
        p = echo.PARAMS.validate({**p, "reference": ref})
        t0 = time.perf_counter()
        res, rep = echo.TOOL.run_staged(data, p, device=be, cache=cache)
        emit(label=label, edit=f"reference={ref}", ms=round(1e3 * (time.perf_counter() - t0), 2), ran=list(rep.ran),
             digest=digest(res))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=pathlib.Path, default=pathlib.Path("."))
    ap.add_argument("--host-alloc", default=None)
    ap.add_argument("--label", default="new")
    ap.add_argument("--micro", action="store_true")
    ap.add_argument("--thread", action="store_true", help="each edit in a new thread (as the tab's jobs)")
    ap.add_argument("--idle", type=float, default=0.0, help="seconds idle before each edit (the tab: the debounce)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--n", type=int, default=128, help="volume size (a CPU smoke test: 24)")
    args = ap.parse_args()
    if args.micro:
        micro()
    else:
        compute(args.root, args.host_alloc, args.label, args.device, args.n, args.thread, args.idle)


if __name__ == "__main__":
    main()
