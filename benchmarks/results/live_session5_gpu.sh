#!/bin/bash
# The live helper's device call (session 5): GPU tests of the live paint + echo stages, the paint
# micro-benchmark and live.py through the real tabs. Usage: bash benchmarks/results/live_session5_gpu.sh TAG [TOOLS]
set -o pipefail
export PYTHONUNBUFFERED=1
TAG=${1:-mid}
TOOLS=${2:-flow,mesh-seg,echo}
D=$OUT/live
mkdir -p $D
source .carry-live/setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $D/gpu_$TAG.txt
python3 -m pytest -m gpu tests/framework/test_live_colorwheel.py tests/framework/test_live_paint.py \
    tests/framework/test_live_echo.py tests/echo/test_echo_gpu.py -k "not test_echo_gpu or prepar" \
    -q -p no:cacheprovider -o addopts="" -rs 2>&1 | tail -15 | tee $D/pytest_gpu_$TAG.txt
python3 -m pytest tests/framework/test_live_colorwheel.py tests/framework/test_live_echo.py tests/framework/test_stages.py \
    -q -p no:cacheprovider -o addopts="" 2>&1 | tail -4 | tee $D/pytest_cpu_$TAG.txt
python3 benchmarks/live_paint.py --device cuda --data .carry-live/data --json $D/paint_$TAG.json 2>&1 | tail -30
python3 benchmarks/live.py --device cuda --data .carry-live/data --mvs-views 0 --tools $TOOLS \
    --json $D/live_$TAG.json 2>&1 | tee $D/live_$TAG.log
if [ "$TAG" = "final" ]; then
  # the mesh k edit again: once through the stage cache without Qt (same process kind, same machine),
  # once more through the tab (it sits near its limit)
  python3 benchmarks/live.py --device cuda --data .carry-live/data --tools mesh-seg --no-tabs \
      --json $D/live_final_mesh_stages.json 2>&1 | tail -3 | tee $D/live_final_mesh_stages.log
  python3 benchmarks/live.py --device cuda --data .carry-live/data --mvs-views 0 --tools mesh-seg,flow,imseg \
      --json $D/live_final_rerun.json 2>&1 | grep -v propagateSize | tee $D/live_final_rerun.log
fi
