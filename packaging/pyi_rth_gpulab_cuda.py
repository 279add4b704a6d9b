# PyInstaller runtime hook (gpulab.spec, CUDA bundles): CuPy loads the CUDA libraries (NVRTC,
# cuBLAS, cuFFT ...) through cuda-pathfinder, which looks for nvidia/<name>/lib under
# site.getsitepackages(). In the bundle the nvidia.* hooks put them under sys._MEIPASS
# (gpulab/_internal/nvidia/...), which is not a site-packages folder: name it first.
import os
import site
import sys

_base = getattr(sys, "_MEIPASS", None)
if _base and os.path.isdir(os.path.join(_base, "nvidia")):
    _getsitepackages = site.getsitepackages

    def _gpulab_getsitepackages(prefixes=None):
        return [_base, *_getsitepackages(prefixes)]

    site.getsitepackages = _gpulab_getsitepackages
