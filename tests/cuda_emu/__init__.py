"""Run gpu_kernels' CUDA C sources on the CPU, so that CI (no GPU) tests the kernels.

The one CUDA emulator of the test suite. :func:`emu_backend` returns a
:class:`~gpu_kernels.backend.Backend` named ``"cuda"`` whose ``load_module`` builds a
``gpu_kernels/cuda/<name>.cu`` source with g++ (``cuda_emu.h`` force-included: CUDA threads
are fibers, barriers and warp collectives a scheduler; see the header). It is the emulator
hook of :func:`gpu_kernels.backend.kernel`: pass the backend as the device, and a tool's GPU
path runs unchanged, its kernels on the CPU and its host code on :data:`xp`, NumPy dressed
as the part of CuPy the host code uses (``a.get()``, ``a.data.ptr``, ``xp.cuda`` streams,
events, ``runtime.memcpyAsync``, ``Module.get_global``, stream capture into a graph that
``launch`` replays).

Launches are checked as the GPU would check them, or stricter: the argument count; NumPy
scalars of the parameter's width and kind (a Python int or a float64 for a ``float`` is an
error, since CuPy would pass it with another width); C-contiguous arrays whose element
matches the pointer's type; at most 1024 threads and the kernel's ``__launch_bounds__``;
more than 48 KiB of dynamic shared memory only after ``max_dynamic_shared_size_bytes`` was
raised. A barrier that cannot be reached is reported as a deadlock, not a hang. Blocks, and
the threads of a block, run in a shuffled order (the same for the same kernel and launch
shape), since CUDA promises none;
``GPULAB_EMU_ORDER=inorder`` runs them in index order.

Timing means nothing here, and inputs must stay small (one CPU core runs every thread).

>>> from cuda_emu import available, emu_backend                        # doctest: +SKIP
>>> from gpu_kernels.backend import kernel                              # doctest: +SKIP
>>> k = kernel(emu_backend(), "selftest.cu", "gpulab_saxpy")            # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import types
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpu_kernels.backend import Backend, cuda_include_dir

__all__ = ["available", "compiler", "emu_backend", "EmuBackend", "EmuArray", "EmuError", "xp", "compile_module"]

HEADER = Path(__file__).resolve().parent / "cuda_emu.h"
_VERSION = "3"   # bump when the generated wrapper changes


class EmuError(RuntimeError):
    """A launch the GPU would refuse, or a kernel that deadlocks in the emulator."""


def compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++")


def available() -> str:
    """'' when the emulator can run here, else the reason (for ``pytest.mark.skipif``)."""
    if compiler() is None:
        return "the CUDA emulator needs a C++ compiler (g++) on PATH"
    return ""


# ----------------------------------------------------------------------------- kernel signatures
_KERNEL_START = re.compile(r'extern\s+"C"\s+__global__\b')


def _balanced(text: str, i: int) -> int:
    """The index just past the parenthesis group that opens at ``text[i]``."""
    depth = 0
    for j in range(i, len(text)):
        depth += text[j] == "("
        depth -= text[j] == ")"
        if depth == 0:
            return j + 1
    raise EmuError("unbalanced parentheses in a kernel signature")


def _signatures(text: str):
    """``(name, launch bounds or None, parameter text)`` of every ``extern "C" __global__`` kernel."""
    for m in _KERNEL_START.finditer(text):
        i, bounds = m.end(), None
        while True:
            t = re.match(r"\s*(__launch_bounds__|void|__noinline__)\s*", text[i:])
            if not t:
                break
            i += t.end()
            if t.group(1) == "__launch_bounds__":
                j = _balanced(text, i)
                bounds = text[i + 1:j - 1]
                i = j
        name = re.match(r"\s*(\w+)\s*", text[i:])
        if not name:
            continue
        i += name.end()
        if text[i:i + 1] != "(":
            continue
        j = _balanced(text, i)
        yield name.group(1), bounds, text[i + 1:j - 1]


_TYPEDEF = re.compile(r"\btypedef\s+([\w\s]+?)\s+(\w+)\s*;|\busing\s+(\w+)\s*=\s*([\w\s]+?)\s*;")


def _typedefs(text: str) -> dict[str, str]:
    out = {}
    for m in _TYPEDEF.finditer(text):
        alias, target = (m.group(2), m.group(1)) if m.group(2) else (m.group(3), m.group(4))
        out[alias] = " ".join(target.split())
    return out


# C type -> (kind, bytes): kind "f" float, "i" integer, "b" bool
_SCALARS = {
    "float": ("f", 4), "double": ("f", 8),
    "int": ("i", 4), "signed": ("i", 4), "signed int": ("i", 4), "unsigned": ("i", 4), "unsigned int": ("i", 4),
    "int32_t": ("i", 4), "uint32_t": ("i", 4),
    "long": ("i", 8), "long int": ("i", 8), "unsigned long": ("i", 8), "long long": ("i", 8),
    "long long int": ("i", 8), "unsigned long long": ("i", 8), "unsigned long long int": ("i", 8),
    "int64_t": ("i", 8), "uint64_t": ("i", 8), "size_t": ("i", 8), "u64": ("i", 8),
    "short": ("i", 2), "unsigned short": ("i", 2), "int16_t": ("i", 2), "uint16_t": ("i", 2),
    "char": ("i", 1), "signed char": ("i", 1), "unsigned char": ("i", 1), "int8_t": ("i", 1), "uint8_t": ("i", 1),
    "bool": ("b", 1),
}
_VECTORS = {f"{n}{k}": _SCALARS[c] for n, c in (("float", "float"), ("double", "double"), ("int", "int"),
                                                 ("uint", "unsigned"), ("short", "short"), ("ushort", "short"),
                                                 ("uchar", "char"), ("char", "char"), ("longlong", "long long"),
                                                 ("ulonglong", "long long")) for k in (2, 3, 4)}
_CTYPE_OF = {("f", 4): "float32", ("f", 8): "float64", ("i", 1): "int8", ("i", 2): "int16", ("i", 4): "int32",
             ("i", 8): "int64", ("b", 1): "bool"}


@dataclass
class _Param:
    name: str
    ctype: str          # the C type as the wrapper casts it ("const float*", "int")
    base: str           # without qualifiers and '*'
    pointer: bool


def _parse_params(text: str, typedefs: dict[str, str] | None = None) -> list[_Param]:
    typedefs = typedefs or {}
    out = []
    for raw in text.split(","):
        raw = " ".join(raw.replace("__restrict__", " ").split())
        if not raw:
            continue
        if raw == "void":
            continue
        m = re.match(r"^(.*?)(\w+)\s*$", raw)
        if not m:
            raise EmuError(f"cannot parse the kernel parameter {raw!r}")
        ctype, name = " ".join(m.group(1).split()), m.group(2)
        pointer = "*" in ctype
        words = [w for w in ctype.replace("*", " ").split() if w not in ("const", "volatile")]
        base = " ".join(words)
        for _ in range(8):               # typedef chains (i64 -> long long)
            base = typedefs.get(base, base)
        if not pointer and base not in _SCALARS:
            raise EmuError(f"the emulator does not know the kernel parameter type {ctype!r} ({name})")
        out.append(_Param(name, ctype, base, pointer))
    return out


def _bound(expr: str | None) -> int | None:
    if not expr:
        return None
    first = expr.split(",")[0]
    if not re.fullmatch(r"[\d\s()+\-*/]+", first):
        return None
    try:
        return int(eval(first, {"__builtins__": {}}))  # noqa: S307 - digits and operators only
    except Exception:
        return None


# ----------------------------------------------------------------------------- which kernels need fibers
_COLLECTIVES = {"__syncthreads", "__syncthreads_or", "__syncthreads_and", "__syncthreads_count", "__syncwarp",
                "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync",
                "__any_sync", "__all_sync"}
_IDENT = re.compile(r"[A-Za-z_]\w*")


def _functions(text: str, out: dict[str, str] | None = None) -> dict[str, str]:
    """Name -> body of every function defined in ``text`` (namespaces and extern blocks entered)."""
    out = {} if out is None else out
    i, n, head_start = 0, len(text), 0
    while i < n:
        c = text[i]
        if c in ";}":
            head_start = i + 1
        elif c == "{":
            depth, j = 0, i
            while j < n:
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            head, body = text[head_start:i], text[i + 1:j]
            close = head.rfind(")")
            if close < 0 or re.search(r"\b(namespace|struct|class|union|enum)\b", head) or head.strip().endswith("="):
                _functions(body, out)           # a namespace, extern "C" { }, a struct: look inside
            else:
                depth, k = 0, close
                while k >= 0:
                    depth += head[k] == ")"
                    depth -= head[k] == "("
                    if depth == 0:
                        break
                    k -= 1
                names = _IDENT.findall(head[:k])
                if names:
                    out[names[-1]] = out.get(names[-1], "") + body
            i, head_start = j + 1, j + 1
            continue
        i += 1
    return out


def _fibered(text: str) -> set[str]:
    """Functions that can reach a barrier or a warp collective (transitively)."""
    bodies = {name: set(_IDENT.findall(body)) for name, body in _functions(text).items()}
    hit = set(_COLLECTIVES)
    changed = True
    while changed:
        changed = False
        for name, idents in bodies.items():
            if name not in hit and idents & hit:
                hit.add(name)
                changed = True
    return hit


# ----------------------------------------------------------------------------- build
# inline PTX the emulator knows: one output, one input (the rest fails to build, with g++'s message)
_ASM = re.compile(r'\basm\s*(?:volatile\s*)?\(\s*"\s*([\w.]+)\s+%0\s*,\s*%1\s*;?\s*"\s*:\s*"=\w+"\s*\(\s*([^()]+?)\s*\)'
                  r'\s*:\s*"\w+"\s*\(\s*([^()]+?)\s*\)\s*\)\s*;')
_PTX = {"cvt.rn.f16.f32": "emu::f32_to_f16", "cvt.f32.f16": "emu::f16_to_f32", "mov.b32": "",
        "cvt.rn.f32.f16": "emu::f16_to_f32"}


def _asm(m):
    fn = _PTX.get(m.group(1))
    if fn is None:
        return m.group(0)
    return f"{m.group(2)} = {fn}({m.group(3)});"


_EXTERN_SHARED = re.compile(r"\bextern\s+static\s+((?:alignas\s*\(\s*\d+\s*\)\s*)?)([A-Za-z_][\w\s]*?)\s+(\w+)\s*\[\s*\]\s*;")


def _run(cmd, what):
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise EmuError(f"emulator: {what} failed:\n{res.stderr[-6000:]}")
    return res.stdout


def _defines(defines: dict, options) -> list[str]:
    args = [f"-D{k}={v}" for k, v in sorted(defines.items())]
    for o in options or ():
        if str(o).startswith(("-D", "-U", "--define-macro")):
            args.append(str(o))
    return args


@dataclass
class _Kernel:
    name: str
    params: list[_Param]
    max_threads: int | None
    fibers: bool


def _build(name: str, defines: dict, options) -> tuple[Path, dict[str, _Kernel]]:
    cxx = compiler()
    if cxx is None:
        raise EmuError(available())
    src = Path(cuda_include_dir()) / name
    if not src.is_file():
        raise FileNotFoundError(f"no CUDA source gpu_kernels/cuda/{name}")
    dargs = _defines(defines, options)
    base = [cxx, "-std=c++17", f"-I{cuda_include_dir()}", "-DGPULAB_EMU=1", *dargs]
    bare = _run([*base, "-E", "-P", "-x", "c++", str(src)], f"preprocessing {name}")
    fib = _fibered(bare)
    kernels = {}
    tdefs = _typedefs(bare)
    for kname, bounds, params in _signatures(bare):
        kernels[kname] = _Kernel(kname, _parse_params(params, tdefs), _bound(bounds), kname in fib)
    full = _run([*base, "-E", "-x", "c++", "-include", str(HEADER), str(src)], f"preprocessing {name} with cuda_emu.h")
    full = _ASM.sub(_asm, full)
    full = _EXTERN_SHARED.sub(lambda m: f"static {m.group(2)}* const {m.group(3)} = "
                                        f"reinterpret_cast<{m.group(2)}*>(emu::g_dyn_smem);", full)
    lines = [full, '\nextern "C" const char* emu_error() { return emu::g_err; }']
    for k in kernels.values():
        args = ", ".join(f"*({p.ctype}*)a[{i}]" for i, p in enumerate(k.params))
        lines.append(
            f'extern "C" int emu_{k.name}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, '
            f"unsigned bz, unsigned long long smem, unsigned long long seed, void** a) {{\n"
            f"  auto body = [&]() {{ {k.name}({args}); }};\n"
            f"  return emu::launch(dim3{{gx, gy, gz}}, dim3{{bx, by, bz}}, smem, {str(k.fibers).lower()}, seed, body);\n}}")
    code = "\n".join(lines) + "\n"
    flags = ["-O1", "-shared", "-fPIC", "-w", "-ffp-contract=off", "-fno-strict-aliasing", "-U_FORTIFY_SOURCE",
             "-D_FORTIFY_SOURCE=0"]
    digest = hashlib.sha1((_VERSION + code + " ".join(flags)).encode()).hexdigest()[:20]
    build = Path(tempfile.gettempdir()) / f"gpulab-cuda-emu-{os.getuid()}"
    build.mkdir(exist_ok=True)
    so = build / f"{Path(name).stem}-{digest}.so"
    if not so.exists():
        with tempfile.TemporaryDirectory(dir=build) as td:
            cpp = Path(td) / "k.ii"
            cpp.write_text(code)
            tmp = Path(td) / "k.so"
            _run([cxx, "-std=c++17", *flags, "-x", "c++-cpp-output", str(cpp), "-o", str(tmp)], f"the build of {name}")
            os.replace(tmp, so)
    return so, kernels


# every launch runs on the one host thread that holds this: the emulator's state is global
_launch_lock = threading.Lock()
# the launches and copies of a stream capture (cupy.cuda.Stream.begin_capture), else None
_capture: list | None = None


def _order_seed() -> int:
    """``GPULAB_EMU_ORDER``: ``shuffle`` (the default) runs the blocks and the threads of each
    block of every launch in a shuffled order, ``inorder`` in index order, an integer shuffles
    from that seed."""
    v = os.environ.get("GPULAB_EMU_ORDER", "shuffle").strip().lower()
    if v in ("", "shuffle"):
        return 0x9E3779B97F4A7C15
    if v in ("inorder", "0", "none"):
        return 0
    try:
        return int(v)
    except ValueError:
        raise EmuError(f"GPULAB_EMU_ORDER={v!r}: use shuffle, inorder or an integer seed") from None


def _launch_seed(name: str, grid, block) -> int:
    """The order of one launch: from the kernel and its shape, so a test run alone or in the
    suite sees the same order."""
    base = _order_seed()
    if not base:
        return 0
    h = zlib.crc32(f"{name}{grid}{block}".encode())
    return (base * 6364136223846793005 + h * 1442695040888963407) % (1 << 64) or 1


def _kind(dtype) -> str:
    """The kind of ``_SCALARS``: "b" (bool), "f" (floating) or "i" (any integer)."""
    return "b" if dtype.kind == "b" else ("f" if dtype.kind == "f" else "i")


def _slot(address: int, keep: list) -> int:
    """The address of a pointer argument's slot (kept alive in ``keep`` until the launch)."""
    slot = ctypes.c_void_p(address)
    keep.append(slot)
    return ctypes.addressof(slot)


