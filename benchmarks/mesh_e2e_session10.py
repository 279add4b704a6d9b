"""Issue 22 (session 10): mesh segmentation end to end from the file, with the defaults, where the
time goes and what a change gains, in one process.

- ``--profile N``: N traced runs per mesh after the plain ones. Every plain Python function of the
  mesh pipeline's modules (``gpu_kernels.mesh.*``, the mesh readers) is wrapped where it is looked up
  (its own module and every module that imported it by name); each run records per function its
  calls, inclusive and self time (self: minus the wrapped callees', per thread), summed over the
  threads, and the thread it ran on. NumPy/CuPy/SciPy/numba time counts as its caller's self time,
  so a device synchronisation (a ``.get()``, ``int()`` of a device scalar) shows there.
  The medians over the N runs are printed, largest self time first, and written to ``--json``.
- ``--cprofile``: one more run under cProfile (the top of its tottime table).
- ``--configs``: configurations (switches of the library) timed in one process, interleaved and
  reversed every other round after one warm-up each; the labels' and colours' SHA-1 per
  configuration must be the same.

Example (device call of session 10)::

    python benchmarks/mesh_e2e_session10.py 101.off 281.off --rounds 7 --profile 3 --json out.json
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import hashlib
import importlib
import io
import json
import pstats
import statistics
import sys
import threading
import time
import types
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import segment  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402

MODULES = ["gpu_kernels.mesh.segment", "gpu_kernels.mesh.dualgraph", "gpu_kernels.mesh.boundary",
           "gpu_kernels.mesh.cluster", "gpu_kernels.mesh.simplify", "gpu_kernels.mesh.thickness",
           "gpu_kernels.mesh.colors", "gpu_kernels.mesh.nearest", "gpu_kernels.mesh.autok",
           "gpu_kernels.mesh._numba_cut", "gpu_kernels.mesh.metrics", "gpu_kernels.mesh.coarsen", "gpu_kernels.graph.apsp",
           "app.io.mesh_io", "app.io.mesh_formats",
           # session 27: the learned merges (every default run since session 11) and the warm-up
           "gpu_kernels.mesh.learned", "gpu_kernels.mesh.warm"]

def _inline_simplify(vertices, faces, target_faces, method=None, *, fn=None):
    """``simplify_in_background`` that runs the simplification at once on the calling thread."""
    return simp._Done(simp.simplify_mesh if fn is None else fn, (vertices, faces, target_faces),
                      {} if method is None else {"method": method})


def _certainty_s9(P):
    """``colors.certainty`` as it was at the session's start (np.partition on a float64 copy)."""
    import numpy as np

    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] <= 1:
        return np.ones(P.shape[0])
    top2 = -np.partition(-P, 1, axis=1)[:, :2]
    s = top2[:, 0] + top2[:, 1]
    return np.clip((top2[:, 0] - top2[:, 1]) / np.where(s > 0, s, 1.0), 0.0, 1.0)


#: configuration name -> {"module.attr": value} ("switchinterval": sys.setswitchinterval for the run)
CONFIGS: dict[str, dict] = {
    "base": {},
    # the session's start: NumPy's text passes, the certainty by np.partition
    "s9": {"app.io.mesh_formats.COMPILED_TEXT": False, "gpu_kernels.mesh.colors.certainty": _certainty_s9},
    "s9read": {"app.io.mesh_formats.COMPILED_TEXT": False},
    # the simplification (fast + pymeshlab) on the calling thread before the full dual graph
    "inline": {"gpu_kernels.mesh.segment.simplify_in_background": _inline_simplify},
    "sw0.1ms": {"switchinterval": 1e-4},
    "sw1ms": {"switchinterval": 1e-3},
    # session 32: fast-simplification to PRE_FACTOR x the working faces before pymeshlab's step (3: sessions 7-31)
    "pf3": {"gpu_kernels.mesh.simplify.PRE_FACTOR": 3.0},
    "pf2": {"gpu_kernels.mesh.simplify.PRE_FACTOR": 2.0},
}
#: per configuration: pymeshlab's step's times inside the runs (ms)
PML: dict = defaultdict(list)
_real_pml = simp._simplify_pymeshlab


