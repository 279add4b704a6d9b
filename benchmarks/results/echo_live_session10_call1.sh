# echo-live, session 10, call 1 (carry .carry-live and .carry-echo): the host-memory micro-benchmark, the α
# edit's compute old/new (the session's code with this change's four files at HEAD, unpacked in .carry-echo/old,
# against this tree with each host allocation), the echo live edit through the real tab old/new/old/new, and the
# echo GPU tests. Each python process is one code tree; all on one card in one call.
set -u
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/e"
nvidia-smi -L
ln -sfn "$PWD/resources" .carry-echo/old/resources
AB=benchmarks/results/echo_live_session10_ab.py
python3 $AB --micro 2>&1 | tee "$OUT/e/micro.txt"
for spec in old:.carry-echo/old: numpy:.:numpy populate:.:populate pinned:.:pinned old2:.carry-echo/old: populate2:.:populate; do
  IFS=: read -r label root ha <<< "$spec"
  python3 $AB --root "$root" ${ha:+--host-alloc $ha} --label "$label"
done 2>&1 | tee "$OUT/e/ab.txt"
source .carry-live/setup.sh
for k in 1 2; do
  python3 .carry-echo/old/benchmarks/live.py --device cuda --data .carry-live/data --mvs-views 0 --tools echo --json "$OUT/e/live_old$k.json" 2>&1 | grep -v Warn | sed "s/^/old$k /"
  python3 benchmarks/live.py --device cuda --data .carry-live/data --mvs-views 0 --tools echo --json "$OUT/e/live_new$k.json" 2>&1 | grep -v Warn | sed "s/^/new$k /"
done | tee "$OUT/e/live.txt"
GPULAB_SHARED_DATA=$PWD/.carry-live/data timeout 200 python3 -m pytest -m gpu tests/echo tests/framework/test_live_echo.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -25 | tee "$OUT/e/tests.txt"
