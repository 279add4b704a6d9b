"""Every CUDA source compiles with nvcc for sm_80 (A100) and sm_90 (H100/H200).

Runs wherever ``nvcc`` is on PATH (no GPU needed); skipped otherwise.

sm_90, what the project's device runs, is compiled as nvcc compiles by default (cicc's optimiser at -O3).
sm_80 is compiled with cicc at -O0 (session 20: ~1/3 of the CPU; cicc's -O3 was ~90 % of a compile): the
front end, the sm_80 headers (``__CUDA_ARCH__`` 800) and the code generation for sm_80 are the same, only
the optimiser's passes are not run a second time. No source reads ``__CUDA_ARCH__`` itself.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CUDA_DIR = Path(__file__).resolve().parents[2] / "gpu_kernels" / "cuda"
SOURCES = sorted(CUDA_DIR.glob("*.cu"))
NVCC = shutil.which("nvcc")


def test_there_are_sources_to_compile():
    assert any(p.name == "selftest.cu" for p in SOURCES), f"no .cu files in {CUDA_DIR}"


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH (install the CUDA toolkit to run this test)")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source", SOURCES, ids=[p.name for p in SOURCES])
def test_nvcc_compiles(source, arch, tmp_path):
    out = tmp_path / (source.stem + f".{arch}.ptx")
    cmd = [NVCC, "-std=c++17", f"-arch={arch}", "--ptx", "-I", str(CUDA_DIR), str(source), "-o", str(out)]
    if arch != "sm_90":
        cmd += ["-Xcicc", "-O0"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stdout}\n{r.stderr}"
    assert out.stat().st_size > 0
    assert ".entry" in out.read_text(), "the PTX holds no kernel entry point"
