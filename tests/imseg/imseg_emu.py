"""Run the imseg CUDA kernels on the CPU, through g++ and ``emu/emu.h``, for the tests.

:func:`emu_backend` returns a :class:`gpu_kernels.backend.Backend` whose ``xp`` is NumPy and
whose ``load_module`` compiles a ``gpu_kernels/cuda/*.cu`` source into a shared library:
every ``extern "C" __global__`` kernel gets a C entry point that runs the grid block by
block, each CUDA thread a host thread (``emu.h``). The pipeline's GPU code path
(``be.is_gpu``) then runs unchanged on NumPy arrays, so CPU CI exercises the kernels and
their launch logic, not only the NumPy reference. Timing means nothing here, and images
must stay small (a thread per CUDA thread).
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpu_kernels.backend import Backend

ROOT = Path(__file__).resolve().parents[2]
CUDA_DIR = ROOT / "gpu_kernels" / "cuda"
EMU_H = Path(__file__).resolve().parent / "emu" / "emu.h"
CXX = shutil.which("g++") or shutil.which("c++")

_KERNEL_RE = re.compile(r'extern\s+"C"\s+__attribute__\s*\(\s*\(\s*used\s*\)\s*\)\s+void\s+(\w+)\s*\(([^)]*)\)')
_lock = threading.Lock()
_cache: dict = {}


def available() -> str:
    """'' when the emulator can run here, else the reason."""
    if CXX is None:
        return "no C++ compiler (g++) on PATH"
    return ""


def _param_types(params: str) -> list[str]:
    out = []
    for p in params.split(","):
        p = p.strip()
        if not p:
            continue
        p = p.replace("__restrict__", "").strip()
        m = re.match(r"^(.*?)(\w+)\s*$", p)
        if not m:
            raise ValueError(f"cannot parse kernel parameter {p!r}")
        out.append(" ".join(m.group(1).split()))
    return out


def _build(name: str, defines: dict | None) -> tuple[ctypes.CDLL, dict]:
    defs = [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    h = hashlib.sha256()
    for f in sorted(CUDA_DIR.glob("imseg_*")) + [EMU_H]:
        h.update(f.read_bytes())
    h.update(name.encode())
    h.update(" ".join(defs).encode())
    key = h.hexdigest()[:20]
    outdir = Path(tempfile.gettempdir()) / "gpulab-imseg-emu"
    outdir.mkdir(exist_ok=True)
    so = outdir / f"{Path(name).stem}-{key}.so"
    common = [CXX, "-std=c++20", "-pthread", "-w", "-include", str(EMU_H), "-I", str(CUDA_DIR), *defs]
    pre = subprocess.run([*common, "-E", "-P", "-x", "c++", str(CUDA_DIR / name)], capture_output=True, text=True)
    if pre.returncode:
        raise RuntimeError(f"emulator preprocessing of {name} failed:\n{pre.stderr}")
    kernels = {m.group(1): _param_types(m.group(2)) for m in _KERNEL_RE.finditer(pre.stdout)}
    if not so.exists():
        lines = [f'#include "{CUDA_DIR / name}"']
        for kname, types in kernels.items():
            args = ", ".join(f"*({t}*)a[{i}]" for i, t in enumerate(types))
            lines.append(
                f'extern "C" void emu_{kname}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, '
                f"unsigned bz, void** a) {{ emu::launch(dim3{{gx, gy, gz}}, dim3{{bx, by, bz}}, [&]() {{ {kname}({args}); }}); }}")
        with tempfile.TemporaryDirectory() as td:
            src = Path(td) / "wrap.cpp"
            src.write_text("\n".join(lines) + "\n")
            tmp_so = Path(td) / "mod.so"
            r = subprocess.run([*common, "-O1", "-ffp-contract=off", "-shared", "-fPIC", str(src), "-o", str(tmp_so)],
                               capture_output=True, text=True)
            if r.returncode:
                raise RuntimeError(f"emulator build of {name} failed:\n{r.stderr[-4000:]}")
            part = so.with_suffix(f".{os.getpid()}.part")
            shutil.copy(tmp_so, part)
            os.replace(part, so)
    return ctypes.CDLL(str(so)), kernels


class EmuFunction:
    def __init__(self, lib, name: str, types: list[str]):
        self.fn = getattr(lib, f"emu_{name}")
        self.fn.restype = None
        self.fn.argtypes = [ctypes.c_uint] * 6 + [ctypes.POINTER(ctypes.c_void_p)]
        self.name = name
        self.types = types

    def __call__(self, grid, block, args, shared_mem=0):
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        block = tuple(int(b) for b in block) + (1,) * (3 - len(block))
        if len(args) != len(self.types):
            raise TypeError(f"{self.name} takes {len(self.types)} arguments, got {len(args)}")
        keep = []
        ptrs = (ctypes.c_void_p * len(args))()
        for i, (a, t) in enumerate(zip(args, self.types, strict=True)):
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise TypeError(f"{self.name}: argument {i} is not contiguous")
                slot = ctypes.c_void_p(a.ctypes.data)
                keep.append(slot)
                ptrs[i] = ctypes.addressof(slot)
            elif isinstance(a, np.generic):
                if "*" in t and a.dtype != np.uint64:
                    raise TypeError(f"{self.name}: argument {i} ({t}) needs an array or NULL")
                if "*" not in t:
                    want = {"int": 4, "unsigned int": 4, "long long": 8, "float": 4, "double": 8}.get(t)
                    if want is not None and a.dtype.itemsize != want:
                        raise TypeError(f"{self.name}: argument {i} ({t}) got a {a.dtype} scalar")
                buf = np.array(a)
                keep.append(buf)
                ptrs[i] = buf.ctypes.data
            else:
                raise TypeError(f"{self.name}: argument {i} must be a NumPy array or scalar, got {type(a).__name__}")
        self.fn(*grid, *block, ptrs)


class EmuModule:
    def __init__(self, name: str, defines: dict | None):
        self.lib, self.kernels = _build(name, defines)

    def get_function(self, name: str) -> EmuFunction:
        if name not in self.kernels:
            raise AttributeError(f"no kernel {name!r}")
        return EmuFunction(self.lib, name, self.kernels[name])


@dataclass(frozen=True)
class EmuBackend(Backend):
    """A 'cuda' backend on NumPy arrays whose kernels run in the host emulator."""

    def activate(self):
        return contextlib.nullcontext()

    def synchronize(self) -> None:
        return None

    def mem_info(self) -> tuple[int, int]:
        return 1 << 34, 1 << 34

    def load_module(self, name: str, *, defines=None, options=()):
        key = (name, tuple(sorted((defines or {}).items())))
        with _lock:
            mod = _cache.get(key)
            if mod is None:
                mod = _cache[key] = EmuModule(name, defines)
        return mod


def emu_backend() -> EmuBackend:
    return EmuBackend("cuda", 99, np)
