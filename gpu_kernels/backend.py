"""Compute backend selection: CuPy on a CUDA device, or NumPy/SciPy on the CPU.

The choice, in order of precedence:

1. an explicit ``device`` argument (``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``),
   as passed by ``--device`` on every ``gpulab`` command;
2. the ``GPULAB_DEVICE`` environment variable, with the same values;
3. ``auto``: CuPy when it imports and a CUDA device answers, otherwise NumPy.

Asking for ``cuda`` where there is none raises :class:`BackendError` with a one-line
message (the CLI prints it without a traceback).

CUDA sources live in ``gpu_kernels/cuda/*.cu``. :func:`load_module` compiles one
into a ``cupy.RawModule`` once per (device, source, options) and caches it, the way
``cupyx.scipy.ndimage`` caches its kernels.

Example
-------
>>> from gpu_kernels.backend import get_backend
>>> be = get_backend("cpu")
>>> be.name, be.xp.__name__
('cpu', 'numpy')
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

__all__ = [
    "BackendError",
    "Backend",
    "get_backend",
    "current_device",
    "device_of",
    "parse_device",
    "cupy_available",
    "cuda_device_count",
    "asnumpy",
    "device_info",
    "device_report",
    "load_module",
    "cache_key",
    "cuda_source",
    "cuda_source_names",
    "cuda_include_dir",
    "set_max_dynamic_smem",
]

from gpu_kernels.env import ENV_VAR  # noqa: E402 - light, for the CLI's help
from gpu_kernels.errors import BackendError  # noqa: E402 - defined there, so that classifying errors needs no NumPy


# --------------------------------------------------------------------------- cupy probe
@functools.cache
def _import_cupy():
    """Return the cupy module, or the reason it cannot be used (a string)."""
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or a broken CUDA install
        # CuPy wraps a failed import in a banner that starts with a blank line; the cause is the
        # line after "Original error:" (a frozen bundle missing a module showed only "ImportError: ")
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        cause = next((lines[i + 1] for i, ln in enumerate(lines[:-1]) if ln == "Original error:"), None)
        detail = cause or f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
        missing = isinstance(exc, ModuleNotFoundError) and exc.name == "cupy"
        return f"CuPy is {'not installed' if missing else 'installed but cannot be imported'} ({detail})"
    return cupy


def cupy_available() -> bool:
    """True when CuPy imports and at least one CUDA device answers."""
    return cuda_device_count() > 0


@functools.cache
def cuda_device_count() -> int:
    cp = _import_cupy()
    if isinstance(cp, str):
        return 0
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def _no_cuda_reason() -> str:
    cp = _import_cupy()
    if isinstance(cp, str):
        return cp
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"no CUDA device answers ({type(exc).__name__}: {str(exc).splitlines()[0]})"
    if n == 0:
        return "no CUDA device was found"
    return ""


# --------------------------------------------------------------------------- parsing
def parse_device(spec: str | None) -> tuple[str, int]:
    """Parse ``cpu``, ``cuda``, ``cuda:N``, ``gpu`` or ``auto`` into ``(kind, index)``.

    ``kind`` is ``"cpu"``, ``"cuda"`` or ``"auto"``; index is 0 unless given.
    """
    if spec is None:
        return "auto", 0
    s = str(spec).strip().lower()
    if s in ("", "auto"):
        return "auto", 0
    if s in ("cpu", "numpy"):
        return "cpu", 0
    if s in ("cuda", "gpu"):
        return "cuda", 0
    for prefix in ("cuda:", "gpu:"):
        if s.startswith(prefix):
            tail = s[len(prefix):]
            if tail.isdigit():
                return "cuda", int(tail)
    raise BackendError(
        f"unknown device {spec!r}: use cpu, cuda, cuda:N (N a device number) or auto"
    )


# --------------------------------------------------------------------------- backend object
@dataclass(frozen=True)
class Backend:
    """A compute device and the array module that drives it.

    Attributes
    ----------
    name : {"cpu", "cuda"}
    device_id : int
        CUDA device ordinal (0 on the CPU).
    xp : module
        ``numpy`` or ``cupy``.
    """

    name: str
    device_id: int = 0
    xp: Any = field(default=np, repr=False, compare=False)

    @property
    def is_gpu(self) -> bool:
        return self.name == "cuda"

    @property
    def label(self) -> str:
        return f"cuda:{self.device_id}" if self.is_gpu else "cpu"

    def activate(self):
        """Context manager that makes this device current in the calling thread.

        CuPy's current device is per thread, so a worker thread must enter this
        before it allocates. On the CPU it does nothing.
        """
        if not self.is_gpu:
            return contextlib.nullcontext()
        return self.xp.cuda.Device(self.device_id)

    def asarray(self, a, dtype=None):
        """Move ``a`` to this device (no copy if it is already there)."""
        if self.is_gpu:
            with self.activate():
                return self.xp.asarray(a, dtype=dtype)
        return np.asarray(asnumpy(a), dtype=dtype)

    def asnumpy(self, a):
        return asnumpy(a)

    def synchronize(self) -> None:
        if self.is_gpu:
            with self.activate():
                self.xp.cuda.get_current_stream().synchronize()

    def mem_info(self) -> tuple[int, int]:
        """``(free, total)`` bytes of device memory (host memory on the CPU)."""
        if self.is_gpu:
            with self.activate():
                free, total = self.xp.cuda.runtime.memGetInfo()
            # memory CuPy's pool holds but does not use is free for our purposes
            pool = self.xp.get_default_memory_pool()
            return int(free + pool.free_bytes()), int(total)
        return _host_mem_info()

    def free_memory_pool(self) -> None:
        if self.is_gpu:
            with self.activate():
                self.xp.get_default_memory_pool().free_all_blocks()

    def release_caches(self) -> None:
        """After running out of device memory: drop what the kernels keep between calls
        (:func:`on_release`: captured CUDA graphs and the like), then free the memory pool."""
        for fn in list(_RELEASE_HOOKS):
            try:
                fn(self)
            except Exception:  # noqa: BLE001 - best effort, as freeing the pool is
                pass
        self.free_memory_pool()

    def __str__(self) -> str:
        return self.label


_RELEASE_HOOKS: list = []


def on_release(fn) -> None:
    """Register ``fn(backend)``, called by :meth:`Backend.release_caches` (after an
    out-of-memory error) to drop device memory a module keeps between calls."""
    if fn not in _RELEASE_HOOKS:
        _RELEASE_HOOKS.append(fn)


_CPU = Backend("cpu", 0, np)
_default_lock = threading.Lock()
_default_spec: str | None = None


def set_default_device(spec: str | None) -> Backend:
    """Set the process-wide default used when no device is given. Returns it."""
    global _default_spec
    be = get_backend(spec)
    with _default_lock:
        _default_spec = spec
    return be


def get_backend(device: str | Backend | None = None) -> Backend:
    """Return the :class:`Backend` for ``device`` (see the module docstring).

    Raises
    ------
    BackendError
        ``cuda`` was asked for and cannot be used, or the spec is malformed.
    """
    if isinstance(device, Backend):
        return device
    spec = device
    if spec is None:
        spec = _default_spec
    if spec is None:
        spec = os.environ.get(ENV_VAR) or None
        source = f"{ENV_VAR}={spec}" if spec else "auto"
    else:
        source = f"device {spec!r}"
    kind, index = parse_device(spec)
    if kind == "cpu":
        return _CPU
    if kind == "auto":
        return _cuda_backend(0) if cupy_available() else _CPU
    reason = _no_cuda_reason()
    if reason:
        raise BackendError(f"{source} asks for CUDA, but {reason}; use --device cpu")
    n = cuda_device_count()
    if index >= n:
        raise BackendError(
            f"{source} asks for CUDA device {index}, but only {n} device(s) exist (0..{n - 1})"
        )
    return _cuda_backend(index)


@functools.cache
def _cuda_backend(index: int) -> Backend:
    return Backend("cuda", index, _import_cupy())


def current_device() -> Backend:
    """The CUDA device current in the calling thread (CuPy's current device, per thread) as a
    :class:`Backend`; the CPU backend where CuPy cannot be used. For code that is handed CuPy arrays
    or runs under :meth:`Backend.activate` and needs the device itself: a kernel from :func:`kernel`,
    a per-device cache key (``current_device().device_id``).

    >>> current_device().label in ("cpu", "cuda:0")   # cuda:N under ``with cupy.cuda.Device(N)``
    True
    """
    cp = _import_cupy()
    if isinstance(cp, str) or cuda_device_count() == 0:
        return _CPU
    return _cuda_backend(int(cp.cuda.Device().id))


def device_of(a) -> Backend:
    """The :class:`Backend` an array lives on: the CUDA device of a CuPy array, else the CPU.

    >>> device_of(np.zeros(3)).label
    'cpu'
    """
    dev = getattr(a, "device", None)
    if hasattr(a, "__cuda_array_interface__") and dev is not None and hasattr(dev, "id"):
        return _cuda_backend(int(dev.id))
    return _CPU


# --------------------------------------------------------------------------- transfers
def asnumpy(a) -> np.ndarray:
    """Copy a CuPy array to the host; NumPy arrays and scalars pass through."""
    if hasattr(a, "__cuda_array_interface__") and hasattr(a, "get"):
        return a.get()
    return np.asarray(a)


def array_module(*arrays):
    """``cupy`` if any argument is a CuPy array, else ``numpy``."""
    for a in arrays:
        if hasattr(a, "__cuda_array_interface__"):
            return _import_cupy()
    return np


# --------------------------------------------------------------------------- info
def _host_mem_info() -> tuple[int, int]:
    try:
        with open("/proc/meminfo") as f:
            vals = {}
            for line in f:
                k, v = line.split(":", 1)
                vals[k] = int(v.split()[0]) * 1024
        return vals.get("MemAvailable", 0), vals.get("MemTotal", 0)
    except OSError:
        return 0, 0


def device_info(device: str | Backend | None = None) -> dict:
    """Describe the compute device as a dict of plain values.

    Keys: ``backend`` ("cpu" or "cuda"), ``name``, ``label`` (one line for a status
    bar); on CUDA also ``device_id``, ``compute_capability`` ("9.0"),
    ``multiprocessors``, ``free_bytes`` and ``total_bytes``, ``cuda_runtime``.
    """
    be = get_backend(device)
    if not be.is_gpu:
        return {
            "backend": "cpu",
            "name": "CPU (NumPy)",
            "label": "CPU (NumPy)",
            "processor": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "cupy_status": _no_cuda_reason() or "CUDA available but not selected",
        }
    cp = be.xp
    with be.activate():
        props = cp.cuda.runtime.getDeviceProperties(be.device_id)
        free, total = cp.cuda.runtime.memGetInfo()
        rt = cp.cuda.runtime.runtimeGetVersion()
    name = props["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    cc = f"{props['major']}.{props['minor']}"
    gib = 1024**3
    return {
        "backend": "cuda",
        "device_id": be.device_id,
        "name": name,
        "compute_capability": cc,
        "multiprocessors": int(props["multiProcessorCount"]),
        "free_bytes": int(free),
        "total_bytes": int(total),
        "cuda_runtime": f"{rt // 1000}.{(rt % 1000) // 10}",
        "label": f"{name} (cuda:{be.device_id}, sm_{cc.replace('.', '')}, "
        f"{free / gib:.1f}/{total / gib:.1f} GiB free)",
    }


def versions() -> dict:
    """Versions of gpulab and the libraries it uses (None where absent).

    Does not import Qt: the app adds Qt's version itself.
    """
    import importlib.metadata as md

    out = {}
    for dist in ("gpulab", "numpy", "scipy", "cupy", "vtk", "pyvista", "pymeshlab", "scikit-image"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    if out["cupy"] is None:
        cp = _import_cupy()
        out["cupy"] = None if isinstance(cp, str) else cp.__version__
    if out["gpulab"] is None:
        from gpu_kernels import __version__

        out["gpulab"] = __version__
    return out


def device_report(device: str | Backend | None = None) -> str:
    """A multi-line, human-readable report of the device and library versions."""
    info = device_info(device)
    lines = [f"Compute device: {info['label']}"]
    if info["backend"] == "cuda":
        lines.append(f"  compute capability {info['compute_capability']}, "
                     f"{info['multiprocessors']} SMs, CUDA runtime {info['cuda_runtime']}")
    else:
        lines.append(f"  {info['cores']} cores; CUDA: {info['cupy_status']}")
    for k, v in versions().items():
        lines.append(f"  {k}: {v or 'not installed'}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- CUDA sources
def cuda_source_names() -> list[str]:
    """File names of every ``.cu`` source shipped in ``gpu_kernels/cuda``."""
    root = resources.files("gpu_kernels") / "cuda"
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".cu"))


@functools.cache
def cuda_source(name: str) -> str:
    """The text of ``gpu_kernels/cuda/<name>``."""
    path = resources.files("gpu_kernels") / "cuda" / name
    if not path.is_file():
        raise FileNotFoundError(f"no CUDA source gpu_kernels/cuda/{name}")
    return path.read_text()


_module_cache: dict[tuple, Any] = {}
_module_lock = threading.RLock()
_INCLUDE_RE = None


def cuda_include_dir() -> str:
    """The folder of the ``.cu``/``.cuh`` sources (passed to NVRTC as ``-I``)."""
    return str(resources.files("gpu_kernels") / "cuda")


def _header_checksum(name: str, seen: set | None = None) -> int:
    """CRC32 over the local headers ``name`` includes, recursively.

    CuPy's on-disk kernel cache is keyed on the source text and the options, not on the
    files a source includes, so the checksum goes in as a define: editing a header then
    never serves a stale build.
    """
    import re
    import zlib

    global _INCLUDE_RE
    if _INCLUDE_RE is None:
        _INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    seen = set() if seen is None else seen
    crc = 0
    for hdr in _INCLUDE_RE.findall(cuda_source(name)):
        if hdr in seen:
            continue
        seen.add(hdr)
        try:
            text = cuda_source(hdr)
        except FileNotFoundError:
            continue  # a system header
        crc = zlib.crc32(text.encode(), crc)
        crc = zlib.crc32(str(_header_checksum(hdr, seen)).encode(), crc)
    return crc


def load_module(
    name: str,
    *,
    options: tuple[str, ...] = (),
    name_expressions: tuple[str, ...] | None = None,
    defines: dict[str, Any] | None = None,
    device: str | Backend | None = None,
):
    """Compile ``gpu_kernels/cuda/<name>`` into a cached ``cupy.RawModule``.

    One module is built per (device, source, options, defines, name expressions);
    later calls return it at once. ``defines`` become ``-DKEY=VALUE`` options. Local
    headers (``#include "x.cuh"``) are found in ``gpu_kernels/cuda`` and their checksum
    is added as ``-DGPULAB_HDR=...``. The module is compiled for the device's own
    architecture by NVRTC.
    """
    be = get_backend(device)
    if not be.is_gpu:
        raise BackendError(f"load_module({name!r}) needs a CUDA backend, not {be.label}")
    defs = dict(defines or {})
    hdr = _header_checksum(name)
    if hdr:
        defs["GPULAB_HDR"] = hdr
    opts = (f"-I{cuda_include_dir()}",) + tuple(options) + tuple(
        f"-D{k}={v}" for k, v in sorted(defs.items()))
    key = (be.device_id, name, opts, tuple(name_expressions or ()))
    mod = _module_cache.get(key)
    if mod is not None:
        return mod
    with _module_lock:
        mod = _module_cache.get(key)
        if mod is None:
            cp = be.xp
            with be.activate():
                mod = cp.RawModule(
                    code=cuda_source(name),
                    options=("-std=c++17",) + opts,
                    name_expressions=list(name_expressions) if name_expressions else None,
                )
                mod.compile()
            _module_cache[key] = mod
    return mod


_kernel_cache: dict[tuple, Any] = {}


def _is_emulator(be) -> bool:
    return callable(getattr(be, "load_module", None))


def _kernel_backend(device):
    """The backend a kernel is built for: a Backend, a device spec, or an emulator: any object
    with its own ``load_module(source, *, defines, options)`` returning a module with
    ``get_function`` (the test suite's CPU emulator of CUDA kernels, ``tests/cuda_emu``)."""
    if device is not None and not isinstance(device, str) and _is_emulator(device):
        return device
    return get_backend(device)


def cache_key(be) -> tuple:
    """The key of a per-device cache for the backend ``be``: ``("cuda", device_id)``, or ``("emu", id(be))`` for an
    emulator (a backend with its own ``load_module``, the test suite's ``tests/cuda_emu``).

    An emulated backend says ``device_id`` 0 too; a cache keyed by the number alone handed its objects (an emulated
    stream, say) to the real device 0 in the same process, where CUDA refused them ("invalid resource handle";
    session 31, the flow's second stream, when the emulated and the GPU flow tests met in one pytest worker).

    >>> cache_key(get_backend("cpu"))
    ('cpu', 0)
    """
    if _is_emulator(be):
        return ("emu", id(be))
    return ("cuda" if getattr(be, "is_gpu", True) else "cpu", int(getattr(be, "device_id", 0) or 0))


def module(device, source: str, defines: dict | None = None, options: tuple[str, ...] = ()):
    """The compiled module of ``gpu_kernels/cuda/<source>`` for ``device`` (see :func:`kernel`)."""
    be = _kernel_backend(device)
    if _is_emulator(be):  # the emulator hook: the emulator builds the module itself
        key = ("emu", id(be), source, tuple(sorted((defines or {}).items())), tuple(options))
        mod = _kernel_cache.get(key)
        if mod is None:
            mod = be.load_module(source, defines=defines, options=tuple(options))
            _kernel_cache[key] = mod
        return mod
    return load_module(source, defines=defines, options=tuple(options), device=be)


def kernel(device, source: str, name: str, defines: dict | None = None, options: tuple[str, ...] = (),
           cooperative: bool = False):
    """The kernel ``name`` of ``gpu_kernels/cuda/<source>``, compiled once per device (and
    defines and options) and memoised: the one way the library gets a CUDA kernel.

    ``device`` is a :class:`Backend`, a device spec (``"cuda:0"``), or an emulator carrying its
    own ``load_module`` (the test suite's CPU emulator, ``tests/cuda_emu``, compiles the same
    ``.cu`` source with a C++ compiler), so every kernel reached through here can be tested
    without a GPU.

    >>> k = kernel("cuda:0", "selftest.cu", "gpulab_saxpy")                # doctest: +SKIP
    >>> k((blocks,), (threads,), (np.float32(2), x, y, np.int32(n)))       # doctest: +SKIP

    ``cooperative=True``: the kernel is launched cooperatively (``cuLaunchCooperativeKernel``: every
    block resident at once, so that the blocks may wait for each other; the grid must fit the device,
    see :func:`cooperative_blocks`). The module is compiled as usual (no relocatable device code: a
    kernel brings its own grid barrier). The emulator runs blocks one after another, so there a
    cooperative launch must have one block.
    """
    if cooperative:
        return _Cooperative(kernel(device, source, name, defines, options),
                            emulated=_is_emulator(_kernel_backend(device)))
    be = _kernel_backend(device)
    key = (*cache_key(be), source, name, tuple(sorted((defines or {}).items())), tuple(options))
    fn = _kernel_cache.get(key)
    if fn is None:
        with _module_lock:
            fn = _kernel_cache.get(key)
            if fn is None:
                fn = module(be, source, defines, options).get_function(name)
                _kernel_cache[key] = fn
    return fn


class _Cooperative:
    """A kernel launched cooperatively (:func:`kernel` with ``cooperative=True``); ``emulated``: built by
    the test suite's CPU emulator (known from the backend it was built for, not guessed from the function)."""

    def __init__(self, fn, *, emulated: bool):
        self.fn = fn
        self.emulated = bool(emulated)

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None):
        grid = tuple(grid)
        if self.emulated:
            if int(np.prod(grid)) != 1:
                raise BackendError("the CUDA emulator runs a cooperative launch with one block only")
            return self.fn(grid, block, args, shared_mem=shared_mem)
        return self.fn.kernel(grid, tuple(block), args, shared_mem=shared_mem, stream=stream,
                              enable_cooperative_groups=True)

    def __getattr__(self, name):
        return getattr(self.fn, name)


def cooperative_blocks(fn, threads: int, shared_mem: int = 0, device=None) -> int:
    """How many blocks of ``threads`` a cooperative launch of ``fn`` (a kernel from :func:`kernel` with
    ``cooperative=True``) may have on the device: the SMs times the blocks one SM holds (1 for the emulator)."""
    if not isinstance(fn, _Cooperative):
        raise TypeError("cooperative_blocks takes a kernel made with kernel(..., cooperative=True)")
    if fn.emulated:
        return 1
    fn = fn.fn
    import cupy as cp
    from cupy.cuda import driver

    dev = int(cp.cuda.Device().id if device is None else device)
    key = (fn.kernel.ptr, int(threads), int(shared_mem), dev)
    n = _COOP_BLOCKS.get(key)
    if n is None:  # (asked once per kernel, size and device: both queries cost tens of µs)
        per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, int(threads), int(shared_mem))
        n = _COOP_BLOCKS[key] = int(per_sm) * sm_count(_cuda_backend(dev))
    return n


_COOP_BLOCKS: dict = {}
_SMS: dict = {}


def sm_count(be) -> int:
    """Multiprocessors of ``be``'s device, asked once (CuPy's ``Device.attributes`` reads every attribute: too
    slow for each call); an emulator's backend answers through its own ``attributes``."""
    key = cache_key(be)
    n = _SMS.get(key)
    if n is None:
        with be.activate():
            try:
                n = int(be.xp.cuda.runtime.deviceGetAttribute(16, be.device_id))  # cudaDevAttrMultiProcessorCount
            except Exception:  # noqa: BLE001 - an emulator without the call
                n = int(be.xp.cuda.Device(be.device_id).attributes["MultiProcessorCount"])
        _SMS[key] = n
    return n


#: id(fn) -> (fn, the most dynamic shared memory it was opted in to); fn is held, so its id stays its own
_smem_opt_in: dict[int, tuple[Any, int]] = {}
_smem_lock = threading.Lock()


def set_max_dynamic_smem(fn, nbytes: int) -> None:
    """Opt a ``cupy.RawKernel``/module function in to more than 48 KiB of dynamic shared
    memory (needed before launching it with ``shared_mem > 48 KiB``).

    The limit only grows: a function comes from the per-device cache (:func:`kernel`) and may be
    launched from several threads at once with different sizes (k-means with two ``k_max``, say);
    a smaller later opt-in must not lower the limit under another thread's launch."""
    if nbytes <= 48 * 1024:
        return
    with _smem_lock:
        held = _smem_opt_in.get(id(fn))
        if held is not None and held[0] is fn and held[1] >= nbytes:
            return
        try:
            fn.max_dynamic_shared_size_bytes = nbytes
        except AttributeError:
            from cupy.cuda import driver

            driver.funcSetAttribute(fn.ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
        _smem_opt_in[id(fn)] = (fn, nbytes)
