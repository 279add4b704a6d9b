#!/bin/bash
# Lead, session 27, device call 2: where a default 17k / 50k run's time goes today (no library change this session;
# session 13's profile is the last one), with session 23's simplifiers carried (.carry-lead23):
#   bash benchmarks/results/lead_session27/call2.sh
# (a record of the call as run. Its set-up copied lead_check.sh's; step 1 is now lead_check.sh's first step with
# E2E_PROFILE=7 ROUNDS=21, which runs pytest -m gpu after it, so use that instead of a copy of this script)
# 1. mesh_e2e_session10.py, 21 plain rounds, then 7 traced runs per mesh (--profile 7), the labels' SHA-1s;
# 2. the same plain rounds again after the profile (a second look at the machine's spread).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); C=$PWD/.carry-lead23; O=/tmp/call2; mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1
source benchmarks/device_env.sh
device_header "$O/device.txt"
simplifiers "$C"
xz -dc "$C/data/281.off.xz" > /tmp/281.off
M17=$C/data/psb/off/101.off
echo "== 1. default path, profiled [$(( $(date +%s) - T0 )) s]"
timeout 300 python3 benchmarks/mesh_e2e_session10.py "$M17" /tmp/281.off --rounds 21 --profile 7 --top 40 \
  --json "$O/e2e_profile.json" > "$O/e2e_profile.txt" 2>&1
echo "e2e rc=$?"; grep -E "min .* median|same labels" "$O/e2e_profile.txt" | cut -c1-160
echo "== 2. plain again [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 benchmarks/mesh_e2e_session10.py "$M17" /tmp/281.off --rounds 21 --json "$O/e2e2.json" \
  > "$O/e2e2.txt" 2>&1
echo "e2e rc=$?"; grep -E "min .* median" "$O/e2e2.txt" | cut -c1-160
echo "done after $(( $(date +%s) - T0 )) s"; date -u
tar -czf "$OUT/call2.tgz" -C /tmp call2
