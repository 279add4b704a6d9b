"""All-pairs shortest paths (APSP) on sparse, non-negatively weighted graphs.

Four methods that agree to float32 rounding:

``cpu``
    Repeated Dijkstra on one thread (``scipy.sparse.csgraph.dijkstra``), the sources in
    chunks so that progress and cancellation work.
``cpu-mt``
    The same with the sources split across worker *processes*: SciPy's Dijkstra holds
    the GIL, so threads do not scale. The workers write their rows straight into a
    shared memory-mapped result. They start without re-running the caller's main script;
    called from inside a worker process (a benchmark's or batch's pool) it runs on one
    thread instead of nesting pools. ``auto`` picks it where it is faster on this machine
    (:func:`auto_cpu_method`).
``gpu``
    Tiled Floyd-Warshall for directed graphs (Katz & Kider 2008), ``cuda/fw_dense.cu``:
    per diagonal tile three stages, dependency tiles in shared memory, register-blocked
    min-plus tile products, the matrix padded to a multiple of the tile size with +inf.
``gpu-sym``
    Tiled Floyd-Warshall for undirected graphs (Marras et al.), ``cuda/fw_sym.cu``: only
    the tiles on or below the diagonal are stored, one after another in z-order; an
    above-diagonal dependency tile is read as the transpose of its mirror while shared
    memory is filled; stage 3 runs on a 1-D grid over the lower tiles. The working set is
    about N^2/2 values; ``out="dense"`` unpacks it into a dense symmetric matrix at the end.

Both GPU methods (``cuda/fw_common.cuh``): stages 2 and 3 are one register-blocked min-plus
product per tile (8 x 4 outputs per thread, k-chunks staged in swizzled shared memory,
software-pipelined); distances are int32 fixed point by default (DPX add-min on Hopper; the
scale comes from a bound on the diameter, float32 on request and for directed graphs);
stage 2 flags the dependency tiles that are still all +inf and stage 3 skips the products
with them (exact no-ops). ``gpu-sym`` also runs the FW in reverse Cuthill-McKee order, which
keeps more tiles all +inf for longer, and maps the result back. Measured numbers:
``benchmarks/RESULTS.md``.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.graph.apsp import all_pairs_shortest_paths
>>> d = all_pairs_shortest_paths(3, [0, 1], [1, 2], [1.0, 2.0], method="cpu")
>>> d.tolist()
[[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]]
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import mmap
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_kernels.backend import BackendError, get_backend, kernel, module, set_max_dynamic_smem
from gpu_kernels.errors import InputError
from gpu_kernels.graph.shm import SHM_PREFIX, _pid_alive, cleanup_stale_shared_memory
from gpu_kernels.jobs import LaunchTracker, as_progress

__all__ = [
    "APSPInputError",
    "METHODS",
    "DTYPES",
    "ApspMemoryError",
    "PackedDistances",
    "all_pairs_shortest_paths",
    "apsp_memory_bytes",
    "max_nodes_for_memory",
    "floyd_warshall_sym_packed",
    "floyd_warshall_dense",
    "kernel_config",
    "zorder_tiles",
    "default_workers",
]


class APSPInputError(InputError):
    """A bad graph or option for the APSP (one line; an :class:`~gpu_kernels.errors.InputError`,
    so the CLI and the window show it as the user's error, not a bug; still a ValueError)."""


METHODS = ("gpu-sym", "gpu", "cpu", "cpu-mt")
DTYPES = ("float32", "int32", "int32-nodpx")

#: GPU tile size; None: 64 below LARGE_TILE_FROM nodes, 128 from there on (half the diagonal
#: rounds, so half the passes over the matrix; 64 x 64 CUDA blocks either way). Measured on an
#: H200: 128 is 3-5% faster from N = 16384, 64 is up to 25% faster at N <= 8192.
DEFAULT_TILE: int | None = None
LARGE_TILE_FROM = 12288
#: Stage-2/3 kernel parameters per tile size: register block TM x TN per thread, k-chunk KC
#: staged in shared memory, software pipelining, BM x BN output sub-block of one CUDA block,
#: minimum blocks per SM. Chosen by ``benchmarks/mesh.py --tune`` on an H200 (see
#: benchmarks/RESULTS.md): every 64 x 64 / 8 x 4 variant lands at 2.1-2.2e13 N^3/s with
#: int32 at N = 16384, 8 x 8 and 128 x 64 blocks are slower.
_KERNEL_CONFIGS: dict[int, dict] = {
    32: {"tm": 4, "tn": 4, "kc": 32, "minb": 0, "pipe": 0},
    64: {"tm": 8, "tn": 4, "kc": 32, "minb": 0, "pipe": 1},
    128: {"tm": 8, "tn": 4, "kc": 32, "minb": 0, "pipe": 1, "bm": 64, "bn": 64},
}
#: distance type used by the GPU methods unless ``dtype`` is given. int32 fixed point (DPX
#: add-min on Hopper) measured 15-19% faster than float32 on an H200 at N = 16384, and the
#: segment_mesh labels of three PSB meshes were identical with either (benchmarks/RESULTS.md).
#: Integer min-plus is exact, so its result does not depend on the kernel configuration.
DEFAULT_DTYPE = "int32"

_INT_INF = 0x3FFFFFFF          # int32 "infinity": INF + INF still fits in int32
_INT_RANGE = float(1 << 27)    # largest finite fixed-point distance we aim for
_MEM_MARGIN = 64 << 20         # left free on the device for cuBLAS, kernels, the pool
_COMPACT_CHUNK = 16 << 20      # elements per chunk when compacting a padded dense result


class ApspMemoryError(MemoryError):
    """The N x N distance matrix does not fit the device (or host) memory.

    Attributes
    ----------
    needed : int
        Peak bytes the method needs.
    free : int
        Bytes free on the device (host for the CPU methods).
    max_n : int
        Largest node count that would fit with the same method.
    """

    def __init__(self, needed: int, free: int, max_n: int, method: str = "", where: str = "GPU"):
        self.needed = int(needed)
        self.free = int(free)
        self.max_n = int(max_n)
        self.method = method
        gib = 1024**3
        super().__init__(
            f"all-pairs shortest paths{f' ({method})' if method else ''} needs "
            f"{self.needed / gib:.2f} GiB but only {self.free / gib:.2f} GiB of {where} memory is free; "
            f"at most {self.max_n} nodes (faces) fit: simplify the mesh to that many faces or fewer"
        )


@dataclass
class PackedDistances:
    """Lower-triangle tiles of a symmetric distance matrix, in z-order (``gpu-sym`` output).

    ``data`` holds ``n_tiles * tile * tile`` values (float32, or int32 fixed point with
    ``scale``), tile ``z`` at ``data[z * tile**2:(z + 1) * tile**2]``, row-major.
    The rows and columns are in FW order: FW node ``i`` is the caller's node ``perm[i]``
    (``perm`` is the identity unless the graph was reordered).
    """

    data: Any               # cupy 1-D array
    n: int
    tile: int
    tile_index: np.ndarray  # (T, T) int32: z rank of lower tile (r, c), -1 above the diagonal
    tiles: np.ndarray       # (n_tiles, 2) int32: (r, c) of each rank
    scale: float | None = None  # fixed-point scale for int32 data (distance = value / scale)
    perm: np.ndarray | None = None  # (n,) caller's node id of each FW node
    _module: Any = None
    _zidx_dev: Any = None
    _tiles_dev: Any = None
    _inv_dev: Any = None     # (n,) FW node of each caller's node; None: identity

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def to_dense(self):
        """Dense symmetric (n, n) float32 matrix on the device (needs n^2 * 4 more bytes)."""
        cp = _cupy()
        out = cp.empty((self.n, self.n), dtype=cp.float32)
        if self.n:
            inv_scale = np.float32(1.0 / self.scale if self.scale else 1.0)
            if self._inv_dev is None:      # FW order is the caller's order: tile-wise copy
                self._module.get_function("fw_sym_unpack")(
                    (len(self.tiles),), (256,), (self.data, self._tiles_dev, out, np.int64(self.n), inv_scale))
            else:
                t = self.tile_index.shape[0]
                self._module.get_function("fw_sym_unpack_perm")(
                    (-(-self.n // 256), min(self.n, 8192)), (256,),
                    (self.data, self._zidx_dev, np.int32(t), self._inv_dev, out, np.int64(self.n), inv_scale))
        return out


# --------------------------------------------------------------------------- helpers
def _cupy():
    import cupy

    return cupy


def _padded(n: int, tile: int) -> int:
    return -(-max(n, 1) // tile) * tile


def _check_tile(tile, n: int = 0) -> int:
    if tile is None:
        tile = DEFAULT_TILE
    if tile is None:
        tile = 128 if n >= LARGE_TILE_FROM else 64
    tile = int(tile)
    if tile not in _KERNEL_CONFIGS:
        raise APSPInputError(f"tile must be one of {sorted(_KERNEL_CONFIGS)}, got {tile}")
    return tile


def _check_method(method: str) -> str:
    if method not in METHODS and method != "auto":
        raise APSPInputError(f"unknown APSP method {method!r}: use one of {', '.join(METHODS)} or auto")
    return method


def apsp_memory_bytes(n: int, method: str, tile: int | None = None, *, out: str = "dense") -> int:
    """Peak bytes (device memory for GPU methods, host memory for CPU ones), padding included.

    ``gpu``: the padded dense matrix, compacted in place to (n, n) at the end.
    ``gpu-sym``: the packed lower tiles (about n^2/2 floats) plus, for ``out="dense"``,
    the dense (n, n) result they are unpacked into.
    ``cpu``/``cpu-mt``: the (n, n) float32 result plus per-chunk float64 rows.
    """
    _check_method(method)
    n = int(n)
    if n < 0:
        raise APSPInputError("n must be >= 0")
    if method == "auto":
        method = "gpu-sym"
    if method in ("cpu", "cpu-mt"):
        chunk = _cpu_chunk(n, 1 if method == "cpu" else default_workers())
        workers = 1 if method == "cpu" else default_workers()
        return 4 * n * n + 8 * n * chunk * workers
    tile = _check_tile(tile, n)
    npad = _padded(n, tile)
    t = npad // tile
    if method == "gpu":
        # the compaction chunk is counted even when N needs no padding, which keeps the
        # estimate monotone in N (max_nodes_for_memory bisects it)
        return 4 * npad * npad + 4 * min(_COMPACT_CHUNK, n * n)
    n_lower = t * (t + 1) // 2
    packed = 4 * n_lower * tile * tile + 4 * (t * t + n_lower)
    if out == "packed":
        return packed
    return packed + 4 * n * n


def max_nodes_for_memory(free_bytes: int, method: str, tile: int | None = None, *, out: str = "dense") -> int:
    """Largest n whose :func:`apsp_memory_bytes` fits in ``free_bytes``."""
    free_bytes = int(free_bytes)
    lo, hi = 0, 1
    while apsp_memory_bytes(hi, method, tile, out=out) <= free_bytes:
        lo, hi = hi, hi * 2
        if hi > 1 << 24:
            return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if apsp_memory_bytes(mid, method, tile, out=out) <= free_bytes:
            lo = mid
        else:
            hi = mid
    return lo


@functools.lru_cache(maxsize=16)
def zorder_tiles(t: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower tiles (r >= c) of a t x t tile grid in z-order (Morton order of (r, c)).

    Returns ``(tile_index, tiles)``: ``tile_index[r, c]`` is the storage rank of tile
    (r, c) (-1 above the diagonal) and ``tiles[z] = (r, c)``.
    """
    r, c = np.tril_indices(t)
    code = np.zeros(r.shape, dtype=np.uint64)
    for b in range(16):
        code |= ((c.astype(np.uint64) >> np.uint64(b)) & np.uint64(1)) << np.uint64(2 * b)
        code |= ((r.astype(np.uint64) >> np.uint64(b)) & np.uint64(1)) << np.uint64(2 * b + 1)
    order = np.argsort(code, kind="stable")
    tiles = np.stack([r[order], c[order]], axis=1).astype(np.int32)
    index = np.full((t, t), -1, dtype=np.int32)
    index[tiles[:, 0], tiles[:, 1]] = np.arange(len(tiles), dtype=np.int32)
    index.flags.writeable = False      # cached: shared between calls
    tiles.flags.writeable = False
    return index, tiles


def _prepare_edges(n, src, dst, weight, directed: bool):
    """Validate and deduplicate edges. Returns int64 (s, d) and float64 w, self-loops dropped;
    undirected edges are normalised to s > d (one per pair, the minimum weight)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise APSPInputError(f"n must be an integer node count, got {n!r}")
    n = int(n)
    if n < 0:
        raise APSPInputError(f"n must be >= 0, got {n}")
    from gpu_kernels.backend import asnumpy

    s = np.asarray(asnumpy(src)).ravel()
    d = np.asarray(asnumpy(dst)).ravel()
    w = np.asarray(asnumpy(weight), dtype=np.float64).ravel()
    if not (len(s) == len(d) == len(w)):
        raise APSPInputError(f"src, dst and weight must have the same length, got {len(s)}, {len(d)}, {len(w)}")
    for name, a in (("src", s), ("dst", d)):
        if a.size and not np.issubdtype(a.dtype, np.integer):
            if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
                raise APSPInputError(f"{name} must hold integer node ids")
    s = s.astype(np.int64)
    d = d.astype(np.int64)
    if s.size:
        lo = min(s.min(), d.min())
        hi = max(s.max(), d.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise APSPInputError(f"node id {bad} is out of range for a graph of {n} nodes (ids are 0..{n - 1})")
    if np.isnan(w).any():
        raise APSPInputError(f"edge weights contain NaN ({int(np.isnan(w).sum())} of {w.size})")
    if (w < 0).any():
        raise APSPInputError(
            f"edge weights must be non-negative (found {w.min():g}); shortest paths with "
            "negative weights are not supported"
        )
    keep = (s != d) & np.isfinite(w)     # self-loops never shorten a path; +inf = no edge
    s, d, w = s[keep], d[keep], w[keep]
    if not directed:
        s, d = np.maximum(s, d), np.minimum(s, d)
    if s.size:
        key = s * n + d
        order = np.lexsort((w, key))
        key, w = key[order], w[order]
        first = np.ones(key.size, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        key, w = key[first], w[first]
        s, d = key // n, key % n
    return n, s, d, w


# --------------------------------------------------------------------------- CPU methods
def _csr(n, s, d, w, directed):
    import scipy.sparse as sp

    if not directed:
        s, d, w = np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([w, w])
    return sp.csr_matrix((w, (s, d)), shape=(n, n))


def _cpu_chunk(n: int, workers: int) -> int:
    # about 200 chunks overall: fine-grained progress, little per-call overhead
    # many small tasks per process keep cancellation prompt (a queued task cannot be
    # withdrawn once a worker has taken it): about 32 per process, each well under a second
    return max(1, min(1024, -(-n // (200 if workers <= 1 else 32 * workers))))


def _host_free() -> int:
    from gpu_kernels.backend import _host_mem_info

    free, _ = _host_mem_info()
    return free


def _check_host_memory(n, method, free_bytes):
    need = apsp_memory_bytes(n, method)
    free = _host_free() if free_bytes is None else int(free_bytes)
    if free and need > free:
        raise ApspMemoryError(need, free, max_nodes_for_memory(free, method), method, "host")


def _apsp_cpu(n, g, progress, rows=None):
    """Rows ``rows`` (default: all) of the distance matrix by single-threaded Dijkstra."""
    from scipy.sparse.csgraph import dijkstra

    rows = np.arange(n) if rows is None else np.asarray(rows)
    m = len(rows)
    out = np.empty((m, n), dtype=np.float32)
    chunk = _cpu_chunk(m, 1)
    for a in range(0, m, chunk):
        progress.update(a / max(m, 1), f"APSP: Dijkstra from {m:,} sources")
        b = min(m, a + chunk)
        out[a:b] = dijkstra(g, directed=True, indices=rows[a:b])
    progress.update(1.0, f"APSP: Dijkstra from {m:,} sources")
    return out


def _mt_layout(n, m, nnz):
    """Byte offsets in the shared file: result (m, n) float32, then the CSR graph and rows."""
    o_out = 0
    o_ptr = -(-4 * m * n // 8) * 8
    o_idx = o_ptr + 8 * (n + 1)
    o_dat = o_idx + 8 * nnz
    o_rows = o_dat + 8 * nnz
    return o_out, o_ptr, o_idx, o_dat, o_rows, o_rows + 8 * m


def _mt_task(path, n, m, nnz, a, b):
    """Worker: Dijkstra from rows[a:b] of the shared file's source list into its result.
    Maps the file per task and keeps nothing, so no worker pins a finished result."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    o_out, o_ptr, o_idx, o_dat, o_rows, size = _mt_layout(n, m, nnz)
    with open(path, "r+b") as f:
        mm = mmap.mmap(f.fileno(), size)
    try:
        g = sp.csr_matrix((np.frombuffer(mm, np.float64, nnz, o_dat).copy(),
                           np.frombuffer(mm, np.int64, nnz, o_idx).astype(np.int32),
                           np.frombuffer(mm, np.int64, n + 1, o_ptr).astype(np.int32)), shape=(n, n))
        rows = np.frombuffer(mm, np.int64, b - a, o_rows + 8 * a).copy()
        res = dijkstra(g, directed=True, indices=rows)
        out = np.frombuffer(mm, np.float32, (b - a) * n, o_out + 4 * a * n)
        out[:] = res.ravel()
        del out
    finally:
        mm.close()
    return b - a


_pool = None
_pool_workers = 0
_pool_lock = threading.Lock()

_PR_SET_PDEATHSIG = 1


def _watch_parent(pid: int) -> None:
    """Worker thread: exit this process as soon as process ``pid`` (the one that started the
    pool) is gone, even if it was killed with SIGKILL and could not shut the pool down."""
    fd = None
    if hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            os._exit(0)
        except OSError:
            fd = None
    if fd is not None:
        import select

        select.select([fd], [], [])
        os._exit(0)
    while _pid_alive(pid):
        time.sleep(0.5)
    os._exit(0)


def _worker_init(main_pid: int) -> None:
    """Pool worker start-up: die with the process that started the pool.

    Workers are children of multiprocessing's fork server, not of that process, and they hold
    the pipes of the pool's queue open, so nothing tells them when it is killed: without this
    they, the fork server and the resource tracker ran on for ever and kept the shared file.
    ``PR_SET_PDEATHSIG`` covers the fork server's death, a thread watching ``main_pid`` (a
    pidfd, else polling) the caller's."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() == 1:      # the parent died before prctl took effect
                os._exit(0)
        except (OSError, AttributeError):
            pass
    threading.Thread(target=_watch_parent, args=(main_pid,), name="gpulab-parent-watch", daemon=True).start()
    # a terminal's Ctrl+C reaches the whole process group: the caller cancels the run, and these
    # processes end with it; an interrupted worker broke the pool (and printed its traceback)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


#: a cancelled run waits this long at most for its running chunks
CANCEL_WAIT_S = 10.0


@contextlib.contextmanager
def _sigint_blocked():
    """SIGINT held back in this thread while the pool's processes start: the fork server and the
    workers inherit the mask, so a terminal's Ctrl+C does not interrupt their start-up (their
    imports); this thread takes it once they have started. Any thread: the window starts the
    pool from its job thread, and the processes inherit the mask of the thread that starts them
    (a Ctrl+C still reaches the main thread, which never blocks it here).

    In the main thread a Ctrl+C that came just before (Python runs its handler at its next check, which can be
    inside ``submit`` between a worker's start and the pool's record of it) is held back too: a recording handler
    stands in while the processes start, and the handler found is given the signal afterwards
    (``signal.raise_signal``). Before session 31 the KeyboardInterrupt could leave a started worker unknown to
    the pool, which then outlived the command and printed a FileNotFoundError's traceback after "cancelled"."""
    main = threading.current_thread() is threading.main_thread()
    came: list[int] = []
    previous = None
    if main:
        try:
            previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
        except (ValueError, TypeError, OSError):  # no handler can be set here (an embedded interpreter)
            main = False
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if hasattr(signal, "pthread_sigmask") else None
    try:
        yield
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a Ctrl+C that waited lands in the recorder
        if main:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if came:
        signal.raise_signal(signal.SIGINT)  # the handler found (the CLI's: "gpulab: cancelled") takes it now


def _get_pool(workers):
    """A process pool kept between calls (start-up costs about a second: imports). Its
    workers exit with this process, even when it is killed (:func:`_worker_init`)."""
    global _pool, _pool_workers
    with _pool_lock:
        if _pool is None or _pool_workers != workers:
            if _pool is not None:
                _pool.shutdown(wait=False, cancel_futures=True)
            cleanup_stale_shared_memory()
            _pool = ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context(),
                                        initializer=_worker_init, initargs=(os.getpid(),))
            _pool_workers = workers

        return _pool


def _reset_pool(wait: bool = False):
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.shutdown(wait=wait, cancel_futures=True)
        _pool = None


atexit.register(_reset_pool)


@contextlib.contextmanager
def _children_skip_main():
    """Start worker processes without re-running the caller's main script in them.

    A forkserver/spawn child normally imports ``__main__`` first; a script that calls the
    library at its top level (no ``if __name__ == "__main__":``) would then run again in
    every worker and fail. The workers only need this module, so ``__main__`` is hidden
    while they start.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {a: getattr(main, a) for a in ("__file__", "__spec__") if hasattr(main, a)}
    try:
        if "__file__" in saved:
            del main.__file__
        main.__spec__ = None
        yield
    finally:
        for a, v in saved.items():
            setattr(main, a, v)
        if "__spec__" not in saved and hasattr(main, "__spec__"):
            try:
                del main.__spec__
            except AttributeError:
                pass


def _mp_context():
    if sys.platform.startswith("linux"):
        return mp.get_context("forkserver")   # fork is unsafe in a threaded (Qt) process
    return mp.get_context("spawn")


#: single-thread Dijkstra APSP time per n^2 log2(n) on a dual graph (measured on a 2-core
#: x86-64 container: 1.1 s at n = 3000, 2.2 s at 4000, 3.6 s at 5000)
_DIJKSTRA_RATE = 1.1e-8
#: starting the worker pool (forkserver, each process imports SciPy): about half a second
_POOL_START = 0.6


def auto_cpu_method(n: int) -> str:
    """The faster CPU method for ``n`` nodes on this machine: ``cpu-mt`` when its share of the
    work on all cores, plus starting the worker pool if it is not running yet, beats one
    thread; else ``cpu``.

    On a 2-core machine that is ``cpu-mt`` from about 2,500 nodes with a cold pool (3,000
    nodes: 1.05 s against 1.14 s; 4,000: 1.25 s against 2.24 s) and from about 1,000 with
    the pool already running (the window keeps it between runs).
    """
    workers = default_workers()
    if workers < 2 or n < 1000 or mp.current_process().name != "MainProcess":
        # inside a worker process the cores are already shared out (batch, benchmarks):
        # no second level of processes
        return "cpu"
    t1 = _DIJKSTRA_RATE * float(n) ** 2 * np.log2(max(n, 2))
    start = 0.0 if (_pool is not None and _pool_workers == workers) else _POOL_START
    return "cpu-mt" if t1 / workers + start < t1 else "cpu"


def default_workers() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _reserve(fd: int, size: int, n: int, m: int) -> None:
    """Give the shared file its size with its blocks reserved: on a full /dev/shm (a small
    container default) writes into a sparse mapping would kill the process with SIGBUS; here
    it is one clear out-of-memory error instead of "[Errno 12]" or "[Errno 28]"."""
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, size)
        else:  # pragma: no cover - macOS
            os.ftruncate(fd, size)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.ENOMEM, errno.EFBIG, errno.EDQUOT):
            raise
        free = 0
        with contextlib.suppress(OSError):
            st = os.fstatvfs(fd)
            free = st.f_bavail * st.f_frsize
        raise ApspMemoryError(size, free, max_nodes_for_memory(free, "cpu-mt") if free else 0, "cpu-mt",
                              "shared (/dev/shm)") from None


def _apsp_cpu_mt(n, g, progress, workers, rows=None):
    """Rows ``rows`` (default: all) by Dijkstra in worker processes writing to shared memory."""
    workers = max(1, int(workers or default_workers()))
    rows = np.arange(n) if rows is None else np.asarray(rows)
    m = len(rows)
    if m == 0 or n == 0:
        return np.zeros((m, n), dtype=np.float32)
    if workers == 1 or m * n < (1 << 18):      # tiny: processes cost more than they save
        return _apsp_cpu(n, g, progress, rows)
    if mp.current_process().name != "MainProcess":
        # a worker process (batch, a benchmark's pool) gets no pool of its own: it runs no
        # atexit handlers, so its exit would wait forever for the idle pool processes
        return _apsp_cpu(n, g, progress, rows)
    nnz = int(g.nnz)
    o_out, o_ptr, o_idx, o_dat, o_rows, size = _mt_layout(n, m, nnz)
    shm_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
    if shm_dir:
        cleanup_stale_shared_memory(shm_dir)
    fd, path = tempfile.mkstemp(prefix=f"{SHM_PREFIX}{os.getpid()}-", dir=shm_dir)
    try:
        try:
            _reserve(fd, size, n, m)
        except ApspMemoryError:
            # /dev/shm is too small (64 MB in a default container): one process, plain memory
            # (which, if it is short too, raises a MemoryError the caller reports as such)
            return _apsp_cpu(n, g, progress, rows)
        mm = mmap.mmap(fd, size)
        np.frombuffer(mm, np.int64, n + 1, o_ptr)[:] = g.indptr
        np.frombuffer(mm, np.int64, nnz, o_idx)[:] = g.indices
        np.frombuffer(mm, np.float64, nnz, o_dat)[:] = g.data
        np.frombuffer(mm, np.int64, m, o_rows)[:] = rows
        # the result: a view that keeps the mapping alive after the file is unlinked
        out = np.frombuffer(mm, np.float32, m * n, o_out).reshape(m, n)
        chunk = _cpu_chunk(m, workers)
        jobs = [(a, min(m, a + chunk)) for a in range(0, m, chunk)]
        done_rows = 0
        label = f"APSP: Dijkstra on {workers} processes"
        progress.update(0.0, f"{label}, {m:,} sources")
        pool = _get_pool(workers)
        pending: set = set()
        try:
            # (inside the try: a Ctrl+C while the workers start is a cancel like any other)
            with _children_skip_main(), _sigint_blocked():  # workers start on the first submits
                try:
                    for a, b in jobs:
                        pending.add(pool.submit(_mt_task, path, n, m, nnz, a, b))
                except BrokenProcessPool:
                    _reset_pool()
                    pool = _get_pool(workers)
                    pending = {pool.submit(_mt_task, path, n, m, nnz, a, b) for a, b in jobs}
            while pending:
                finished, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for f in finished:
                    done_rows += f.result()
                progress.update(done_rows / m, f"{label}, {m:,} sources")
        except BaseException as exc:
            for f in pending:
                f.cancel()
            # the running chunks finish (they are short), then the file goes; a broken pool never
            # finishes them (Python 3.11's pool manager dies on a cancelled future: it hung here)
            _, still = wait(pending, timeout=CANCEL_WAIT_S)
            if isinstance(exc, KeyboardInterrupt):
                # a Ctrl+C: the process ends next. The pool goes now, and waits for its processes, also
                # those still starting (one that started once the exit had begun found its queue's
                # semaphore gone and printed a traceback after "cancelled") -- unless a chunk is still
                # running after CANCEL_WAIT_S: then the wait would be unbounded, and the exit goes on.
                # (Killing them instead breaks the pool, and Python 3.11's manager thread then dies on the
                # cancelled futures with a traceback: tried in session 31.) Every started process is the
                # pool's: _sigint_blocked holds a Ctrl+C back until the submits are done
                _reset_pool(wait=not still)
            if isinstance(exc, BrokenProcessPool):
                _reset_pool()
                # a worker that dies without a Python error was killed: by the kernel's
                # out-of-memory killer, almost always (a MemoryError the caller reports as such)
                raise MemoryError(
                    f"a worker process of the shortest-path computation was killed (most likely the "
                    f"system ran out of memory: the {m:,} x {n:,} distance matrix takes "
                    f"{4 * m * n / 2**30:.1f} GiB)") from None
            raise
        progress.update(1.0, f"{label}, {m:,} sources")
        return out
    finally:
        os.close(fd)
        os.unlink(path)


# --------------------------------------------------------------------------- GPU methods
def kernel_config(tile: int | None = None, dtype: str | None = None, **override) -> dict:
    """The compile-time parameters (``-D`` defines) of the FW kernels for a tile size/dtype."""
    tile = _check_tile(tile)
    dtype = dtype or DEFAULT_DTYPE
    if dtype not in DTYPES:
        raise APSPInputError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    cfg = dict(_KERNEL_CONFIGS[tile])
    cfg.update({k: v for k, v in override.items() if v is not None})
    return {
        "FW_B": tile, "FW_TM": cfg["tm"], "FW_TN": cfg["tn"], "FW_KC": cfg["kc"], "FW_MINB": cfg["minb"],
        "FW_PIPE": cfg["pipe"],
        "FW_BM": cfg.get("bm") or tile, "FW_BN": cfg.get("bn") or tile,
        "FW_SKIP": int(cfg.get("skip", 1)),
        "FW_INT": {"float32": 0, "int32": 1, "int32-nodpx": 2}[dtype],
    }


def _gpu_backend(device, method):
    be = get_backend(device)
    if not be.is_gpu:
        if device is None:
            be = get_backend("cuda")          # raises BackendError with the reason
        else:
            raise BackendError(f"APSP method {method!r} needs a CUDA device, but the device is {be.label}")
    return be


def _check_device_memory(be, n, method, tile, out, free_bytes):
    need = apsp_memory_bytes(n, method, tile, out=out)
    if free_bytes is None:
        free, _ = be.mem_info()
        free = max(0, free - _MEM_MARGIN)
    else:
        free = int(free_bytes)
    if need > free:
        raise ApspMemoryError(need, free, max_nodes_for_memory(free, method, tile, out=out), method, "GPU")


def _int_scale(n, s, d, w, directed) -> float:
    """Fixed-point scale such that every finite distance is at most about 2^27."""
    if w.size == 0 or w.max() == 0:
        return 1.0
    if directed:
        bound = min(float(w.sum()), float(w.max()) * max(n - 1, 1))
    else:
        # any path is at most twice the eccentricity of one node of its component
        import scipy.sparse as sp
        from scipy.sparse.csgraph import connected_components, dijkstra

        g = sp.csr_matrix((np.concatenate([w, w]), (np.concatenate([s, d]), np.concatenate([d, s]))),
                          shape=(n, n))
        ncomp, lab = connected_components(g, directed=False)
        _, first = np.unique(lab, return_index=True)
        dist = dijkstra(g, directed=True, indices=first, min_only=True)
        ecc = float(dist[np.isfinite(dist)].max(initial=0.0))
        bound = 2.0 * ecc + float(w.max())
    return _INT_RANGE / max(bound, 1e-300)


def _locality_order(n, s, d):
    """Reverse Cuthill-McKee order of the undirected graph: FW node i is node perm[i].

    Nearby ids then mean nearby nodes, so in early rounds most dependency tiles are still
    all +inf and stage 3 skips them (on mesh dual graphs about 2/3 of the stage-3 tiles).
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    if n == 0 or s.size == 0:
        return np.arange(n)
    g = sp.csr_matrix((np.ones(2 * s.size, dtype=np.int8), (np.r_[s, d], np.r_[d, s])), shape=(n, n))
    return np.asarray(reverse_cuthill_mckee(g, symmetric_mode=True), dtype=np.int64)


def _weights_dev(cp, w, scale):
    if scale is None:
        return cp.asarray(w.astype(np.float32))
    q = np.rint(w * scale)
    return cp.asarray(np.minimum(q, _INT_INF - 1).astype(np.int32))


def _smem_bytes(defs):
    return (2 if defs["FW_PIPE"] else 1) * defs["FW_KC"] * (defs["FW_BM"] + defs["FW_BN"]) * 4


def _threads_subs(defs):
    """(threads per block, CUDA blocks per tile) of the stage-2/3 kernels."""
    threads = (defs["FW_BM"] // defs["FW_TM"]) * (defs["FW_BN"] // defs["FW_TN"])
    subs = (defs["FW_B"] // defs["FW_BM"]) * (defs["FW_B"] // defs["FW_BN"])
    return threads, subs


def _stage_kernels(name, defs, tile, be):
    """Compile ``<name>.cu`` with ``defs`` and ready its three stage kernels.

    Returns ``(module, (stage1, stage2, stage3), smem, threads, subs, s1_threads)``:
    stages 2 and 3 get ``smem`` bytes of dynamic shared memory and ``threads`` threads
    per CUDA block, ``subs`` blocks per tile; stage 1 holds one whole tile in shared
    memory and runs on ``s1_threads`` threads.
    """
    mod = module(be, f"{name}.cu", defs)
    f1, f2, f3 = (kernel(be, f"{name}.cu", f"{name}_stage{i}", defs) for i in (1, 2, 3))
    smem = _smem_bytes(defs)
    set_max_dynamic_smem(f2, smem)
    set_max_dynamic_smem(f3, smem)
    set_max_dynamic_smem(f1, tile * tile * 4)
    threads, subs = _threads_subs(defs)
    return mod, (f1, f2, f3), smem, threads, subs, min(1024, tile * tile // 16)


def floyd_warshall_dense(n, s, d, w, *, directed=True, be, progress, tile=None, dtype=None,
                         free_bytes=None, config=None):
    """``gpu`` method on prepared edges: dense padded matrix, compacted to (n, n) in place."""
    cp = be.xp
    tile = _check_tile(tile, n)
    # directed graphs: no cheap bound on the longest finite distance (the undirected one
    # uses an eccentricity), so the fixed-point scale would be coarse; float32 by default
    dtype = dtype or ("float32" if directed else DEFAULT_DTYPE)
    defs = kernel_config(tile, dtype, **(config or {}))
    _check_device_memory(be, n, "gpu", tile, "dense", free_bytes)
    npad = _padded(n, tile)
    t = npad // tile
    is_int = dtype != "float32"
    scale = _int_scale(n, s, d, w, directed) if is_int else None
    with be.activate():
        mod, (f1, f2, f3), smem, threads, subs, s1_threads = _stage_kernels("fw_dense", defs, tile, be)
        if is_int:
            D = cp.full(npad * npad, _INT_INF, dtype=cp.int32)
        else:
            D = cp.full(npad * npad, np.inf, dtype=cp.float32)
        D[:: npad + 1] = 0
        if s.size:
            wd = _weights_dev(cp, w, scale)
            D[cp.asarray(s * npad + d)] = wd
            if not directed:
                D[cp.asarray(d * npad + s)] = wd
        ld = np.int64(npad)
        flags = cp.zeros(2 * t, dtype=cp.int32)   # round stamps of tiles with a finite value
        tt = np.int32(t)
        track = LaunchTracker(cp, progress, t, "APSP: tile round")
        for k in range(t):
            track.before(k)
            kk = np.int32(k)
            f1((1,), (s1_threads,), (D, ld, kk), shared_mem=tile * tile * 4)
            if t > 1:
                f2((t * subs, 2), (threads,), (D, ld, kk, flags, tt), shared_mem=smem)
                f3((t * subs, t), (threads,), (D, ld, kk, flags, tt), shared_mem=smem)
            track.after(k)
        progress.update(1.0 - 0.5 / (t + 1), f"APSP: tile round {t}/{t}")
        if is_int:
            mod.get_function("fw_int_to_float")((1024,), (256,), (D, np.int64(D.size), np.float32(1.0 / scale)))
            D = D.view(cp.float32)
        if npad != n:   # compact rows in place: row i moves from i*npad to i*n (increasing offsets)
            rows = max(1, _COMPACT_CHUNK // max(n, 1))
            for a in range(0, n, rows):
                b = min(n, a + rows)
                tmp = D[a * npad: b * npad].reshape(b - a, npad)[:, :n].copy()
                D[a * n: b * n] = tmp.ravel()
                del tmp
        out = D[: n * n].reshape(n, n)
        cp.cuda.get_current_stream().synchronize()
    progress.update(1.0, f"APSP: tile round {t}/{t}")
    return out


def floyd_warshall_sym_packed(n, src=None, dst=None, weight=None, *, device=None, progress=None, tile=None,
                              dtype=None, free_bytes=None, config=None, reorder=True, _prepared=None,
                              _out="packed"):
    """``gpu-sym`` on an undirected graph, returning :class:`PackedDistances` (lower tiles
    in z-order, about n^2/2 values). Arguments as :func:`all_pairs_shortest_paths`;
    ``reorder`` runs the FW in reverse Cuthill-McKee order (``PackedDistances.perm``)."""
    progress = as_progress(progress)
    if _prepared is None:
        n, s, d, w = _prepare_edges(n, src, dst, weight, directed=False)
    else:
        n, s, d, w = _prepared
    be = _gpu_backend(device, "gpu-sym")
    cp = be.xp
    tile = _check_tile(tile, n)
    dtype = dtype or DEFAULT_DTYPE
    defs = kernel_config(tile, dtype, **(config or {}))
    _check_device_memory(be, n, "gpu-sym", tile, _out, free_bytes)
    npad = _padded(n, tile)
    t = npad // tile
    if t > 0xFFFF:
        raise APSPInputError(f"{n} nodes is too many for tile size {tile}")
    is_int = dtype != "float32"
    scale = _int_scale(n, s, d, w, False) if is_int else None
    perm = _locality_order(n, s, d) if reorder else np.arange(n)
    if reorder and s.size:
        inv = np.empty(n, dtype=np.int64)
        inv[perm] = np.arange(n)
        s, d = np.maximum(inv[s], inv[d]), np.minimum(inv[s], inv[d])
    zidx, tiles = zorder_tiles(t)
    bb = tile * tile
    with be.activate():
        mod, (f1, f2, f3), smem, threads, subs, s1_threads = _stage_kernels("fw_sym", defs, tile, be)
        n_lower = len(tiles)
        P = cp.full(n_lower * bb, _INT_INF if is_int else np.inf, dtype=cp.int32 if is_int else cp.float32)
        # diagonal = 0 (padding included)
        i = np.arange(npad, dtype=np.int64)
        diag = zidx[i // tile, i // tile].astype(np.int64) * bb + (i % tile) * (tile + 1)
        P[cp.asarray(diag)] = 0
        if s.size:   # s > d: element (s, d) of lower tile (s//B, d//B); diagonal tiles get both
            rt, ct = s // tile, d // tile
            base = zidx[rt, ct].astype(np.int64) * bb
            offs = base + (s % tile) * tile + d % tile
            same = rt == ct
            offs = np.concatenate([offs, base[same] + (d[same] % tile) * tile + s[same] % tile])
            wv = np.concatenate([w, w[same]])
            P[cp.asarray(offs)] = _weights_dev(cp, wv, scale)
        zidx_dev = cp.asarray(zidx.ravel())
        tiles_dev = cp.asarray((tiles[:, 0].astype(np.int32) << 16) | tiles[:, 1])
        inv_dev = None
        if reorder:
            inv_h = np.empty(n, dtype=np.int32)
            inv_h[perm] = np.arange(n, dtype=np.int32)
            inv_dev = cp.asarray(inv_h)
        tt = np.int32(t)
        flags = cp.zeros(t, dtype=cp.int32)   # round stamps of column tiles with a finite value
        track = LaunchTracker(cp, progress, t, "APSP: tile round")
        for k in range(t):
            track.before(k)
            kk = np.int32(k)
            f1((1,), (s1_threads,), (P, zidx_dev, tt, kk), shared_mem=bb * 4)
            if t > 1:
                f2((t * subs,), (threads,), (P, zidx_dev, tt, kk, flags), shared_mem=smem)
                f3((n_lower * subs,), (threads,), (P, zidx_dev, tiles_dev, tt, kk, flags), shared_mem=smem)
            track.after(k)
        cp.cuda.get_current_stream().synchronize()
    progress.update(1.0, f"APSP: tile round {t}/{t}")
    return PackedDistances(P, n, tile, zidx, tiles, scale, perm, mod, zidx_dev, tiles_dev, inv_dev)


# --------------------------------------------------------------------------- entry point
def all_pairs_shortest_paths(n, src, dst, weight, *, directed=False, method="auto", device=None,
                             progress=None, tile=None, workers=None, out="dense", dtype=None,
                             free_bytes=None, reorder=True):
    """All-pairs shortest path distances of a sparse graph with non-negative weights.

    Parameters
    ----------
    n : int
        Number of nodes (ids 0..n-1).
    src, dst, weight : array-like
        One entry per edge. Undirected graphs may list an edge once or both ways;
        duplicate edges keep the smallest weight; self-loops are ignored; an edge of
        weight +inf is no edge.
    directed : bool
        Treat (src, dst) as one-way edges. ``gpu-sym`` needs ``directed=False``.
    method : {"auto", "gpu-sym", "gpu", "cpu", "cpu-mt"}
        ``auto``: ``gpu-sym`` (``gpu`` if directed) on a CUDA backend when it fits in
        free device memory, otherwise the faster CPU method on this machine
        (:func:`auto_cpu_method`: ``cpu-mt`` once the work outweighs starting the worker
        processes, ``cpu`` for small graphs or a single core).
    device : str or Backend, optional
        As :func:`gpu_kernels.backend.get_backend`.
    progress : Progress or callable, optional
        Receives "APSP: tile round r/R" (GPU) or "APSP: Dijkstra sources ..." (CPU);
        cancellation is checked between rounds / chunks and raises ``Cancelled``.
    tile : int, optional
        GPU tile size (32, 64 or 128; default: 64 below 12288 nodes, else 128).
    workers : int, optional
        Processes for ``cpu-mt`` (default: all cores).
    out : {"dense", "packed"}
        ``packed`` (``gpu-sym`` only) returns :class:`PackedDistances` instead of a matrix.
    dtype : {"float32", "int32", "int32-nodpx"}, optional
        Distance type inside the GPU kernels; default ``DEFAULT_DTYPE`` (int32) for
        undirected graphs, float32 for directed ones. ``int32`` is fixed point with the DPX
        add-min instruction, the scale chosen so that twice the largest eccentricity of a
        component maps to 2^27 (finer than float32 for distances near the diameter); the
        result is float32 either way.
    free_bytes : int, optional
        Pretend this many bytes are free (tests, or to leave room for later stages).
    reorder : bool
        ``gpu-sym`` only: run the FW on the graph in reverse Cuthill-McKee order, which lets
        stage 3 skip far more all-+inf tiles; the result is returned in the caller's order.

    Returns
    -------
    (n, n) float32 array: ``cupy`` for GPU methods, ``numpy`` for CPU ones. +inf where
    no path exists.

    Raises
    ------
    APSPInputError
        Bad input: negative or NaN weights, ids out of range, unknown method, ``gpu-sym``
        on a directed graph.
    BackendError
        A GPU method without a usable CUDA device.
    ApspMemoryError
        The result does not fit (``needed``, ``free``, ``max_n`` say by how much).
    """
    _check_method(method)
    if out not in ("dense", "packed"):
        raise APSPInputError(f"out must be 'dense' or 'packed', got {out!r}")
    if method == "gpu-sym" and directed:
        raise APSPInputError("method 'gpu-sym' is for undirected graphs; use method='gpu' for a directed graph")
    if out == "packed" and method not in ("gpu-sym", "auto"):
        raise APSPInputError("out='packed' is only available with method='gpu-sym'")
    progress = as_progress(progress)
    n, s, d, w = _prepare_edges(n, src, dst, weight, directed)

    auto_fallback = False
    if method == "auto":
        be = get_backend(device)
        method = auto_cpu_method(n)
        auto_fallback = be.is_gpu
        if be.is_gpu:
            cand = "gpu" if directed else "gpu-sym"
            if free_bytes is None:
                free = max(0, be.mem_info()[0] - _MEM_MARGIN)
            else:
                free = int(free_bytes)
            if apsp_memory_bytes(n, cand, tile, out=out) <= free:
                method = cand
            elif not directed and out == "dense" and apsp_memory_bytes(n, "gpu", tile) <= free:
                method = "gpu"   # dense output fits, the packed + dense peak does not
        if out == "packed" and method != "gpu-sym":
            raise APSPInputError("out='packed' needs the gpu-sym method, which is not available here")

    if method in ("cpu", "cpu-mt"):
        # free_bytes describes the device when auto fell back from it
        _check_host_memory(n, method, None if auto_fallback else free_bytes)
        g = _csr(n, s, d, w, directed)
        if method == "cpu":
            return _apsp_cpu(n, g, progress)
        return _apsp_cpu_mt(n, g, progress, workers)

    be = _gpu_backend(device, method)
    if method == "gpu":
        return floyd_warshall_dense(n, s, d, w, directed=directed, be=be, progress=progress, tile=tile,
                                    dtype=dtype, free_bytes=free_bytes)
    packed = floyd_warshall_sym_packed(n, device=be, progress=progress, tile=tile, dtype=dtype,
                                       free_bytes=free_bytes, reorder=reorder, _prepared=(n, s, d, w), _out=out)
    if out == "packed":
        return packed
    with be.activate():
        dense = packed.to_dense()
        packed.data = None
        del packed
        be.xp.cuda.get_current_stream().synchronize()
    return dense


def _reference_fw(n, src, dst, weight, directed=False):
    """Plain O(n^3) NumPy Floyd-Warshall for tests (small n only)."""
    n, s, d, w = _prepare_edges(n, src, dst, weight, directed)
    D = np.full((n, n), np.inf)
    np.fill_diagonal(D, 0.0)
    D[s, d] = np.minimum(D[s, d], w)
    if not directed:
        D[d, s] = np.minimum(D[d, s], w)
    for k in range(n):
        D = np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :])
    return D

