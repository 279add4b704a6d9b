#!/bin/bash
# mesh-quality helper, session 9, device call 4 (H100): the auto_layout option's GPU tests on the final code
# (library keyword, autok.relayout, the tool's staged path and live edit) and the thin-part tests. No carry.
set -o pipefail
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; } | tee $OUT/device.txt
timeout 200 python3 -m pytest -m gpu tests/mesh/test_quality9_layout.py tests/mesh/test_quality9_keyword.py \
  tests/mesh/test_quality9_tool.py tests/mesh/test_mesh_thin_parts.py -q -p no:cacheprovider -o addopts="" -W ignore 2>&1 | tail -8
date -u