def _timed_pml(*a, **kw):
    t = time.perf_counter()
    try:
        return _real_pml(*a, **kw)
    finally:
        PML[_CURRENT[0]].append(1e3 * (time.perf_counter() - t))


_CURRENT = ["base"]
simp._simplify_pymeshlab = _timed_pml


def _modules():
    out = []
    for name in MODULES:
        try:
            out.append(importlib.import_module(name))
        except ImportError:
            pass
    for name in list(sys.modules):   # any other module of the graph (APSP) package
        if name.startswith("gpu_kernels.graph") and sys.modules[name] not in out and sys.modules[name] is not None:
            out.append(sys.modules[name])
    return out


class Tracer:
    """Wraps the pipeline's Python functions; ``stats`` after a run: name -> [calls, incl, self]."""

    def __init__(self):
        self.stats: dict = defaultdict(lambda: [0, 0.0, 0.0, set()])
        self._local = threading.local()
        self._saved: list = []

    def _wrap(self, fn, name):
        tr = self

        def wrapped(*a, **kw):
            st = getattr(tr._local, "stack", None)
            if st is None:
                st = tr._local.stack = []
            st.append(0.0)
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                dt = time.perf_counter() - t
                child = st.pop()
                if st:
                    st[-1] += dt
                s = tr.stats[name]
                s[0] += 1
                s[1] += dt
                s[2] += dt - child
                s[3].add(threading.current_thread().name)
        # the function's own module and qualified name too (session 27): a wrapped function handed to a process pool
        # (the CPU APSP's workers) pickles by reference, and its module attribute is this wrapper
        return functools.update_wrapper(wrapped, fn)

    def install(self):
        mods = _modules()
        wrappers: dict = {}
        for mod in mods:
            for attr, val in list(vars(mod).items()):
                if not isinstance(val, types.FunctionType):
                    continue
                owner = getattr(val, "__module__", "") or ""
                if not (owner.startswith("gpu_kernels") or owner.startswith("app.io")):
                    continue
                key = id(val)
                if key not in wrappers:
                    short = owner.replace("gpu_kernels.", "").replace("app.io.", "io.")
                    wrappers[key] = self._wrap(val, f"{short}.{val.__name__}")
                self._saved.append((mod, attr, val))
                setattr(mod, attr, wrappers[key])

    def remove(self):
        for mod, attr, val in reversed(self._saved):
            setattr(mod, attr, val)
        self._saved.clear()

    def reset(self):
        self.stats = defaultdict(lambda: [0, 0.0, 0.0, set()])


def _set(cfg: dict) -> dict:
    old = {}
    for key, val in cfg.items():
        if key == "switchinterval":
            old[key] = sys.getswitchinterval()
            sys.setswitchinterval(val)
            continue
        modname, attr = key.rsplit(".", 1)
        mod = importlib.import_module(modname)
        old[key] = getattr(mod, attr)
        setattr(mod, attr, val)
    return old


