# echo-live, session 10, call 2 (carry .carry-live and .carry-echo): where the tab's extra compute comes from
# (each edit in a new thread and/or after the debounce's idle time, old and new code), and the echo live edit
# through the real tab with the final code (spare host buffers, one-read summary), old/new alternating.
set -u
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/e"
nvidia-smi -L
ln -sfn "$PWD/resources" .carry-echo/old/resources
AB=benchmarks/results/echo_live_session10_ab.py
for spec in new-main:.:: new-thread-idle:.:--thread:0.15 new-main-idle:.::0.15 new-thread:.:--thread: ; do
  IFS=: read -r label root th idle <<< "$spec"
  python3 $AB --root "$root" $th ${idle:+--idle $idle} --label "$label"
done 2>&1 | tee "$OUT/e/ab2.txt"
source .carry-live/setup.sh
for k in 1; do
  python3 .carry-echo/old/benchmarks/live.py --device cuda --data .carry-live/data --mvs-views 0 --tools echo --json "$OUT/e/live2_old$k.json" 2>&1 | grep -v Warn | grep -v propagateSize | sed "s/^/old$k /"
  python3 benchmarks/live.py --device cuda --data .carry-live/data --mvs-views 0 --tools echo --json "$OUT/e/live2_new$k.json" 2>&1 | grep -v Warn | grep -v propagateSize | sed "s/^/new$k /"
done | tee "$OUT/e/live2.txt"
timeout 60 python3 -m pytest -m gpu tests/echo/test_echo_live10.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -5 | tee "$OUT/e/tests2.txt"