class EmuKernel:
    """One kernel; called as a ``cupy.RawKernel`` is: ``k(grid, block, args, shared_mem=0)``."""

    def __init__(self, lib, k: _Kernel, source: str):
        self.name, self.params, self.source, self.fibers = k.name, k.params, source, k.fibers
        self.max_threads_per_block = k.max_threads or 1024
        self.max_dynamic_shared_size_bytes = 48 * 1024
        self.num_regs, self.local_size_bytes, self.shared_size_bytes, self.const_size_bytes = 32, 0, 0, 0
        self._fn = getattr(lib, "emu_" + k.name)
        self._fn.restype = ctypes.c_int
        self._fn.argtypes = [ctypes.c_uint] * 6 + [ctypes.c_ulonglong, ctypes.c_ulonglong,
                                                   ctypes.POINTER(ctypes.c_void_p)]
        self._err = lib.emu_error
        self._err.restype = ctypes.c_char_p

    def _fail(self, msg):
        raise EmuError(f"{self.name} ({self.source}): {msg}")

    def _arg(self, i, p: _Param, a, keep):
        if p.pointer:
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    self._fail(f"argument {i} ({p.name}) is not a C-contiguous array")
                want = _SCALARS.get(p.base) or _VECTORS.get(p.base)
                if want is not None and a.size:
                    kind = _kind(a.dtype)
                    ok = (kind, a.dtype.itemsize) == want or (want == ("i", 1) and kind == "b") or \
                        (want == ("b", 1) and a.dtype.itemsize == 1) or \
                        (want == ("i", 2) and a.dtype == np.float16)      # halves as unsigned short
                    if not ok:
                        self._fail(f"argument {i} ({p.name}): a {a.dtype} array for a {p.ctype}")
                return _slot(a.ctypes.data, keep)
            if isinstance(a, np.integer) and a.dtype.itemsize == 8:     # NULL (or a raw address)
                return _slot(int(a), keep)
            ptr = getattr(a, "ptr", None)
            if isinstance(ptr, int):
                return _slot(ptr, keep)
            self._fail(f"argument {i} ({p.name}, {p.ctype}): expected an array, got {type(a).__name__}")
        kind, size = _SCALARS[p.base]
        want = _CTYPE_OF[(kind, size)]
        if not isinstance(a, np.generic):
            self._fail(f"argument {i} ({p.name}): pass a numpy {want} scalar for a {p.ctype}, got {type(a).__name__}")
        if (_kind(a.dtype), a.dtype.itemsize) != (kind, size):
            self._fail(f"argument {i} ({p.name}): pass a numpy {want} scalar for a {p.ctype}, got a {a.dtype} scalar")
        buf = np.array(a)
        keep.append(buf)
        return buf.ctypes.data

    def __call__(self, grid, block, args, shared_mem=0, stream=None, enable_cooperative_groups=False):
        grid = tuple(int(g) for g in (grid if isinstance(grid, tuple | list) else (grid,)))
        block = tuple(int(b) for b in (block if isinstance(block, tuple | list) else (block,)))
        if not 1 <= len(grid) <= 3 or not 1 <= len(block) <= 3:
            self._fail(f"grid {grid} and block {block} need one to three dimensions")
        grid += (1,) * (3 - len(grid))
        block += (1,) * (3 - len(block))
        if min(grid) < 1 or min(block) < 1:
            self._fail(f"empty launch: grid {grid}, block {block}")
        nt = block[0] * block[1] * block[2]
        if nt > 1024 or block[0] > 1024 or block[1] > 1024 or block[2] > 64:
            self._fail(f"block {block} is more than a CUDA block can hold")
        if nt > self.max_threads_per_block:
            self._fail(f"block {block} has {nt} threads, more than its __launch_bounds__ "
                       f"({self.max_threads_per_block})")
        if grid[0] >= 2 ** 31 or grid[1] > 65535 or grid[2] > 65535:
            self._fail(f"grid {grid} is larger than CUDA allows")
        smem = int(shared_mem or 0)
        if smem > 48 * 1024 and smem > int(self.max_dynamic_shared_size_bytes):
            self._fail(f"{smem} bytes of dynamic shared memory without raising max_dynamic_shared_size_bytes "
                       f"(backend.set_max_dynamic_smem)")
        args = tuple(args)
        if len(args) != len(self.params):
            self._fail(f"{len(args)} arguments for {len(self.params)} parameters")
        if _capture is not None:          # inside stream capture: recorded for the graph, not run
            _capture.append(lambda: self(grid, block, args, shared_mem=smem))
            return
        keep: list = []
        ptrs = (ctypes.c_void_p * max(1, len(args)))()
        for i, (p, a) in enumerate(zip(self.params, args, strict=True)):
            ptrs[i] = self._arg(i, p, a, keep)
        with _launch_lock:
            rc = self._fn(*grid, *block, smem, _launch_seed(self.name, grid, block), ptrs)
            if rc:
                self._fail(self._err().decode(errors="replace"))


