#!/bin/bash
# Lead, session 28, device call 2: memo_speed.py (MEMO_FIXED_BATCHES off / on, an integer k and k = "auto" from the
# file, 17k and 50k) and pytest -m gpu on the mesh memo/prefetch tests. carry: .carry-lead23 (lead_check.sh's).
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/.carry-lead23; O=${OUT:-/tmp/out}/call2; mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1
source benchmarks/device_env.sh
device_header "$O/device.txt"
simplifiers "$C"
xz -dc "$C/data/281.off.xz" > /tmp/281.off
echo "== speed [$(( $(date +%s) - T0 )) s]"
timeout 200 python3 benchmarks/results/lead_session28/memo_speed.py "$C/data/psb/off/101.off" /tmp/281.off --k 6 \
  --rounds "${ROUNDS:-13}" --device cuda 2>&1 | grep -v Warn
echo "== pytest -m gpu [$(( $(date +%s) - T0 )) s]"
T_TESTS=${T_TESTS:-150} gpu_tests "$O/gpu_tests.txt" tests/mesh/test_quality7_batches.py \
  tests/mesh/test_prefetch_k_starts_session22.py tests/mesh/test_prefetch_cancel_session23.py tests/mesh/test_live18_settle.py \
  tests/mesh/test_live_speed_early.py
echo "done after $(( $(date +%s) - T0 )) s"; date -u
