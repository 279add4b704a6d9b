#!/bin/bash
# A lead's device check (session 25: the one runner that sessions 19-24's call scripts, copies of each other, were):
#   bash benchmarks/lead_check.sh NAME
# on the device's copy of the tree, from the repo root, with the carry of session 23's simplifiers, xdist and the two
# timing meshes (CARRY, default .carry-s32 since session 32, .carry-lead23 before: data/psb/off/101.off, 17k faces, and
# data/281.off.xz, 50k; .carry-s32 adds pymeshlab's io plugins and nibabel's wheel, see step 5):
#   1. the default path end to end from the file (mesh_e2e_session10.py, ROUNDS rounds, default 31: the first rounds
#      are cold, the median is warm); the labels' SHA-1s are printed (490d8213e468 / af791ae7f06e since session 20);
#      with E2E_PROFILE=N (session 27) N traced runs per mesh after them (--profile N: where the time goes);
#   2. with K_SPEED set (an integer k) and OLD_MODEL (session 20's model, .npz): mesh_k_speed_session25.py at that k,
#      K_ROUNDS rounds (default 7) on the same two meshes, arms s20 / s25 / s25-numpy (and s25-five with FIVE_MODEL,
#      session 25's model on the five starts, since session 26); on a fresh machine OLD_MODEL is commit 954c238's
#      learned_model.NPZ_BASE64, base64-decoded (SHA-1 58288ec3...);
#   3. with EXTRA set (session 29): that bash command line, T_EXTRA seconds at most (default 200), with O (this call's
#      folder: what it writes there comes back), M17 and M50 (the two timing meshes) exported, its output in extra.txt
#      (a one-off measurement no longer needs its own copy of this set-up, as sessions 27-28's call scripts were);
#   4. pytest -m gpu on TESTS (default: every test folder), T_TESTS seconds at most (default 400);
#   5. with ALL_TESTS set (session 30): pytest on those paths WITHOUT the gpu mark's filter, the non-gpu tests included
#      (session 30 found two defects that way: a CPU-prepared mesh segmented with device=None, and the progress bar's
#      rounding under this machine's Python 3.12), -n ALL_JOBS (default 12), T_ALL seconds at most (default 300); the
#      repo on PYTHONPATH (the CLI's subprocesses import app) and, where the folder NIB (default: CARRY) holds a nibabel
#      wheel, nibabel (gpulab's dependency, absent here). Since session 31 the tests that need SimpleITK, Dask or
#      pytest-qt skip there with the reason, and since session 32 those that need gpulab installed (marker
#      `installed`). With a CARRY whose pml.tar.xz carries pymeshlab's io plugins (mesh_round_carry.sh with
#      PML_PLUGINS="libfilter_meshing libio_base libio_3mf libio_collada libio_x3d", 14.2 MB; session 32's .carry-s32
#      = .carry-lead23 with that pml.tar.xz and nibabel's wheel) the 24 tests that compare with pymeshlab's readers run
#      there too: check32b, 2790 passed and only the 2 of gpulab's metadata failed, which now skip. Session 31 found
#      two defects this way: the emulator's stream cached for the real GPU, and a Ctrl+C as 16 APSP workers start.
# Everything goes to /tmp/NAME and comes back as $OUT/NAME.tgz (log.txt, device.txt, e2e.txt/json, k_speed.txt/json,
# extra.txt, gpu_tests.txt, all_tests.txt).
set -o pipefail
export PYTHONUNBUFFERED=1
NAME=${1:?usage: bash benchmarks/lead_check.sh NAME}
T0=$(date +%s); C=$PWD/${CARRY:-.carry-s32}; O=/tmp/$NAME; mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1
source benchmarks/device_env.sh
device_header "$O/device.txt"
simplifiers "$C"
xz -dc "$C/data/281.off.xz" > /tmp/281.off
M17=$C/data/psb/off/101.off
echo "== 1. default path [$(( $(date +%s) - T0 )) s]"
timeout 150 python3 benchmarks/mesh_e2e_session10.py "$M17" /tmp/281.off --rounds "${ROUNDS:-31}" ${E2E_PROFILE:+--profile "$E2E_PROFILE"} --json "$O/e2e.json" \
  > "$O/e2e.txt" 2>&1
echo "e2e rc=$?"; grep -E "min .* median|same labels" "$O/e2e.txt" | cut -c1-160
if [ -n "$K_SPEED" ]; then
  echo "== 2. integer k = $K_SPEED [$(( $(date +%s) - T0 )) s]"
  timeout "${T_K:-200}" python3 benchmarks/mesh_k_speed_session25.py "$M17" /tmp/281.off --k "$K_SPEED" \
    --old-model "${OLD_MODEL:?OLD_MODEL, the session 20 model}" ${FIVE_MODEL:+--five-model "$FIVE_MODEL"} \
    --device gpu --rounds "${K_ROUNDS:-7}" \
    --json "$O/k_speed.json" > "$O/k_speed.txt" 2>&1
  echo "k-speed rc=$?"; grep k-speed25 "$O/k_speed.txt" | cut -c1-170
fi
if [ -n "$EXTRA" ]; then
  echo "== 3. extra: $EXTRA [$(( $(date +%s) - T0 )) s]"
  O="$O" M17="$M17" M50=/tmp/281.off timeout "${T_EXTRA:-200}" bash -c "$EXTRA" > "$O/extra.txt" 2>&1
  echo "extra rc=$?"; tail -5 "$O/extra.txt" | cut -c1-200
fi
echo "== 4. pytest -m gpu [$(( $(date +%s) - T0 )) s]"
T_TESTS=${T_TESTS:-400} gpu_tests "$O/gpu_tests.txt" ${TESTS:-tests}
if [ -n "$ALL_TESTS" ]; then
  echo "== 5. pytest, non-gpu tests included: $ALL_TESTS [$(( $(date +%s) - T0 )) s]"
  NIB=${NIB:-$C}
  if ls "$NIB"/nibabel-*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-nib "$NIB"/nibabel-*.whl 2>&1 \
      | grep -v WARN | tail -1
  fi
  # shellcheck disable=SC2086
  PYTHONPATH="$PWD:/tmp/site-nib${PYTHONPATH:+:$PYTHONPATH}" timeout "${T_ALL:-300}" python3 -m pytest -q \
    -p no:cacheprovider -n "${ALL_JOBS:-12}" -rfE --tb=short $ALL_TESTS > "$O/all_tests.txt" 2>&1
  echo "pytest rc=$?"; grep -E "^(FAILED|ERROR)" "$O/all_tests.txt" | cut -c1-160 | head -40; tail -1 "$O/all_tests.txt"
fi
echo "done after $(( $(date +%s) - T0 )) s"; date -u
tar -czf "$OUT/$NAME.tgz" -C /tmp "$NAME"