@dataclass
class _Global:
    ptr: int
    size: int = 0

    def copy_from_host(self, src, nbytes):
        ctypes.memmove(self.ptr, src.ctypes.data if isinstance(src, np.ndarray) else int(src), int(nbytes))

    def copy_from_device(self, src, nbytes):
        ctypes.memmove(self.ptr, int(getattr(src, "ptr", src)), int(nbytes))


class EmuModule:
    """A built source; ``get_function`` and ``get_global`` as on a ``cupy.RawModule``."""

    def __init__(self, name: str, so: Path, kernels: dict[str, _Kernel]):
        self.name = name
        self._lib = ctypes.CDLL(str(so))
        self._kernels = {k: EmuKernel(self._lib, v, name) for k, v in kernels.items()}

    def get_function(self, name: str) -> EmuKernel:
        try:
            return self._kernels[name]
        except KeyError:
            raise AttributeError(f"{self.name} has no kernel {name!r} (it has {sorted(self._kernels)})") from None

    def get_global(self, name: str) -> _Global:
        try:
            return _Global(ctypes.addressof(ctypes.c_char.in_dll(self._lib, name)))
        except ValueError:
            raise AttributeError(f"{self.name} has no global {name!r}") from None

    def compile(self):
        return self


_modules: dict[tuple, EmuModule] = {}
_modules_lock = threading.Lock()


