"""Without a GPU: do a CUDA bundle's CUDA libraries load and its NVRTC compile gpulab's kernels?

    BUILD_VENV/bin/python packaging/cuda_bundle_probe.py STAGE/gpulab/_internal [ARCH]
    gpulab -B -S -I -c "from multiprocessing.forkserver import main; import runpy; \
        runpy.run_path('packaging/cuda_bundle_probe.py', run_name='__main__')"     (inside the bundle)

Run with the build venv's Python (it has CuPy and cuda-pathfinder), after `make package
CUDA_EXTRA=cudaNN`; or inside the frozen app itself (package-check does: PyInstaller's
multiprocessing hook runs a `-c` line that starts with that import, which is how the frozen app
runs Python code it was not built with). With the venv's Python it does what the bundle's runtime
hook (pyi_rth_gpulab_cuda.py) does, but with only the bundle as site-packages; inside the bundle,
the runtime hook itself is tested. Either way every library is looked up in the bundle: NVRTC,
cudart, cuBLAS(Lt), cuFFT, cuRAND, cuSOLVER, cuSPARSE, nvJitLink and the CUDA headers; then the
bundled NVRTC compiles every .cu source in the bundle for ARCH (default sm_90) to a cubin. None of
that needs a driver. What it cannot show: kernels running, which needs a GPU host (the frozen
`gpulab info` / About box there name the GPU).
"""

from __future__ import annotations

import pathlib
import site
import sys


def main(argv: list[str]) -> int:
    frozen = getattr(sys, "frozen", False)
    if not argv and not frozen:
        print(__doc__)
        return 2
    internal = str(pathlib.Path(sys._MEIPASS if frozen else argv[0]).resolve())
    rest = argv if frozen else argv[1:]  # the frozen app takes no INTERNAL_DIR: it is sys._MEIPASS
    arch = rest[0] if rest else "sm_90"
    if not frozen:
        site.getsitepackages = lambda prefixes=None: [internal]
        site.ENABLE_USER_SITE = False
    import cupy

    print(f"  CuPy {cupy.__version__} from {cupy.__file__.replace(internal, '_internal')}"
          + (" (inside the frozen app)" if frozen else ""))
    from cuda.pathfinder import find_nvidia_header_directory, load_nvidia_dynamic_lib

    bad = 0
    for lib in ("nvrtc", "cudart", "cublas", "cublasLt", "cufft", "curand", "cusolver", "cusparse", "nvJitLink"):
        try:
            d = load_nvidia_dynamic_lib(lib)
            inside = d.abs_path.startswith(internal)
            bad += not inside
            print(f"  {lib:10s} {'bundle' if inside else 'OUTSIDE the bundle'}: {d.abs_path.replace(internal, '_internal')}")
        except Exception as exc:  # noqa: BLE001 - report and go on
            bad += 1
            print(f"  {lib:10s} NOT FOUND: {type(exc).__name__}: {str(exc)[:200]}")
    hdr = find_nvidia_header_directory("cudart")
    bad += not (hdr and hdr.startswith(internal))
    print(f"  headers    {(hdr or 'NOT FOUND').replace(internal, '_internal')}")

    from cupy.cuda import nvrtc

    cu = pathlib.Path(internal) / "gpu_kernels" / "cuda"
    sources = sorted(cu.glob("*.cu"))
    ok = 0
    for f in sources:
        prog = nvrtc.createProgram(f.read_text(encoding="utf-8"), f.name, [], [])
        try:
            nvrtc.compileProgram(prog, [f"-I{cu}", f"--gpu-architecture={arch}", "-std=c++17"])
            nvrtc.getCUBIN(prog)
            ok += 1
        except Exception as exc:  # noqa: BLE001
            print(f"  {f.name}: {exc}\n{nvrtc.getProgramLog(prog)[:800]}")
    print(f"NVRTC {'.'.join(map(str, nvrtc.getVersion()))} from the bundle: {ok} of {len(sources)} "
          f"gpulab kernels compiled for {arch}")
    return 1 if bad or ok != len(sources) or not sources else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