def once(path: str, dev: str, shas: dict | None = None, cfg: str = "base", **kw) -> float:
    old = _set(CONFIGS[cfg])
    _CURRENT[0] = cfg
    try:
        t0 = time.perf_counter()
        v, f = read_mesh(path)
        seg = segment.segment_mesh(v, f, device=dev, **kw)
        dt = time.perf_counter() - t0
    finally:
        _set(old)
    if shas is not None:
        shas[cfg] = hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes()).hexdigest()[:12]
    return dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cold", type=int, default=2,
                    help="rounds left out of the warm median (session 32: on a fresh machine, the first rounds after "
                         "the warm-up run still pay for the compile caches; a median of 7 that holds two of them is "
                         "the fourth-fastest warm round)")
    ap.add_argument("--simplifier", default="auto")
    ap.add_argument("--configs", default="base")
    ap.add_argument("--profile", type=int, default=0, help="traced runs per mesh (0: none)")
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--top", type=int, default=45)
    ap.add_argument("--json", default="")
    ap.add_argument("--auto-layout", default="", help="passed to segment_mesh (default: the library's default)")
    args = ap.parse_args(argv)
    kw = {"auto_layout": args.auto_layout} if args.auto_layout else {}
    simp.SIMPLIFIER = args.simplifier
    cfgs = args.configs.split(",")
    print(f"e2e10 simplifiers {simp.available_simplifiers()} used {args.simplifier} configs {cfgs} "
          f"auto_layout {args.auto_layout or 'default'}", flush=True)
    report: dict = {}
    for path in args.meshes:
        name = Path(path).name
        rep = report[name] = {}
        times: dict = {c: [] for c in cfgs}
        shas: dict = {}
        for c in cfgs:
            once(path, args.device, shas, c, **kw)
        for r in range(args.rounds):
            for c in (cfgs if r % 2 == 0 else cfgs[::-1]):
                times[c].append(once(path, args.device, shas, c, **kw))
        for c in cfgs:
            t = times[c]
            pml = PML.pop(c, [])[1:]   # (not the warm-up's)
            warm = t[args.cold:] if len(t) > args.cold else t
            print(f"e2e10 {args.device} {name} {c:14s} min {1e3 * min(t):6.1f}  median {1e3 * statistics.median(t):6.1f}"
                  f"  max {1e3 * max(t):6.1f} ms  warm median {1e3 * statistics.median(warm):6.1f} (rounds "
                  f"{len(t) - len(warm) + 1}-{len(t)})  sha {shas[c]}  runs {' '.join(f'{1e3 * x:.1f}' for x in t)}"
                  + (f"  pymeshlab min {min(pml):.1f} median {statistics.median(pml):.1f}" if pml else ""),
                  flush=True)
        print(f"e2e10 {name} same labels and colours in every configuration: {len(set(shas.values())) == 1}",
              flush=True)
        rep["times"] = times
        rep["cold_rounds"] = args.cold
        rep["shas"] = shas
        if args.profile:
            tr = Tracer()
            tr.install()
            runs, totals = [], []
            try:
                for _ in range(args.profile):
                    tr.reset()
                    totals.append(once(path, args.device, None, cfgs[0], **kw))
                    runs.append({k: (v[0], v[1], v[2], sorted(v[3])) for k, v in tr.stats.items()})
            finally:
                tr.remove()
            names = set().union(*runs)
            med = {}
            for k in names:
                rows = [r.get(k, (0, 0.0, 0.0, [])) for r in runs]
                med[k] = (rows[0][0], statistics.median(x[1] for x in rows), statistics.median(x[2] for x in rows),
                          sorted(set().union(*[set(x[3]) for x in rows])))
            print(f"prof10 {name} traced totals {' '.join(f'{1e3 * x:.1f}' for x in totals)} ms "
                  f"(plain median {1e3 * statistics.median(times[cfgs[0]]):.1f})")
            for k, (n, inc, slf, th) in sorted(med.items(), key=lambda kv: -kv[1][2])[:args.top]:
                thr = ",".join(x.replace("gpulab-", "") for x in th)
                print(f"prof10 {name} self {1e3 * slf:7.2f}  incl {1e3 * inc:7.2f}  calls {n:5d}  {k}  [{thr}]")
            rep["profile"] = {"totals": totals, "median": {k: list(v) for k, v in med.items()}}
        if args.cprofile:
            pr = cProfile.Profile()
            pr.enable()
            once(path, args.device, None, cfgs[0], **kw)
            pr.disable()
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(args.top)
            print("\n".join(f"cprof10 {name} {ln}" for ln in s.getvalue().splitlines() if ln.strip()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
