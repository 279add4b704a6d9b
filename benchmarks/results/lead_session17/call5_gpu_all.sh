#!/bin/bash
# lead, session 17, call 5 (carry .carry-l16a: the shared-data subset; .carry-lead10: fast-simplification): the GPU
# tests of the tools whose code did not change for several sessions (flow, echo, MVS), on this session's device, and
# the rest of tests/ that a GPU reaches (cuda_emu, ux, packaging), as a regression check of the whole product.
export PYTHONUNBUFFERED=1
L=$OUT/lead5; mkdir -p $L
nvidia-smi -L | tee $L/device.txt; date -u | tee -a $L/device.txt
python3 -c "import cupy, numpy, scipy, skimage, cv2; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'skimage', skimage.__version__, 'cv2', cv2.__version__)" | tee -a $L/device.txt
GPULAB_SHARED_DATA=$PWD/.carry-l16a/data timeout ${T_TESTS:-330} python3 -m pytest -m gpu tests/flow tests/echo tests/mvs tests/cuda_emu tests/ux tests/packaging \
  -q -p no:cacheprovider -o addopts="" -W ignore -rfEs --durations=10 > $L/gpu_tests.txt 2>&1
echo "rc $?"; grep -E "passed|failed|error" $L/gpu_tests.txt | tail -3; grep -E "^(FAILED|ERROR)" $L/gpu_tests.txt | head -20
date -u