def compile_module(name: str, defines: dict | None = None, options=()) -> EmuModule:
    """The emulated module of ``gpu_kernels/cuda/<name>`` (built once per process and defines)."""
    defines = dict(defines or {})
    key = (name, tuple(sorted((k, str(v)) for k, v in defines.items())), tuple(options or ()))
    with _modules_lock:
        mod = _modules.get(key)
        if mod is None:
            so, kernels = _build(name, defines, options)
            mod = _modules[key] = EmuModule(name, so, kernels)
    return mod


# ----------------------------------------------------------------------------- CuPy's surface on NumPy
class _Ptr:
    def __init__(self, ptr):
        self.ptr = int(ptr)

    def __int__(self):
        return self.ptr


def _to_host(a, order="C", out=None) -> np.ndarray:
    """``cupy.asnumpy`` / ``ndarray.get``: a plain NumPy copy, or written into ``out``."""
    r = np.array(a, order=order)
    if out is not None:
        out[...] = r
        return out
    return r


class EmuArray(np.ndarray):
    """A NumPy array with the CuPy methods host code calls: ``get``, ``set``, ``data.ptr``.
    Reductions give 0-d arrays, as in CuPy."""

    def get(self, stream=None, order="C", out=None, blocking=True):
        return _to_host(self, order, out)

    def set(self, arr, stream=None):
        self[...] = arr

    @property
    def data(self):
        return _Ptr(self.__array_interface__["data"][0])

    @property
    def device(self):
        return _cuda.Device(0)

    def __array_wrap__(self, obj, context=None, return_scalar=False):
        return np.asarray(obj).view(EmuArray)


