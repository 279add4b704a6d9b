"""CUDA-graph plans: a flow pipeline captured once per (method, parameters, input shape) and
replayed, so a call costs the kernels' time instead of hundreds of Python kernel launches.

A plan owns static input buffers, a private CuPy memory pool (so no block the graph uses is
ever handed to other code), a stream and the captured graph. A call copies the inputs into the
static buffers, replays the graph, and returns copies of the outputs, all stream-ordered after
the caller's current stream. The first call for a key runs the pipeline once on the plan's
stream (compiling kernels, filling the pool), then captures it. If anything about capturing
fails the key falls back to plain launches (same kernels, same result) and the reason is kept
in :data:`LAST_FALLBACK`.

Plans are used on CUDA backends only, without a mask, and when ``progress`` is not a
cancellable GUI job (a replay cannot stop half-way; it takes milliseconds).
"""

from __future__ import annotations

import collections
import threading

from gpu_kernels.backend import cache_key

__all__ = ["run", "clear", "ENABLED", "MAX_PLANS", "LAST_FALLBACK"]

#: use CUDA-graph plans where possible (a pipeline that cannot be captured falls back to plain
#: launches; tests/flow/test_flow_gpu.py::test_graph_plans_match_plain_launches checks that both
#: give the same bits, verified on an H200 on 2026-11-23).
ENABLED = True
#: plans kept (least recently used dropped first); each holds its pipeline's device memory
MAX_PLANS = 6
#: why the last key could not be captured (None when all went well)
LAST_FALLBACK: str | None = None

_plans: collections.OrderedDict = collections.OrderedDict()
_failed: set = set()
_lock = threading.Lock()


class _Plan:
    def __init__(self, be, inputs, build):
        cp = be.xp
        self.cp = cp
        self.pool = cp.cuda.MemoryPool()
        self.stream = cp.cuda.Stream(non_blocking=True)
        cur = cp.cuda.get_current_stream()
        self.stream.wait_event(cur.record())
        with cp.cuda.using_allocator(self.pool.malloc), self.stream:
            self.ins = [cp.empty(x.shape, x.dtype) for x in inputs]
            for s, x in zip(self.ins, inputs, strict=True):
                s[...] = x
            build(*self.ins)                      # warm-up: kernels compiled, pool filled
            self.stream.synchronize()
            self.stream.begin_capture()
            try:
                outs = build(*self.ins)
            finally:
                graph = self.stream.end_capture()
            self.graph = graph
            self.outs = outs
            self.graph.launch(stream=self.stream)  # check that it replays
            self.stream.synchronize()

    def __call__(self, inputs):
        cp = self.cp
        cur = cp.cuda.get_current_stream()
        for s, x in zip(self.ins, inputs, strict=True):
            s[...] = x
        self.stream.wait_event(cur.record())
        self.graph.launch(stream=self.stream)
        cur.wait_event(self.stream.record())
        return tuple(_copy(o) for o in self.outs)

    def release(self):
        self.graph = None
        self.outs = None
        self.ins = None
        self.pool.free_all_blocks()


def _copy(o):
    if isinstance(o, tuple):
        return tuple(_copy(x) for x in o)
    if hasattr(o, "copy") and hasattr(o, "__cuda_array_interface__"):
        return o.copy()
    return o


def _capturable(be) -> bool:
    xp = getattr(be, "xp", None)
    return bool(ENABLED and be.is_gpu and xp is not None and hasattr(xp, "cuda")
                and hasattr(xp.cuda, "using_allocator"))


def run(be, key, inputs, build):
    """``build(*inputs)`` through a cached CUDA-graph plan where possible, else directly.

    ``key`` must fix everything ``build`` depends on besides the inputs' values (method,
    parameters, the inputs' shapes and dtypes, the device); ``build`` must not synchronise or
    branch on data.
    """
    global LAST_FALLBACK
    if not _capturable(be):
        return build(*inputs)
    key = cache_key(be) + tuple(key) + tuple((tuple(x.shape), str(x.dtype)) for x in inputs)
    if key in _failed:
        return build(*inputs)
    cp = be.xp
    if cp.cuda.get_current_stream().is_capturing():
        return build(*inputs)
    with _lock:
        plan = _plans.get(key)
        if plan is not None:
            _plans.move_to_end(key)
        else:
            try:
                plan = _Plan(be, inputs, build)
            except Exception as exc:  # noqa: BLE001 - any capture problem: plain launches
                LAST_FALLBACK = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                _failed.add(key)
                return build(*inputs)
            _plans[key] = plan
            while len(_plans) > MAX_PLANS:
                _plans.popitem(last=False)[1].release()
    return plan(inputs)


def clear() -> None:
    """Drop every plan (and its device memory)."""
    with _lock:
        while _plans:
            _plans.popitem()[1].release()
        _failed.clear()
