# imseg-speed4 s15, device call 3 (from the repo root; carry .carry-imseg-speed4 = the 20 BSDS jpgs):
# the judged A/B of benchmarks/imseg_speed15.py, the rule's decision applied to the device copy's
# contours.py defaults, then pytest -m gpu tests/imseg on exactly that code.
set -u
mkdir -p "$OUT/imseg-speed4"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$OUT/imseg-speed4/gpu.txt" 2>&1
python benchmarks/imseg_speed15.py "$OUT/imseg-speed4" .carry-imseg-speed4/bsds 60 2>&1 | tee "$OUT/imseg-speed4/bench_log.txt"
python - <<'PY'
import json, os, re
d = json.load(open(os.path.join(os.environ["OUT"], "imseg-speed4", "decision.json")))["decision"]
p = "gpu_kernels/imseg/contours.py"
s = open(p).read()
s = re.sub(r"^EARLY_GRAPH = \w+$", f"EARLY_GRAPH = {d['early']}", s, flags=re.M)
s = re.sub(r"^SMALL_TABLE = \w+$", f"SMALL_TABLE = {d['small']}", s, flags=re.M)
open(p, "w").write(s)
print("defaults set:", d)
PY
grep -n "^EARLY_GRAPH\|^SMALL_TABLE" gpu_kernels/imseg/contours.py | tee -a "$OUT/imseg-speed4/bench_log.txt"
timeout 300 python -m pytest -m gpu tests/imseg -q -p no:cacheprovider 2>&1 | tail -15 | tee "$OUT/imseg-speed4/pytest.txt"
