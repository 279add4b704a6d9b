"""Run gpu_kernels' CUDA C sources on the CPU, for tests on machines without a GPU.

:class:`EmuBackend` is a :class:`~gpu_kernels.backend.Backend` whose ``xp`` is NumPy and
whose :meth:`EmuBackend.load_module` compiles ``gpu_kernels/cuda/<name>`` with g++ (each CUDA
thread a fiber, ``__syncthreads`` a switch to a round-robin scheduler; see
``flow_cuda_emu.h``). The compute layer's GPU path then runs unchanged, its host code on
NumPy arrays and its kernels on the CPU, so the kernels' indexing, barriers and arguments
are checked in CI against the NumPy path.

Kernel calls are checked strictly, as CuPy would need them to be right: the number of
arguments, NumPy scalars of the declared C type (``np.int32`` for ``int``, ``np.float32``
for ``float``; a Python int or a float64 is an error, since CuPy would pass it with another
width), and C-contiguous arrays of the pointed-to type.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpu_kernels.backend import Backend, cuda_include_dir, cuda_source

HERE = Path(__file__).resolve().parent
HEADER = HERE / "flow_cuda_emu.h"

_SIG_RE = re.compile(
    r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+'
    r'(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)', re.S)

_SCALARS = {
    "float": (np.float32, ctypes.c_float),
    "double": (np.float64, ctypes.c_double),
    "int": (np.int32, ctypes.c_int32),
    "unsigned": (np.uint32, ctypes.c_uint32),
    "unsigned int": (np.uint32, ctypes.c_uint32),
    "long long": (np.int64, ctypes.c_int64),
    "long long int": (np.int64, ctypes.c_int64),
    "unsigned long long": (np.uint64, ctypes.c_uint64),
    "int64_t": (np.int64, ctypes.c_int64),
    "unsigned char": (np.uint8, ctypes.c_uint8),
    "unsigned short": (np.uint16, ctypes.c_uint16),
    "short": (np.int16, ctypes.c_int16),
}


def compiler() -> str | None:
    return shutil.which("g++")


@dataclass
class _Param:
    name: str
    base: str
    pointer: bool


def _parse_params(text: str) -> list[_Param]:
    out = []
    for raw in text.split(","):
        raw = " ".join(raw.replace("__restrict__", " ").split())
        if not raw:
            continue
        pointer = "*" in raw
        raw = raw.replace("*", " ")
        words = [w for w in raw.split() if w not in ("const", "volatile")]
        name, base = words[-1], " ".join(words[:-1])
        if base not in _SCALARS and not (pointer and base == "void"):
            raise TypeError(f"emulator: unsupported kernel parameter type {base!r}")
        out.append(_Param(name, base, pointer))
    return out


class EmuKernel:
    def __init__(self, fn, name: str, params: list[_Param]):
        self.fn, self.name, self.params = fn, name, params
        fn.restype = None
        fn.argtypes = [ctypes.c_uint32] * 6 + [
            ctypes.c_void_p if p.pointer else _SCALARS[p.base][1] for p in params]

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        if shared_mem:
            raise AssertionError(f"{self.name}: the kernels use static shared memory only")
        grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
        block = tuple(block) + (1,) * (3 - len(tuple(block)))
        if any(int(g) < 1 for g in grid) or any(int(b) < 1 for b in block):
            raise AssertionError(f"{self.name}: empty launch grid {grid} x {block}")
        if block[0] * block[1] * block[2] > 1024:
            raise AssertionError(f"{self.name}: {block} is more than 1024 threads per block")
        if len(args) != len(self.params):
            raise TypeError(f"{self.name}: {len(args)} arguments for {len(self.params)} parameters")
        cargs = []
        for p, a in zip(self.params, args, strict=False):
            if p.pointer:
                if not isinstance(a, np.ndarray):
                    raise TypeError(f"{self.name}({p.name}): expected an array, got {type(a).__name__}")
                if not a.flags.c_contiguous:
                    raise TypeError(f"{self.name}({p.name}): array is not C-contiguous")
                if p.base != "void" and a.dtype != np.dtype(_SCALARS[p.base][0]):
                    raise TypeError(f"{self.name}({p.name}): {a.dtype} array for a {p.base}*")
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            else:
                want = _SCALARS[p.base][0]
                if not isinstance(a, np.generic) or a.dtype != np.dtype(want):
                    raise TypeError(f"{self.name}({p.name}): pass a numpy {np.dtype(want).name} scalar "
                                    f"for a {p.base}, got {type(a).__name__}")
                cargs.append(a.item())
        self.fn(*[int(g) for g in grid], *[int(b) for b in block], *cargs)


class EmuModule:
    def __init__(self, lib, kernels: dict[str, list[_Param]]):
        self._kernels = {name: EmuKernel(getattr(lib, "emu_" + name), name, params)
                         for name, params in kernels.items()}

    def get_function(self, name: str) -> EmuKernel:
        return self._kernels[name]


_cache: dict[tuple, EmuModule] = {}
_lock = threading.Lock()


def _all_sources() -> str:
    root = Path(cuda_include_dir())
    return "".join(p.read_text() for p in sorted(root.glob("*.cu*")))


def _body(text: str, start: int) -> str:
    """The brace-matched body that follows position ``start``."""
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j + 1]
    return text[i:]


def _preprocess(name: str, defines: dict) -> str:
    """The source after the C preprocessor (kernels made by macros show up)."""
    cmd = [compiler() or "g++", "-E", "-P", "-x", "c++", "-std=c++17", f"-I{cuda_include_dir()}",
           "-DGPULAB_EMU=1", *[f"-D{k}={v}" for k, v in sorted(defines.items())],
           str(Path(cuda_include_dir()) / name)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"emulator: preprocessing {name} failed:\n{res.stderr[-4000:]}")
    return res.stdout


def compile_module(name: str, defines: dict | None = None) -> EmuModule:
    defines = dict(defines or {})
    src = cuda_source(name)
    key_text = src + _all_sources() + HEADER.read_text() + repr(sorted(defines.items()))
    digest = hashlib.sha1(key_text.encode()).hexdigest()[:16]
    key = (name, digest)
    with _lock:
        if key in _cache:
            return _cache[key]
        pre = _preprocess(name, defines)
        kernels = {m.group(1): _parse_params(m.group(2)) for m in _SIG_RE.finditer(pre)}
        syncs = {m.group(1): "__syncthreads" in _body(pre, m.end()) for m in _SIG_RE.finditer(pre)}
        build = Path(tempfile.gettempdir()) / "gpulab-cuda-emu"
        build.mkdir(exist_ok=True)
        so = build / f"{Path(name).stem}-{digest}.so"
        if not so.exists():
            cu = Path(cuda_include_dir()) / name
            lines = [f'#include "{cu}"']
            for kname, params in kernels.items():
                plist = ", ".join(("const void* " if p.pointer and p.base == "void" else
                                   (f"{p.base}* " if p.pointer else f"{p.base} ")) + p.name for p in params)
                names = ", ".join(p.name for p in params)
                lines.append(
                    f'extern "C" void emu_{kname}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, '
                    f'unsigned by, unsigned bz{", " + plist if plist else ""}) {{\n'
                    f"  auto body = [&]() {{ {kname}({names}); }};\n"
                    f"  emu::{'run_grid' if syncs[kname] else 'run_grid_nosync'}(dim3{{gx, gy, gz}}, "
                    f"dim3{{bx, by, bz}}, body);\n}}")
            wrapper = build / f"{Path(name).stem}-{digest}.cpp"
            wrapper.write_text("\n".join(lines) + "\n")
            tmp = so.with_suffix(".so.tmp")
            cmd = [compiler() or "g++", "-std=c++17", "-O1", "-g", "-shared", "-fPIC", "-w",
                   "-include", str(HEADER), f"-I{cuda_include_dir()}", "-DGPULAB_EMU=1"]
            cmd += [f"-D{k}={v}" for k, v in sorted(defines.items())]
            cmd += ["-o", str(tmp), str(wrapper)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode:
                raise RuntimeError(f"emulator build of {name} failed:\n{res.stderr[-4000:]}")
            tmp.replace(so)
        mod = EmuModule(ctypes.CDLL(str(so)), kernels)
        _cache[key] = mod
        return mod


@dataclass(frozen=True)
class EmuBackend(Backend):
    """A "cuda" backend whose kernels run on the CPU (tests only)."""

    name: str = "cuda"
    device_id: int = 0
    xp: object = np

    @property
    def label(self) -> str:
        return "cuda-emulated"

    def activate(self):
        return contextlib.nullcontext()

    def asarray(self, a, dtype=None):
        return np.asarray(a, dtype=dtype)

    def synchronize(self) -> None:
        pass

    def mem_info(self) -> tuple[int, int]:
        return 8 << 30, 16 << 30

    def free_memory_pool(self) -> None:
        pass

    def load_module(self, name: str, *, defines: dict | None = None):
        return compile_module(name, defines)


def emu_backend() -> EmuBackend:
    return EmuBackend()