def _to_emu(r):
    if type(r) is np.ndarray:
        return r.view(EmuArray)
    if isinstance(r, np.generic):
        return np.asarray(r).view(EmuArray)
    if isinstance(r, tuple):
        return tuple(_to_emu(x) for x in r)
    if isinstance(r, list):
        return [_to_emu(x) for x in r]
    return r


class _Wrapped:
    """A NumPy function whose arrays come back as :class:`EmuArray` (attributes such as
    ``ufunc.at`` pass through)."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, *args, **kw):
        return _to_emu(self._fn(*args, **kw))

    def __getattr__(self, name):
        return _wrap(getattr(self._fn, name))


def _wrap(attr):
    if isinstance(attr, types.ModuleType):
        return _WrappedModule(attr)
    if callable(attr) and not isinstance(attr, type):
        return _Wrapped(attr)
    return attr


class _WrappedModule:
    def __init__(self, mod):
        self._mod = mod
        self.__name__ = "cupy_emu." + mod.__name__.split(".")[-1]

    def __getattr__(self, name):
        return _wrap(getattr(self._mod, name))


class _Stream:
    def __init__(self, null=False, non_blocking=False, ptds=False):
        self.ptr = 0

    def synchronize(self):
        pass

    def use(self):
        return self

    def record(self, event=None):
        return event or _Event()

    def wait_event(self, event):
        pass

    def begin_capture(self, mode=None):
        global _capture
        if _capture is not None:
            raise EmuError("stream capture is already under way")
        _capture = []

    def end_capture(self):
        global _capture
        if _capture is None:
            raise EmuError("end_capture without begin_capture")
        steps, _capture = _capture, None
        return _Graph(steps)

    def is_capturing(self):
        return _capture is not None

    def done(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Graph:
    """A captured sequence of launches and copies; ``launch`` replays it."""

    def __init__(self, steps):
        self.steps = steps

    def launch(self, stream=None):
        for step in self.steps:
            step()

    def upload(self, stream=None):
        pass


class _Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        import time

        self._t = time.perf_counter()
        self.ptr = 0

    def record(self, stream=None):
        import time

        self._t = time.perf_counter()

    def synchronize(self):
        pass

    def query(self):
        return True

    @property
    def done(self):
        return True


class _Device:
    attributes = {"MultiProcessorCount": 4, "MaxSharedMemoryPerBlockOptin": 232448, "MaxThreadsPerBlock": 1024,
                  "MaxSharedMemoryPerBlock": 49152, "WarpSize": 32, "ComputeCapabilityMajor": 9,
                  "ComputeCapabilityMinor": 0, "L2CacheSize": 1 << 24}

    def __init__(self, device=0):
        self.id = int(device or 0)
        self.compute_capability = "90"

    def use(self):
        return self

    def synchronize(self):
        pass

    @property
    def mem_info(self):
        return 8 << 30, 16 << 30

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _memcpy(dst, src, size, kind=None, stream=None):
    if _capture is not None:
        _capture.append(lambda: ctypes.memmove(int(dst), int(src), int(size)))
        return
    ctypes.memmove(int(dst), int(src), int(size))


class _MemPool:
    def used_bytes(self):
        return 0

    def free_bytes(self):
        return 0

    def total_bytes(self):
        return 0

    def free_all_blocks(self, stream=None):
        pass

    def set_limit(self, size=None, fraction=None):
        pass

    def get_limit(self):
        return 0


_cuda = types.SimpleNamespace(
    Device=_Device, Stream=_Stream, Event=_Event,
    get_current_stream=lambda device_id=None: _Stream(),
    get_elapsed_time=lambda a, b: (b._t - a._t) * 1e3,
    alloc_pinned_memory=lambda n: bytearray(int(n)),
    runtime=types.SimpleNamespace(
        memcpy=_memcpy, memcpyAsync=_memcpy, deviceSynchronize=lambda: None, getDeviceCount=lambda: 1,
        memGetInfo=lambda: (8 << 30, 16 << 30), runtimeGetVersion=lambda: 12040,
        getDeviceProperties=lambda i: {"name": b"cuda-emulated", "major": 9, "minor": 0,
                                       "multiProcessorCount": 4, "totalGlobalMem": 16 << 30},
        memcpyDefault=4, memcpyDeviceToDevice=3, memcpyHostToDevice=1, memcpyDeviceToHost=2),
)


class _EmuCupy:
    """NumPy with CuPy's names (``cuda``, ``asnumpy``, memory pools); arrays are EmuArray.
    Its ``__name__`` is not "cupy", so code that asks for the real CuPy (pinned buffers,
    ``cupyx``) takes its NumPy branch."""

    __name__ = "cupy_emu"
    ndarray = EmuArray
    cuda = _cuda

    def asnumpy(self, a, stream=None, order="C", out=None, blocking=True):
        return _to_host(a, order, out)

    def get_default_memory_pool(self):
        return _MemPool()

    def get_default_pinned_memory_pool(self):
        return _MemPool()

    def get_array_module(self, *args):
        return self

    def RawKernel(self, *a, **k):  # noqa: N802 - CuPy's name
        raise EmuError("cupy.RawKernel: use gpu_kernels.backend.kernel, which the emulator hooks")

    RawModule = ElementwiseKernel = ReductionKernel = RawKernel

    def __getattr__(self, name):
        return _wrap(getattr(np, name))


#: NumPy dressed as CuPy: the ``xp`` of :class:`EmuBackend`
xp = _EmuCupy()


@dataclass(frozen=True)
class EmuBackend(Backend):
    """A "cuda" backend whose kernels run on the CPU (tests only)."""

    name: str = "cuda"
    device_id: int = 0
    xp: object = field(default=xp, repr=False, compare=False)

    @property
    def label(self) -> str:
        return "cuda-emulated"

    def activate(self):
        return contextlib.nullcontext()

    def asarray(self, a, dtype=None):
        return self.xp.asarray(np.asarray(a), dtype=dtype)

    def asnumpy(self, a):
        return np.asarray(a)

    def synchronize(self) -> None:
        pass

    def mem_info(self) -> tuple[int, int]:
        return 8 << 30, 16 << 30

    def free_memory_pool(self) -> None:
        pass

    def load_module(self, name: str, *, defines: dict | None = None, options=()):
        """The emulator hook of :func:`gpu_kernels.backend.kernel` and ``module``."""
        return compile_module(name, defines, options)


_backends = {"cupy": EmuBackend(), "numpy": EmuBackend(device_id=1, xp=np)}


def emu_backend(host: str = "cupy") -> EmuBackend:
    """The emulated CUDA device (one per process and host flavour, so kernels are cached once).

    ``host="cupy"``: arrays are :class:`EmuArray` and ``xp`` is :data:`xp`, so host code
    written for CuPy runs as it is. ``host="numpy"``: ``xp`` is NumPy itself, for host code that
    takes a branch of its own for the emulator (``be.xp is np``) where it would call what only
    the real CuPy has (``cupyx.scipy``).
    """
    try:
        return _backends[host]
    except KeyError:
        raise ValueError(f"host must be 'cupy' or 'numpy', not {host!r}") from None
